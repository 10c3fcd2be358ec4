package main

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/flowerhq/flower/policy"
	"github.com/flowerhq/flower/registry"
	"github.com/flowerhq/flower/runview"
)

func psCommand(p proc) *cli.Command {
	return &cli.Command{
		Name:      "ps",
		Usage:     "list the flowers running on this machine",
		UsageText: "flower ps [--json] [-w [--interval D]]",
		Description: `Lists every live flower of this user on this machine, across workspaces:
its workspace and step, its front (headless, interactive, relay, worker) and
pid; the generation, the main thread's context of the window and how far it
is from the handoff; the cost so far, the time since the last API response,
and what it is doing (starting, working, near the handoff, writing a
handoff, handed off, retrying, waiting for a limit, waiting to retry the
API, turn ended).

Every flower writes a small entry when it starts and removes it when it
exits, in a private registry ($FLOWER_PS_DIR, else $XDG_RUNTIME_DIR/flower/ps,
else ~/.cache/flower/ps). An entry whose process is gone (killed with -9)
is removed by the next flower ps.

Examples:
   flower ps
   flower ps -w                          # refresh every second, like watch
   flower ps --json | jq '.[].context'`,
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "json", Usage: "print the entries as a JSON array"},
			&cli.BoolFlag{Name: "watch", Aliases: []string{"w"}, Usage: "refresh in place until interrupted"},
			&cli.DurationFlag{Name: "interval", Value: time.Second, Usage: "how often -w refreshes"},
		},
		Action: func(c *cli.Context) error { return psAction(c, p) },
	}
}

func psAction(c *cli.Context, p proc) error {
	if c.NArg() > 0 {
		return usagef("flower ps takes no arguments, got %q", c.Args().First())
	}
	if c.Bool("watch") && c.Bool("json") {
		return usagef("--watch and --json do not go together")
	}
	if c.Duration("interval") <= 0 {
		return usagef("--interval must be positive")
	}
	dir, err := registry.Dir(p.env)
	if err != nil {
		return err
	}
	if !c.Bool("watch") {
		entries, err := registry.List(dir)
		if err != nil {
			return err
		}
		if c.Bool("json") {
			return writePSJSON(p.stdout, entries, time.Now())
		}
		return writePS(p.stdout, entries, time.Now(), homeOf(p.env))
	}
	tick := time.NewTicker(c.Duration("interval"))
	defer tick.Stop()
	for {
		entries, err := registry.List(dir)
		if err != nil {
			return err
		}
		var b strings.Builder
		now := time.Now()
		// Home the cursor and clear the screen, as watch does.
		fmt.Fprintf(&b, "\x1b[H\x1b[2Jevery %s: flower ps    %s\n\n", c.Duration("interval"), now.Format("15:04:05"))
		if err := writePS(&b, entries, now, homeOf(p.env)); err != nil {
			return err
		}
		if _, err := io.WriteString(p.stdout, b.String()); err != nil {
			return err
		}
		select {
		case <-c.Context.Done():
			return nil
		case <-tick.C:
		}
	}
}

// psRow is one entry of flower ps --json: the entry as registered, and
// what is worked out from it.
type psRow struct {
	registry.Entry
	ToHandoff int `json:"to_handoff"`
	// SinceResponse is how many seconds ago the last API response came;
	// absent before the first.
	SinceResponse *float64 `json:"since_last_response_seconds,omitempty"`
}

func writePSJSON(w io.Writer, entries []registry.Entry, now time.Time) error {
	rows := make([]psRow, 0, len(entries))
	for _, e := range entries {
		r := psRow{Entry: e, ToHandoff: e.ToHandoff()}
		if !e.LastResponse.IsZero() {
			s := now.Sub(e.LastResponse).Round(time.Millisecond).Seconds()
			r.SinceResponse = &s
		}
		rows = append(rows, r)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(rows)
}

func writePS(w io.Writer, entries []registry.Entry, now time.Time, home string) error {
	if len(entries) == 0 {
		_, err := io.WriteString(w, "no flower is running\n")
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "WORKSPACE\tSTEP\tFRONT\tPID\tGEN\tCONTEXT\tTO HANDOFF\tCOST\tLAST RESPONSE\tSTATUS")
	for _, e := range entries {
		ctx := policy.FormatUsed(e.Context)
		if e.Window > 0 {
			ctx += "/" + policy.FormatRound(e.Window)
		}
		toHandoff := "—"
		if e.At > 0 {
			toHandoff = policy.FormatRound(e.ToHandoff())
		}
		last := "—"
		if !e.LastResponse.IsZero() {
			last = ago(now.Sub(e.LastResponse))
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%s\t%s\t%s\t%s\t%s\n", clean(tildePath(e.Workspace, home)), clean(e.Step), clean(e.Front),
			e.PID, e.Generation, ctx, toHandoff, runview.Dollars(e.CostUSD), last, clean(e.Status))
	}
	return tw.Flush()
}

// ago says a duration the way a person reads a table: 4s, 3m12s, 2h05m.
func ago(d time.Duration) string {
	switch {
	case d < 0:
		return "0s"
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	}
	return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
}

// clean keeps a registry field (written by another process: untrusted) from
// moving the terminal's cursor or breaking the table.
func clean(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return '?'
		}
		return r
	}, s)
}

func tildePath(path, home string) string {
	if home == "" || home == "/" {
		return path
	}
	if rel, err := filepath.Rel(home, path); err == nil && filepath.IsLocal(rel) {
		return filepath.Join("~", rel)
	}
	return path
}

func homeOf(env []string) string {
	for i := len(env) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(env[i], "HOME="); ok {
			return v
		}
	}
	return ""
}

// register puts this flower into flower ps's registry; a registry that
// cannot be written is logged and the run goes on, unlisted.
func register(p proc, log *slog.Logger, e registry.Entry) *registry.Handle {
	dir, err := registry.Dir(p.env)
	if err == nil {
		var h *registry.Handle
		if h, err = registry.Register(dir, e, registryInterval); err == nil {
			return h
		}
	}
	log.Warn("not listed by flower ps", "err", err)
	return nil
}

// registryInterval bounds how often a flower rewrites its registry entry.
const registryInterval = 250 * time.Millisecond
