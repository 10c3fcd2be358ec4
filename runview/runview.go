// Package runview is `flower show`'s reading of a run for a person: the
// manifest's steps and generations as text, each generation's handoff
// file where it is now, and the forms of money, times and ids the other
// commands (ps, the run page's index, the remote show) give them in too.
package runview

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/flowerhq/flower/console"
	"github.com/flowerhq/flower/handoff"
	"github.com/flowerhq/flower/manifest"
	"github.com/flowerhq/flower/policy"
	"github.com/flowerhq/flower/workbench"
)

// Write writes the manifest of the run in dir for a person. All of it
// is escaped (console.Escape): a workspace wrote the task, the errors
// quote its files, and the manifest itself may be planted.
func Write(w io.Writer, m *manifest.Manifest, dir string) error {
	var b showText
	b.kv("", "run", "%s", dir)
	if m.Workspace != "" {
		b.kv("", "workspace", "%s", m.Workspace)
	}
	b.kv("", "started", "%s", Clock(m.CreatedAt))
	b.kv("", "updated", "%s", Clock(m.UpdatedAt))
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

// showText is what Write writes, built before it is escaped.
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
	b.kv(in, "cost", "%s over %d turns", Dollars(s.CostUSD), s.NumTurns)
	if line := budgetLine(s); line != "" {
		b.kv(in, "budget", "%s", line) // unattended: spent against the budget, and the deadline
	}
	b.kv(in, "context", "%s", contextOf(s))
	if s.Model != "" {
		b.kv(in, "model", "%s", s.Model)
	}
	b.kv(in, "session", "%s", OrDash(s.SessionID))
	b.kv(in, "retired", "%s", retired(s.Retired))
	if s.HandoffPath != "" {
		b.kv(in, "handoff", "%s", underWorkspace(m, s.HandoffPath))
	}
	b.kv(in, "started", "%s", Clock(s.StartedAt))
	if s.EndedAt != nil {
		b.kv(in, "ended", "%s (took %s)", Clock(*s.EndedAt), s.EndedAt.Sub(s.StartedAt).Round(time.Second))
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
		fmt.Fprintf(tw, "%s%d\t%s\t%s\t%s\t%d\t%s\t%s\n", showIndent, g.N, OrDash(console.ShortID(g.SessionID)), ctx,
			Dollars(g.CostUSD), g.NumTurns, degraded, file)
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
				each = append(each, fmt.Sprintf("%s at %s, %s", OrDash(c.Trigger), policy.FormatUsed(c.Context), Clock(c.At)))
			}
			if g.BlockedCompactionsMore > 0 {
				each = append(each, fmt.Sprintf("%d more", g.BlockedCompactionsMore))
			}
			out = append(out, fmt.Sprintf("generation %d: %d compaction(s) blocked by flower (%s)", g.N, n, strings.Join(each, "; ")))
		}
		if len(g.Compactions) > 0 {
			var each []string
			for _, c := range g.Compactions {
				each = append(each, fmt.Sprintf("%s, %s → %s", OrDash(c.Trigger), policy.FormatUsed(c.PreTokens), policy.FormatUsed(c.PostTokens)))
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

// Dollars is an amount as flower shows one: four decimals.
func Dollars(usd float64) string { return fmt.Sprintf("$%.4f", usd) }

// Clock shows a time in the zone it was recorded in: the clock of the
// machine that ran the step, which is usually the reader's.
func Clock(t time.Time) string {
	if t.IsZero() {
		return "—"
	}
	return t.Format("2006-01-02 15:04:05 MST")
}

// OrDash is s, or a dash for none.
func OrDash(s string) string {
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

// handoffFiles finds where each generation's handoff of step s is now, by
// generation number: the step's current file holds the last one, and every
// earlier one was moved into notes/archive/交接/ when the next was frozen
// (DESIGN.md «Handoff files»). A file is a generation's when its contents
// are the ones the successor launched from, else the ones written. Only the workbench holding the run is read, each file as
// flower reads a note; a generation no file matches is left out, and show
// then names the path it was written to.
func handoffFiles(m *manifest.Manifest, runDir string, s *manifest.StepResult) map[int]string {
	ws := workbench.HoldingWorkspace(runDir)
	if ws == "" {
		ws = m.Workspace
	}
	if ws == "" {
		return nil
	}
	wb := &workbench.Workbench{Dir: workbench.DirOf(ws)}
	candidates, err := wb.Archive(s.Name)
	if err != nil {
		candidates = nil
	}
	candidates = append(candidates, wb.HandoffPath(s.Name)) // oldest first, the current one last
	digests := make([]string, len(candidates))
	for i, path := range candidates {
		if data, err := workbench.ReadNote(path, workbench.MaxHandoff, "a handoff"); err == nil {
			digests[i] = handoff.Digest(data)
		}
	}
	files := map[int]string{}
	used := make([]bool, len(candidates))
	// From the last generation back, each takes the newest file of its
	// contents that no later generation took.
	for gi := len(s.Generations) - 1; gi >= 0; gi-- {
		g := s.Generations[gi]
		if g.Handoff == nil {
			continue
		}
		for _, want := range []string{g.Handoff.SHA256Launched, g.Handoff.SHA256Written} {
			if i := newestUnused(digests, used, want); i >= 0 {
				used[i] = true
				files[g.N] = candidates[i]
				break
			}
		}
	}
	return files
}

// newestUnused is the index of the last digest that is want and not used,
// or -1.
func newestUnused(digests []string, used []bool, want string) int {
	for i := len(digests) - 1; want != "" && i >= 0; i-- {
		if !used[i] && digests[i] == want {
			return i
		}
	}
	return -1
}

// budgetLine is flower show's line for a step's budget and deadline: ""
// when it has neither.
func budgetLine(s *manifest.StepResult) string {
	var out string
	if s.BudgetUSD > 0 {
		out = fmt.Sprintf("%s of %s spent (%.0f%%)", Dollars(s.CostUSD), Dollars(s.BudgetUSD), 100*s.CostUSD/s.BudgetUSD)
	}
	if s.Deadline != nil {
		if out != "" {
			out += " · "
		}
		out += "deadline " + s.Deadline.Local().Format(time.DateTime)
	}
	return out
}
