package console

import (
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/flowerhq/flower/event"
	"github.com/flowerhq/flower/policy"
)

// Bounds are the step's bounds in force, as the status line names them.
type Bounds struct {
	BudgetUSD float64   // 0: none
	Deadline  time.Time // zero: none
}

// ScreenLine folds a run's events into flower's segment of the harness's
// own status line in the interactive mode (DESIGN.md «Status line in the
// harness's screen»): the gauge's figures with the near notice's words,
// the cost booked so far, the bounds, and the announcement of the latest
// handoff. It decides nothing; it is safe for concurrent use.
type ScreenLine struct {
	mu       sync.Mutex
	g        gauge
	lab      labels
	status   *Status // shortens paths as the status lines do
	handoff  bool
	bounds   Bounds
	announce string
	dir      string // the workspace
}

// NewScreenLine renders in lang; noHandoff drops the distance to the
// handoff; paths under the workspace dir show relative to it, others
// under home as ~/….
func NewScreenLine(lang Lang, noHandoff bool, dir, home string, b Bounds) *ScreenLine {
	st := NewStatus(nil, lang)
	st.ShortenHome(home)
	return &ScreenLine{lab: labelsOf(lang), status: st, handoff: !noHandoff, bounds: b, dir: strings.TrimRight(dir, "/")}
}

// Handle folds ev in and reports whether anything shown changed.
func (s *ScreenLine) Handle(ev event.Event) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	changed := s.g.update(ev)
	if ev.Kind == event.KindHandoff && ev.Phase == event.PhaseDone {
		s.announce = s.handedOff(ev)
		changed = true
	}
	return changed
}

// handedOff is the announcement of a handoff done: which generation, where
// the file is (relative to the workspace, before anything a narrow screen
// cuts off), and what it was doing (the first line of its "doing").
func (s *ScreenLine) handedOff(ev event.Event) string {
	doing := "(空)"
	if ev.Handoff != nil {
		doing = firstLine(ev.Handoff.Get("doing"))
	}
	where := s.lab.noFile
	if ev.Path != "" {
		where = s.status.short(ev.Path)
		if rel, ok := strings.CutPrefix(ev.Path, s.dir+"/"); ok && s.dir != "" {
			where = rel
		}
	}
	return Escape(fmt.Sprintf(s.lab.handedOff, max(ev.Generation, 1), where, doing))
}

// Meter is the line's figures without the cost, in the near notice's
// words and rounding (DESIGN.md «Status lines»), e.g. "第 1 代 · 上下文
// 130.0K/200K · 还有约 20K 到换代"; "" until a generation started.
func (s *ScreenLine) Meter() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.g.ready() {
		return ""
	}
	lab := s.lab
	lab.toGo, lab.done = lab.about, lab.turnDone
	return Escape(strings.Join(s.g.meter(lab, s.handoff, policy.FormatRound), " · "))
}

// Cost is the step's cost booked so far.
func (s *ScreenLine) Cost() float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.g.cost
}

// Bounds names the bounds in force, e.g. "预算 $5.00 · 截止 16:30"; "" for
// none.
func (s *ScreenLine) Bounds() string {
	var parts []string
	if s.bounds.BudgetUSD > 0 {
		parts = append(parts, fmt.Sprintf(s.lab.budget, s.bounds.BudgetUSD))
	}
	if !s.bounds.Deadline.IsZero() {
		parts = append(parts, fmt.Sprintf(s.lab.deadline, s.bounds.Deadline.Local().Format("15:04")))
	}
	return strings.Join(parts, " · ")
}

// Announcement is the latest handoff's announcement; "" before any.
func (s *ScreenLine) Announcement() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.announce
}

// ScreenText joins the parts of flower's status line: "flower · ", the
// meter, the cost, the bounds. What it joins is escaped again: it may have
// been read back from a file.
func ScreenText(meter string, cost float64, bounds string) string {
	parts := []string{"flower"}
	if meter != "" {
		parts = append(parts, meter)
	}
	parts = append(parts, fmt.Sprintf("$%.2f", cost))
	if bounds != "" {
		parts = append(parts, bounds)
	}
	return Escape(strings.NewReplacer("\n", " ", "\t", " ").Replace(strings.Join(parts, " · ")))
}

// NoState is the status line's neutral text when flower's live state is
// missing or unreadable.
func NoState(lang Lang) string { return labelsOf(lang).noState }
