package console

import (
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/flowerhq/flower/event"

	"github.com/flowerhq/flower/manifest"
	"github.com/flowerhq/flower/policy"
)

// Output renders the job itself for stdout: the assistant's text and one line
// per tool call.
type Output struct {
	mu sync.Mutex
	w  io.Writer
}

// NewOutput writes the job's text to w.
func NewOutput(w io.Writer) *Output { return &Output{w: w} }

// Handle renders text and tool events; others are ignored.
func (o *Output) Handle(ev event.Event) {
	o.mu.Lock()
	defer o.mu.Unlock()
	switch ev.Kind {
	case event.KindText:
		fmt.Fprintln(o.w, Escape(strings.TrimRight(ev.Text, "\n")))
	case event.KindTool:
		fmt.Fprintf(o.w, "[%s] %s\n", Escape(ev.Tool), Escape(Abbrev(ev.Input, 100)))
	}
}

// ShortID is a session id's first 8 characters, enough to tell sessions
// apart in flower show and flower logs.
func ShortID(id string) string {
	if r := []rune(id); len(r) > 8 {
		return string(r[:8])
	}
	return id
}

// Abbrev shortens s to at most n runes on one line.
func Abbrev(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// Summary writes the closing lines of a step: how it ended, its generations,
// cost, and where to look; names and paths escaped.
func Summary(w io.Writer, st *manifest.StepResult, runDir string) {
	io.WriteString(w, Escape(summary(st, runDir)))
}

func summary(st *manifest.StepResult, runDir string) string {
	var w strings.Builder
	handoffs, degraded := 0, 0
	for _, g := range st.Generations {
		if g.Handoff != nil {
			handoffs++
			if g.Handoff.Degraded {
				degraded++
			}
		}
	}
	fmt.Fprintf(&w, "flower: step %q %s · %d generation(s), %d handoff(s)", st.Name, st.Status, len(st.Generations), handoffs)
	if degraded > 0 {
		fmt.Fprintf(&w, " (%d degraded)", degraded)
	}
	fmt.Fprintf(&w, " · context %s/%s · $%.4f · %d turns\n", policy.FormatUsed(st.Context), policy.FormatRound(st.Window), st.CostUSD, st.NumTurns)
	if st.HandoffPath != "" {
		fmt.Fprintf(&w, "flower: latest handoff %s\n", st.HandoffPath)
	}
	fmt.Fprintf(&w, "flower: manifest %s\n", manifest.Path(runDir))
	return w.String()
}
