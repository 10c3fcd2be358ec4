package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/flowerhq/flower/console"
	"github.com/flowerhq/flower/manifest"
	"github.com/flowerhq/flower/policy"
	"github.com/flowerhq/flower/safefile"
	"github.com/flowerhq/flower/workbench"
)

func showCommand(p proc) *cli.Command {
	return &cli.Command{
		Name:      "show",
		Usage:     "show what a run did, from its manifest",
		UsageText: "flower show [--json | --html [-o FILE] [--lang L]] [-C WORKSPACE] [RUN_DIR]\nflower show --temporal HOST:PORT [--namespace N] [--json] WORKFLOW_ID",
		Description: `Prints a run's manifest.json as a person reads it: per step the task's
first line and the file it is frozen in (notes/任务-STEP.md), its status,
failed attempts, total cost and turns, context and window, latest session,
retired sessions and errors (交接降级(…) marks a degraded handoff), then
one row per generation: its session, context at the handoff, cost, turns,
whether the handoff was degraded and why, and the handoff file where it is
now (an earlier generation's in notes/archive/交接/).
RUN_DIR defaults to WORKSPACE/.flower/runs/latest, the last run started.

Examples:
   flower show                                  # the latest run here
   flower show -C ~/src/app                     # the latest run of another workspace
   flower show .flower/runs/20261130-112853     # a given run
   flower show --json | jq '.steps[].cost_usd'  # the manifest as written
   flower show --html                           # on a terminal: writes RUN_DIR/run.html, prints its path
   flower show --html RUN_DIR > page.html       # stdout not a terminal: the page itself`,
		Flags: append([]cli.Flag{
			workspaceFlag(),
			&cli.BoolFlag{Name: "json", Usage: "print manifest.json as it is on disk (with --temporal: the status query's answer)"},
		}, append(htmlFlags(), temporalFlags(false)...)...),
		Action: func(c *cli.Context) error {
			if c.String("temporal") != "" {
				return showTemporal(c, p)
			}
			return showAction(c, p)
		},
	}
}

// workspaceFlag is the -C flag of the commands that read a past run.
func workspaceFlag() cli.Flag {
	return &cli.StringFlag{Name: "workspace", Aliases: []string{"C"}, Value: ".",
		Usage: "the workspace `DIR` whose latest run to use when RUN_DIR is not given"}
}

func showAction(c *cli.Context, p proc) error {
	dir, err := runDirOf(c)
	if err != nil {
		return err
	}
	if c.Bool("html") {
		return showHTML(c, p, dir)
	}
	m, err := loadManifest(dir)
	if err != nil {
		return err
	}
	out := p.stdout
	if c.Bool("json") {
		// As on disk, once Load has vouched for it; a rewrite in between
		// is atomic, so this is still a whole manifest.
		data, err := safefile.ReadFile(dir, manifest.Path(dir), manifest.MaxSize, "a manifest")
		if err != nil {
			return fmt.Errorf("read manifest: %w", err)
		}
		if !bytes.HasSuffix(data, []byte("\n")) {
			data = append(data, '\n')
		}
		_, err = out.Write(data)
		return err
	}
	return writeShow(out, m, dir)
}

// runDirOf is the command's RUN_DIR argument, or the workspace's latest
// run: the runs/latest link, else the newest run dir by name (they are
// named by start time).
func runDirOf(c *cli.Context) (string, error) {
	dir, err := findRunDir(c)
	if err != nil {
		return "", err
	}
	if dir, err = filepath.Abs(dir); err != nil {
		return "", err
	}
	// Nothing in it is read before it is checked (DESIGN.md «Territory»).
	if err := checkPastRun(dir); err != nil {
		return "", err
	}
	return dir, nil
}

func findRunDir(c *cli.Context) (string, error) {
	switch c.NArg() {
	case 0:
	case 1:
		dir := c.Args().First()
		fi, err := os.Stat(dir)
		if err != nil {
			return "", usagef("run dir %s does not exist", dir)
		}
		if !fi.IsDir() {
			return "", usagef("run dir %s is not a directory", dir)
		}
		return dir, nil
	default:
		return "", usagef("want at most one RUN_DIR, got %d arguments", c.NArg())
	}
	runs := workbench.RunsDir(workbench.DirOf(c.String("workspace")))
	dir, err := latestRunDir(c.String("workspace"), "%s")
	var se *safefile.Error
	switch {
	case err == nil:
		return dir, nil
	case errors.As(err, &se):
		return "", err
	}
	entries, err := os.ReadDir(runs)
	for i := len(entries) - 1; err == nil && i >= 0; i-- {
		if e := entries[i]; e.IsDir() {
			return filepath.Join(runs, e.Name()), nil
		}
	}
	return "", usagef("no runs in %s: give RUN_DIR, or the workspace with -C", runs)
}

