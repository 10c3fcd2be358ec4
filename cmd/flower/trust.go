package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/flowerhq/flower/console"
	"github.com/flowerhq/flower/levers"
	"github.com/flowerhq/flower/relay"
	"github.com/flowerhq/flower/trust"
	"github.com/flowerhq/flower/workbench"
)

// trustCommand is flower trust: the person trusts a workspace's files that
// can run commands or set the harness's environment, as they are now, and
// adopts the runs and notes in its .flower (DESIGN.md «Trust store»).
func trustCommand(p proc) *cli.Command {
	return &cli.Command{
		Name:      "trust",
		Usage:     "trust a workspace's settings, hooks and MCP servers as they are now, and adopt its .flower runs",
		UsageText: "flower trust [--show | --revoke] [DIR]",
		Description: `An unattended run (run, continue, rerun, the Agent SDK relay, a worker's
generation) refuses a workspace whose files can run commands or set the
harness's environment (.claude/settings.json, .claude/settings.local.json,
.mcp.json, and the agents, skills and commands under .claude/) until you
trust them, as direnv allow does for an .envrc. A file that changes
afterwards is untrusted again. flower trust also adopts the runs, handoff
and task files in DIR/.flower that flower did not write on this machine
(a clone's, another HOME's): continue and rerun then pick them up.

The trust lives outside the workspace, in $XDG_STATE_HOME/flower (else
~/.local/state/flower).

Examples:
   flower trust --show          # what the current directory would run
   flower trust                 # trust it as it is now
   flower trust --revoke ~/src/x`,
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "show", Usage: "list what would be trusted and what it can do; change nothing"},
			&cli.BoolFlag{Name: "revoke", Usage: "no longer trust the workspace's files"},
		},
		Action: func(c *cli.Context) error { return trustAction(c, p) },
	}
}

func trustAction(c *cli.Context, p proc) error {
	if c.NArg() > 1 {
		return usagef("flower trust takes one directory, got %d", c.NArg())
	}
	if c.Bool("show") && c.Bool("revoke") {
		return usagef("--show and --revoke do not go together")
	}
	dir := c.Args().First()
	if dir == "" {
		dir = "."
	}
	ws, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	if fi, err := os.Stat(ws); err != nil || !fi.IsDir() {
		return usagef("workspace %s is not a directory", console.Escape(ws))
	}
	store, err := trust.Open(p.env)
	if err != nil {
		return err
	}
	if c.Bool("revoke") {
		if err := store.Revoke(ws); err != nil {
			return err
		}
		fmt.Fprintf(p.stdout, "flower no longer trusts the settings of %s (receipts of its runs are kept)\n", console.Escape(ws))
		return nil
	}
	files, err := trust.Scan(ws)
	if err != nil {
		return err
	}
	untrusted := store.Trusted(ws, files)
	adopt := unadopted(store, ws)
	showTrust(p.stdout, ws, files, untrusted, adopt)
	fmt.Fprintln(p.stdout, keyLine(p.env))
	fmt.Fprintln(p.stdout, codexKeyLine)
	fmt.Fprintln(p.stdout, geminiKeyLine)
	if c.Bool("show") {
		return nil
	}
	if err := store.Trust(ws, files); err != nil {
		return err
	}
	for _, a := range adopt {
		if err := store.Record(a.what, a.path, a.data); err != nil {
			return err
		}
	}
	fmt.Fprintf(p.stdout, "trusted: %d file(s) that can run commands or set the environment, %d run(s) and notes file(s) adopted (%s)\n",
		len(files), len(adopt), console.Escape(store.Path()))
	return nil
}

// adoption is a run dir or notes file of the workbench with no receipt.
type adoption struct {
	what, path string
	data       []byte // nil for a run dir
}

// unadopted lists the run dirs and notes files in ws's workbench that the
// store holds no receipt of (a file whose version has no receipt but whose
// path has one is the person's edit, and needs none).
func unadopted(store *trust.Store, ws string) []adoption {
	wbDir := workbench.DirOf(ws)
	var out []adoption
	for _, d := range workbench.RunDirs(wbDir) {
		if store.Check(d, nil) == trust.Unknown {
			out = append(out, adoption{what: "run dir", path: d})
		}
	}
	notes := workbench.NotesDir(wbDir)
	entries, err := os.ReadDir(notes)
	if err != nil {
		return out
	}
	for _, e := range entries {
		what := noteKind(e.Name())
		if what == "" || !e.Type().IsRegular() {
			continue
		}
		path := filepath.Join(notes, e.Name())
		data, err := workbench.ReadNote(path, workbench.MaxTask, "a notes file")
		if err != nil || store.Check(path, data) != trust.Unknown {
			continue
		}
		out = append(out, adoption{what: what, path: path, data: data})
	}
	return out
}

// noteKind names a notes file by its name's prefix ("" for another file).
func noteKind(name string) string {
	switch {
	case !strings.HasSuffix(name, ".md"):
		return ""
	case strings.HasPrefix(name, "交接-"):
		return "handoff file"
	case strings.HasPrefix(name, "任务-"):
		return "task file"
	}
	return ""
}

