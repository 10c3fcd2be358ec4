package trust

import (
	"errors"
	"fmt"
	"strings"
)

// SkipFlag is the flag of the behaviour that is not the default: run with
// the workspace's setting sources left out instead of refusing.
const SkipFlag = "--skip-workspace-settings"

// SkipArgs are the harness arguments that leave the workspace's files out:
// only the user's settings are loaded (not the project's or the local
// ones, with their agents, skills and commands), and only MCP servers
// given with --mcp-config start (not .mcp.json's).
var SkipArgs = []string{"--setting-sources", "user", "--strict-mcp-config"}

// ErrUntrusted is wrapped by an *UntrustedError.
var ErrUntrusted = errors.New("untrusted workspace")

// UntrustedError refuses an unattended run in a workspace whose files can
// run commands or set the harness's environment and that the person has
// not trusted as they are now (DESIGN.md «Trust store»).
type UntrustedError struct {
	Workspace string
	Files     []File // the untrusted ones
	// Why is set when the store itself could not be read.
	Why string
}

// Error is one line: the files, what they can do, and what to run.
func (e *UntrustedError) Error() string {
	var parts []string
	for _, f := range e.Files {
		parts = append(parts, fmt.Sprintf("%s (%s)", f.Rel, strings.Join(f.Risks, "; ")))
	}
	why := ""
	if e.Why != "" {
		why = " (" + e.Why + ")"
	}
	return fmt.Sprintf("workspace %s is not trusted%s: %s can run commands or set the harness's environment, and nothing was started; see what they do with `flower trust --show %s`, then trust them with `flower trust %s`, or run with %s to leave them out",
		e.Workspace, why, strings.Join(parts, ", "), e.Workspace, e.Workspace, SkipFlag)
}

// Unwrap makes errors.Is(err, ErrUntrusted) true.
func (e *UntrustedError) Unwrap() error { return ErrUntrusted }

// Gate decides how an unattended harness starts in workspace ws: the one
// check run, continue, rerun, the relay and a worker's generation make
// before anything starts (DESIGN.md «Trust store»). A workspace with no
// file that can run a command or set the environment, or one the person
// trusted as its files are now, gives nothing to add. Otherwise, with skip,
// it gives SkipArgs and a line to say; without, an *UntrustedError. With
// skip, a workspace with no such file gets SkipArgs too, with no line: what
// the harness reads is decided by how it starts, not by what was there. A nil
// store (none could be opened; storeErr says why) trusts nothing.
func Gate(s *Store, storeErr error, ws string, skip bool) (args []string, note string, err error) {
	return ClaudeCode.Gate(s, storeErr, ws, skip)
}

// Harness is what the gate knows of a harness: which of the scanned files
// it reads, and how flower starts it without them.
type Harness struct {
	// Reads keeps the scanned files (by Rel) this harness reads; nil keeps
	// them all.
	Reads func(rel string) bool
	// SkipArgs start it with the workspace's files left out; nil where no
	// argument can (then what loads is the harness's own decision).
	SkipArgs []string
	// SkipSays ends the line said when it runs with SkipFlag.
	SkipSays string
	// TrustArgs open the workspace to a harness that keeps an unknown one
	// closed by itself (the Gemini CLI's --skip-trust): given where the
	// gate passes it as it is (its files trusted; or none, without
	// SkipFlag).
	TrustArgs []string
}

// ClaudeCode reads the files of the scan that are not Codex's, and is
// started without them by SkipArgs.
var ClaudeCode = Harness{Reads: func(rel string) bool { return !CodexOnly(rel) && !GeminiOnly(rel) },
	SkipArgs: SkipArgs, SkipSays: "only your user settings, and only MCP servers given with --mcp-config"}

// Codex reads the .codex/ and .agents/ folders of the scan and the
// AGENTS.override.md files. Codex loads a project's .codex/ config only
// where the person's own Codex config trusts the project, and no -c
// setting turns that off (measured on 0.171.0); flower grants Codex no
// trust (package codexrpc, ThreadSandbox). Its skills and overrides it
// loads either way.
var Codex = Harness{
	Reads:    CodexOnly,
	SkipSays: "flower grants Codex no trust of its own: Codex loads a .codex/ config only where your Codex config trusts this project, and skills and AGENTS.override.md always",
}

