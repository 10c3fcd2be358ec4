package console

import (
	"fmt"
	"strings"
	"time"

	"github.com/flowerhq/flower/event"

	"github.com/flowerhq/flower/policy"
)

// gaugePhase is where the current generation is, as far as the gauge shows.
type gaugePhase int

const (
	gaugeStarting gaugePhase = iota // the process runs, no context reported yet
	gaugeWorking
	gaugeWriting  // the writing turn runs
	gaugeHandedOn // the handoff is done; the successor has not started
)

// gauge is the one-line summary of a running step: generation, context
// used of the window, distance to the handoff, cost so far. It is folded
// from events; it decides nothing.
type gauge struct {
	gen     int
	context int
	window  int
	at      int
	cost    float64
	phase   gaugePhase
	// until is when a limit's wait ends, left how long it had to go at
	// its latest event (zero: no wait runs).
	until time.Time
	left  time.Duration
	// retries counts the harness's retries of a request since the last
	// reply; refused: the API refused the credentials since then.
	retries int
	refused bool
	// done: the latest turn ended on its own (the model finished what it
	// was asked), and nothing has run since.
	done bool
}

// update folds ev into the gauge and reports whether anything changed.
func (g *gauge) update(ev event.Event) bool {
	before := *g
	if ev.Generation > 0 {
		g.gen = ev.Generation
	}
	if ev.Window > 0 {
		g.window, g.at = ev.Window, ev.At
	}
	if ev.CostUSD > 0 {
		g.cost = ev.CostUSD
	}
	switch ev.Kind {
	case event.KindText, event.KindTool, event.KindGeneration, event.KindHandoff:
		g.retries, g.refused = 0, false // an answer, or a new session
	case event.KindTurn:
		g.retries = 0
	}
	switch ev.Kind {
	case event.KindTurn:
		g.done = !ev.IsError
	case event.KindText, event.KindTool, event.KindGeneration, event.KindHandoff, event.KindAPI:
		g.done = false
	}
	switch ev.Kind {
	case event.KindAPI:
		switch ev.Phase {
		case event.PhaseRetrying:
			g.retries++
		case event.PhaseRefused:
			g.refused = true
		}
	case event.KindGeneration:
		// A new process: what the last one measured no longer holds.
		g.phase, g.context = gaugeStarting, 0
		g.until, g.left = time.Time{}, 0
	case event.KindLimitWait:
		// unattended: the wait's countdown (one event a second)
		g.until, g.left = time.Time{}, 0
		if ev.Phase != event.PhaseEnded && ev.Until != nil {
			g.until = *ev.Until
		}
	case event.KindHandoff:
		g.context = ev.Context
		switch ev.Phase {
		case event.PhaseWriting:
			g.phase = gaugeWriting
		case event.PhaseDone:
			g.phase = gaugeHandedOn
		}
	case event.KindText, event.KindTool, event.KindTurn, event.KindSession, event.KindRaw:
		if ev.Context > 0 && g.phase <= gaugeWorking {
			g.context, g.phase = ev.Context, gaugeWorking
		}
	}
	return *g != before
}

// countdown sets how long the wait has to go at now, and reports whether
// that changed what the gauge shows.
func (g *gauge) countdown(now time.Time) bool {
	if g.until.IsZero() {
		return false
	}
	left := max(g.until.Sub(now), 0).Round(time.Second)
	changed := left != g.left
	g.left = left
	return changed
}

// ready reports whether there is anything to show: a generation has started.
func (g *gauge) ready() bool { return g.gen > 0 }

// text renders the gauge, e.g. "gen 2 · context 142.3K/200K · 7.7K to
// handoff · $0.42". Without handoff there is no distance to show.
func (g *gauge) text(lab labels, handoff bool) string {
	return strings.Join(append(g.meter(lab, handoff, policy.FormatUsed), fmt.Sprintf("$%.2f", g.cost)), " · ")
}

// meter is the gauge's parts before the cost: the generation, the context
// and the distance to the handoff (written by distance) or the phase, a
// limit's wait.
func (g *gauge) meter(lab labels, handoff bool, distance func(int) string) []string {
	parts := []string{fmt.Sprintf(lab.gen, g.gen)}
	switch {
	case g.phase == gaugeStarting:
		parts = append(parts, lab.starting)
	default:
		parts = append(parts, fmt.Sprintf(lab.ctx, policy.FormatUsed(g.context), policy.FormatRound(g.window)))
		switch {
		case !handoff:
		case g.phase == gaugeWriting || (g.phase == gaugeWorking && g.context >= g.at):
			parts = append(parts, lab.inWrite)
		case g.phase == gaugeHandedOn:
			parts = append(parts, lab.handing)
		default:
			parts = append(parts, fmt.Sprintf(lab.toGo, distance(g.at-g.context)))
		}
	}
	if !g.until.IsZero() {
		parts = append(parts, fmt.Sprintf(lab.waiting, g.until.Local().Format("15:04:05"), g.left))
	}
	switch {
	case g.refused:
		parts = append(parts, lab.refused)
	case g.retries > 0:
		parts = append(parts, fmt.Sprintf(lab.retrying, g.retries))
	case g.done && g.phase == gaugeWorking && lab.done != "":
		parts = append(parts, lab.done)
	}
	return parts
}

// columns is how many terminal columns s takes (East Asian wide characters
// take two).
func columns(s string) int {
	n := 0
	for _, r := range s {
		n += runeColumns(r)
	}
	return n
}

// runeColumns approximates East Asian Width: the wide and fullwidth blocks
// take two columns, the rest (including "·", "—" and "…") one.
func runeColumns(r rune) int {
	switch {
	case r >= 0x1100 && r <= 0x115F, // Hangul Jamo
		r >= 0x2E80 && r <= 0x303E, // CJK radicals, punctuation
		r >= 0x3041 && r <= 0xA4CF, // kana … CJK ideographs, Yi
		r >= 0xAC00 && r <= 0xD7A3, // Hangul syllables
		r >= 0xF900 && r <= 0xFAFF, // CJK compatibility ideographs
		r >= 0xFE30 && r <= 0xFE4F, // CJK compatibility forms
		r >= 0xFF00 && r <= 0xFF60, // fullwidth forms
		r >= 0xFFE0 && r <= 0xFFE6,
		r >= 0x1F300 && r <= 0x1F64F, // pictographs, emoticons
		r >= 0x1F900 && r <= 0x1F9FF,
		r >= 0x20000 && r <= 0x3FFFD: // CJK extensions
		return 2
	}
	return 1
}

// clip cuts s to at most n columns, marking the cut with "…".
func clip(s string, n int) string {
	if n <= 0 || columns(s) <= n {
		return s
	}
	var b strings.Builder
	used := 0
	for _, r := range s {
		if used+runeColumns(r) > n-1 {
			break
		}
		b.WriteRune(r)
		used += runeColumns(r)
	}
	return b.String() + "…"
}