// showTrust lists what flower trust would trust and adopt, and why it
// matters: what each file can do, with the commands it runs (masked).
func showTrust(w io.Writer, ws string, files, untrusted []trust.File, adopt []adoption) {
	bad := map[string]bool{}
	for _, f := range untrusted {
		bad[f.Rel] = true
	}
	if len(files) == 0 {
		fmt.Fprintf(w, "%s has no file that can run commands or set the harness's environment (%s, or files under %s): it needs no trust\n",
			console.Escape(ws), strings.Join(trust.WorkspaceFiles, ", "), strings.Join(trust.DefinitionDirs, ", "))
	}
	for _, f := range files {
		state := "trusted"
		if bad[f.Rel] {
			state = "NOT trusted as it is now"
		}
		fmt.Fprintf(w, "%s  sha256 %s…  %s\n", console.Escape(f.Rel), f.SHA256[:12], state)
		for _, r := range f.Risks {
			fmt.Fprintf(w, "    can: %s\n", console.Escape(r))
		}
		for _, cmd := range f.Commands {
			fmt.Fprintf(w, "    runs: %s\n", console.Escape(cmd))
		}
	}
	for _, a := range adopt {
		fmt.Fprintf(w, "%s %s: no receipt (not written by flower on this machine); trusting adopts it\n", a.what, console.Escape(a.path))
	}
}

// keyLine says plainly whether the model's tools under flower can read the
// API key, for a child started from env (DESIGN.md «Held harness»).
func keyLine(env []string) string {
	if _, on, why := levers.Scrub(env); !on {
		return "the model's tools CAN read the API key (Claude Code): " + why + "; with bubblewrap and socat installed (apt-get install bubblewrap socat), flower starts the harness with its scrub"
	}
	return "the model's tools cannot read the API key (Claude Code): the harness's scrub runs them under bubblewrap"
}

// codexKeyLine is keyLine for Codex, whose thread flower opens with the
// model's keys left out of its commands' environment.
const codexKeyLine = "the model's commands cannot read the model's keys (Codex): flower leaves the providers' env_key, OPENAI_API_KEY and CODEX_API_KEY out of their environment"

// geminiKeyLine is keyLine for the Gemini CLI, whose commands flower's
// Gemini home runs with the CLI's redaction on.
const geminiKeyLine = "the model's commands cannot read the model's keys (Gemini): flower turns the CLI's environment variable redaction on, with GEMINI_API_KEY and GOOGLE_API_KEY blocked"

// gateWorkspace opens the person's trust store and, for an unattended run,
// passes the workspace through h's gate (DESIGN.md «Trust store»): it
// returns the store and the harness arguments to run with (the person's,
// after the ones that leave the workspace's settings out, when skip and
// the workspace is untrusted, which is said on stderr). An untrusted
// workspace is refused as a usage error (exit 2). A nil h (an interactive
// run, which relies on the harness's own trust dialog, or a relay whose
// application starts the harness closed) is not gated. admit, for a run that passed
// with the workspace's files read, checks them again before each later
// harness start (supervisor.Options.Admit, trust.Recheck); nil when the
// harness starts closed to them, or decides itself.
func gateWorkspace(p proc, ws string, skip bool, h *trust.Harness) (store *trust.Store, args []string, admit func() error, err error) {
	store, storeErr := trust.Open(p.env)
	switch {
	case errors.Is(storeErr, trust.ErrNoStore):
		// No HOME: nothing is trusted, and nothing gets a receipt.
		fmt.Fprintf(p.stderr, "flower: %v: no workspace settings are trusted and nothing flower writes gets a receipt\n", storeErr)
	case storeErr != nil:
		return nil, nil, nil, usageError{storeErr}
	}
	if h == nil {
		return store, p.harnessArgs, nil, nil
	}
	extra, note, err := h.Gate(store, storeErr, ws, skip)
	var ue *trust.UntrustedError
	switch {
	case errors.As(err, &ue):
		return nil, nil, nil, usageError{err}
	case err != nil:
		return nil, nil, nil, err
	}
	if note != "" {
		fmt.Fprintf(p.stderr, "flower: %s\n", console.Escape(note))
	}
	if !skip {
		admit = func() error { return h.Recheck(store, ws) }
	}
	return store, append(append([]string(nil), extra...), p.harnessArgs...), admit, nil
}

// envSkipWorkspace is the relay's --skip-workspace-settings.
const envSkipWorkspace = "FLOWER_SKIP_WORKSPACE_SETTINGS"

// relayLeavesWorkspaceOut: the application's own arguments already load
// neither the project's nor the local settings, and only the MCP servers
// it gives (the Agent SDK's settingSources and strictMcpConfig).
func relayLeavesWorkspaceOut(args []string) bool {
	src, ok := relay.Value(args, "--setting-sources")
	if !ok || strings.Contains(src, "project") || strings.Contains(src, "local") {
		return false
	}
	return slices.Contains(args, "--strict-mcp-config")
}