// loadManifest reads the run's manifest, turning a missing one into a
// sentence; a corrupt one already names its file.
func loadManifest(dir string) (*manifest.Manifest, error) {
	m, err := manifest.LoadBound(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("no %s in %s: not a run dir, or its run has not started", manifest.FileName, dir)
	}
	return m, err
}

// writeShow writes the manifest of the run in dir for a person. All of it
// is escaped (console.Escape): a workspace wrote the task, the errors
// quote its files, and the manifest itself may be planted.
func writeShow(w io.Writer, m *manifest.Manifest, dir string) error {
	var b showText
	b.kv("", "run", "%s", dir)
	if m.Workspace != "" {
		b.kv("", "workspace", "%s", m.Workspace)
	}
	b.kv("", "started", "%s", clock(m.CreatedAt))
	b.kv("", "updated", "%s", clock(m.UpdatedAt))
	if len(m.Steps) == 0 {
		b.WriteString("\nno steps yet\n")
	}
	for _, s := range m.Steps {
		fmt.Fprintf(&b, "\nstep %s: %s\n", s.Name, s.Status)
		b.writeStep(m, s)
		b.WriteString("\n")
		if len(s.Generations) == 0 {
			b.WriteString(showIndent + "no generations yet\n")
			continue
		}
		if err := b.writeGenerations(m, dir, s); err != nil {
			return err
		}
		for _, line := range compactionLines(s) {
			b.WriteString(showIndent + line + "\n")
		}
	}
	_, err := io.WriteString(w, console.Escape(b.String()))
	return err
}

// showText is what writeShow writes, built before it is escaped.
type showText struct{ strings.Builder }

// showIndent indents a step's lines under its heading.
const showIndent = "  "

// kv writes one labelled line, the values after a column of labels.
func (b *showText) kv(indent, label, format string, a ...any) {
	fmt.Fprintf(b, "%s%-10s %s\n", indent, label, fmt.Sprintf(format, a...))
}

// writeStep writes step s's labelled lines: its task, attempts, cost,
// context, sessions, times and errors.
func (b *showText) writeStep(m *manifest.Manifest, s *manifest.StepResult) {
	const in = showIndent
	if s.Task != "" {
		b.kv(in, "task", "%s", firstLine(s.Task))
	}
	switch {
	case s.TaskPath != "":
		b.kv(in, "task file", "%s", underWorkspace(m, s.TaskPath))
	case s.TaskSHA256 != "":
		b.kv(in, "task file", "none: the task is kept in the manifest (no workbench)")
	}
	b.kv(in, "attempts", "%d failed (handoffs are not attempts)", s.Attempts)
	b.kv(in, "cost", "%s over %d turns", dollars(s.CostUSD), s.NumTurns)
	if line := budgetLine(s); line != "" {
		b.kv(in, "budget", "%s", line) // unattended: spent against the budget, and the deadline
	}
	b.kv(in, "context", "%s", contextOf(s))
	if s.Model != "" {
		b.kv(in, "model", "%s", s.Model)
	}
	b.kv(in, "session", "%s", orDash(s.SessionID))
	b.kv(in, "retired", "%s", retired(s.Retired))
	if s.HandoffPath != "" {
		b.kv(in, "handoff", "%s", underWorkspace(m, s.HandoffPath))
	}
	b.kv(in, "started", "%s", clock(s.StartedAt))
	if s.EndedAt != nil {
		b.kv(in, "ended", "%s (took %s)", clock(*s.EndedAt), s.EndedAt.Sub(s.StartedAt).Round(time.Second))
	}
	if len(s.Errors) == 0 {
		b.kv(in, "errors", "none")
	}
	for i, e := range s.Errors {
		label := ""
		if i == 0 {
			label = "errors"
		}
		b.kv(in, label, "%s", e)
	}
}