// Gemini reads the .gemini/ folders of the scan and the .env files. Run
// headless in a folder it was not told to trust, the Gemini CLI keeps the
// folder closed itself (no workspace settings, .env, project hooks,
// agents or MCP servers, and no approval mode but its default; measured
// on 0.61.0): so the gate opens a workspace it passes with --skip-trust,
// and with SkipFlag leaves it closed.
var Gemini = Harness{
	Reads:     GeminiOnly,
	TrustArgs: []string{"--skip-trust"},
	SkipSays:  "the Gemini CLI keeps the folder closed: no workspace settings, .env, project hooks, agents or MCP servers, and tools that ask for approval are refused",
}

// scan is Scan, kept to the files h reads.
func (h Harness) scan(ws string) ([]File, error) {
	files, err := Scan(ws)
	if err != nil || h.Reads == nil {
		return files, err
	}
	var out []File
	for _, f := range files {
		if h.Reads(f.Rel) {
			out = append(out, f)
		}
	}
	return out, nil
}

// Gate is the package's Gate for harness h.
func (h Harness) Gate(s *Store, storeErr error, ws string, skip bool) (args []string, note string, err error) {
	files, err := h.scan(ws)
	if err != nil {
		return nil, "", fmt.Errorf("workspace %s: %w", ws, err)
	}
	if len(files) == 0 {
		if skip {
			// Nothing to leave out now, but a file a repository script
			// writes mid-run would be read: the harness is started so
			// that it reads none.
			return h.SkipArgs, "", nil
		}
		return h.TrustArgs, "", nil
	}
	untrusted := files
	if s != nil {
		untrusted = s.Trusted(ws, files)
	}
	if len(untrusted) == 0 {
		return h.TrustArgs, "", nil
	}
	if !skip {
		e := &UntrustedError{Workspace: ws, Files: untrusted}
		if storeErr != nil {
			e.Why = storeErr.Error()
		}
		return nil, "", e
	}
	var rels []string
	for _, f := range untrusted {
		rels = append(rels, f.Rel)
	}
	if h.SkipArgs == nil {
		return nil, fmt.Sprintf("workspace %s is not trusted: the run goes on with nothing added for %s (%s: %s)",
			ws, strings.Join(rels, ", "), SkipFlag, h.SkipSays), nil
	}
	return h.SkipArgs, fmt.Sprintf("workspace %s is not trusted: the harness runs without %s (%s: %s)",
		ws, strings.Join(rels, ", "), SkipFlag, h.SkipSays), nil
}

// Recheck is the gate again, under a run that passed it without skip:
// before each harness start after the first, so a file a repository
// script wrote or changed mid-run (a new .claude/settings.json with a
// hook, a parent's .mcp.json) is never loaded by a successor. nil while
// every file the harness reads is trusted as it is (or there is none);
// else a *ChangedError.
func Recheck(s *Store, ws string) error { return ClaudeCode.Recheck(s, ws) }

// Recheck is the package's Recheck for harness h.
func (h Harness) Recheck(s *Store, ws string) error {
	files, err := h.scan(ws)
	if err != nil {
		return fmt.Errorf("workspace %s: %w", ws, err)
	}
	if s != nil {
		files = s.Trusted(ws, files)
	}
	if len(files) == 0 {
		return nil
	}
	return &ChangedError{Workspace: ws, Files: files}
}

// ChangedError: files the harness reads changed under a run, and are not
// trusted as they are now.
type ChangedError struct {
	Workspace string
	Files     []File
}

// Error is one line: the files, what they can do, and what to run.
func (e *ChangedError) Error() string {
	var parts []string
	for _, f := range e.Files {
		risk := strings.Join(f.Risks, "; ")
		if risk == "" {
			risk = "no risky key"
		}
		parts = append(parts, fmt.Sprintf("%s (%s)", f.Rel, risk))
	}
	return fmt.Sprintf("a file the harness reads changed under the run: %s; nothing more was started. See what it does with `flower trust --show %s`, trust it with `flower trust %s`, then go on with flower continue",
		strings.Join(parts, ", "), e.Workspace, e.Workspace)
}

// Unwrap makes errors.Is(err, ErrUntrusted) true.
func (e *ChangedError) Unwrap() error { return ErrUntrusted }