// writeGenerations writes step s's table of generations, one row each.
func (b *showText) writeGenerations(m *manifest.Manifest, dir string, s *manifest.StepResult) error {
	files := handoffFiles(m, dir, s)
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, showIndent+"GEN\tSESSION\tCONTEXT AT HANDOFF\tCOST\tTURNS\tDEGRADED\tHANDOFF FILE")
	for _, g := range s.Generations {
		ctx, degraded, file := generationHandoff(m, files, g)
		fmt.Fprintf(tw, "%s%d\t%s\t%s\t%s\t%d\t%s\t%s\n", showIndent, g.N, orDash(console.ShortID(g.SessionID)), ctx,
			dollars(g.CostUSD), g.NumTurns, degraded, file)
	}
	return tw.Flush()
}

// generationHandoff is what a row of writeGenerations says of g's handoff:
// the context it was cut at and why, whether it was degraded and why, and
// its file where it is now (files, by generation), else where it was
// frozen. A generation that did not hand off has a dash for each.
func generationHandoff(m *manifest.Manifest, files map[int]string, g manifest.Generation) (ctx, degraded, file string) {
	ctx, degraded, file = "—", "—", "—"
	h := g.Handoff
	if h == nil {
		return ctx, degraded, file
	}
	ctx = policy.FormatUsed(h.Context) + " (" + h.Reason + ")"
	degraded = "no"
	if h.Degraded {
		degraded = "yes: " + h.Why
	}
	if now, ok := files[g.N]; ok {
		file = underWorkspace(m, now)
	} else if h.Path != "" {
		file = underWorkspace(m, h.Path)
	}
	return ctx, degraded, file
}

// compactionLines say, per generation, which compactions flower's hook
// blocked and which the harness ran (DESIGN.md «Compaction levers»).
func compactionLines(s *manifest.StepResult) []string {
	var out []string
	for _, g := range s.Generations {
		if n := len(g.BlockedCompactions) + g.BlockedCompactionsMore; n > 0 {
			var each []string
			for _, c := range g.BlockedCompactions {
				each = append(each, fmt.Sprintf("%s at %s, %s", orDash(c.Trigger), policy.FormatUsed(c.Context), clock(c.At)))
			}
			if g.BlockedCompactionsMore > 0 {
				each = append(each, fmt.Sprintf("%d more", g.BlockedCompactionsMore))
			}
			out = append(out, fmt.Sprintf("generation %d: %d compaction(s) blocked by flower (%s)", g.N, n, strings.Join(each, "; ")))
		}
		if len(g.Compactions) > 0 {
			var each []string
			for _, c := range g.Compactions {
				each = append(each, fmt.Sprintf("%s, %s → %s", orDash(c.Trigger), policy.FormatUsed(c.PreTokens), policy.FormatUsed(c.PostTokens)))
			}
			out = append(out, fmt.Sprintf("generation %d: the harness compacted %d time(s) (%s)", g.N, len(g.Compactions), strings.Join(each, "; ")))
		}
	}
	return out
}

// firstLine is the task's first non-blank line, shortened, and how many
// lines follow it: what a person needs to recognise the task, while the
// file holds all of it.
func firstLine(task string) string {
	lines := strings.Split(strings.TrimSpace(strings.ReplaceAll(task, "\r\n", "\n")), "\n")
	out := console.Abbrev(lines[0], 100)
	switch rest := len(lines) - 1; {
	case rest == 1:
		out += " (+1 line)"
	case rest > 1:
		out += fmt.Sprintf(" (+%d lines)", rest)
	}
	return out
}

func contextOf(s *manifest.StepResult) string {
	if s.Window == 0 {
		return policy.FormatUsed(s.Context) + " (window unknown)"
	}
	out := policy.FormatUsed(s.Context) + " of " + policy.FormatRound(s.Window)
	if s.WindowSource != "" {
		out += " (window from " + s.WindowSource + ")"
	}
	return out
}

func retired(ids []string) string {
	switch len(ids) {
	case 0:
		return "none"
	case 1:
		return "1 session"
	}
	return fmt.Sprintf("%d sessions", len(ids))
}

func dollars(usd float64) string { return fmt.Sprintf("$%.4f", usd) }

// clock shows a time in the zone it was recorded in: the clock of the
// machine that ran the step, which is usually the reader's.
func clock(t time.Time) string {
	if t.IsZero() {
		return "—"
	}
	return t.Format("2006-01-02 15:04:05 MST")
}

func orDash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}

// underWorkspace shortens a path inside the run's workspace to a relative
// one; the rest are shown as recorded.
func underWorkspace(m *manifest.Manifest, path string) string {
	if m.Workspace == "" || !filepath.IsAbs(path) {
		return path
	}
	rel, err := filepath.Rel(m.Workspace, path)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return path
	}
	return rel
}
