package console

import (
	"strings"
	"testing"
	"time"

	"github.com/flowerhq/flower/event"
	"github.com/flowerhq/flower/handoffwriter"
)

// The status line in the harness's screen carries the near notice's
// figures, the generation, and the handoff's announcement.
func TestScreenLineFigures(t *testing.T) {
	deadline := time.Date(2026, 12, 1, 16, 30, 0, 0, time.Local)
	for _, c := range []struct {
		lang                    Lang
		starting, meter, bounds string
		announce                string
	}{
		{LangZh, "第 1 代 · 启动中", "第 1 代 · 上下文 130.0K/200K · 还有约 20K 到换代", "预算 $5.00 · 截止 16:30",
			"<- 第 1 代已交接,交接写在 ~/proj/.flower/notes/交接-干活.md · 在做:改 Makefile"},
		{LangEn, "gen 1 · starting", "gen 1 · context 130.0K/200K · about 20K to handoff", "budget $5.00 · deadline 16:30",
			"<- gen 1 handed off, to ~/proj/.flower/notes/交接-干活.md · doing: 改 Makefile"},
	} {
		s := NewScreenLine(c.lang, false, "", "/home/p", Bounds{BudgetUSD: 5, Deadline: deadline})
		if s.Meter() != "" {
			t.Errorf("%s: meter %q before any generation", c.lang, s.Meter())
		}
		s.Handle(event.Event{Kind: event.KindGeneration, Generation: 1})
		if got := s.Meter(); got != c.starting {
			t.Errorf("%s: meter %q, want %q", c.lang, got, c.starting)
		}
		s.Handle(event.Event{Kind: event.KindText, Generation: 1, Context: 130_000, Window: 200_000, At: 150_000, CostUSD: 0.25})
		if got := s.Meter(); got != c.meter {
			t.Errorf("%s: meter %q, want %q", c.lang, got, c.meter)
		}
		if got := s.Bounds(); got != c.bounds {
			t.Errorf("%s: bounds %q, want %q", c.lang, got, c.bounds)
		}
		if got := ScreenText(s.Meter(), s.Cost()+0.5, s.Bounds()); got != "flower · "+c.meter+" · $0.75 · "+c.bounds {
			t.Errorf("%s: line %q", c.lang, got)
		}
		h := handoffwriter.Parse("## doing\n- 改 Makefile\n- more\n")
		s.Handle(event.Event{Kind: event.KindHandoff, Phase: event.PhaseDone, Generation: 1, Context: 152_000, Window: 200_000,
			Handoff: &h, Path: "/home/p/proj/.flower/notes/交接-干活.md"})
		if got := s.Announcement(); got != c.announce {
			t.Errorf("%s: announcement %q, want %q", c.lang, got, c.announce)
		}
	}
}

// Without handoff or bounds the line shows neither; text read back from a
// file stays on one line and safe.
func TestScreenLinePlain(t *testing.T) {
	s := NewScreenLine(LangEn, true, "", "", Bounds{})
	s.Handle(event.Event{Kind: event.KindText, Generation: 2, Context: 10_000, Window: 200_000, At: 150_000})
	if got := ScreenText(s.Meter(), s.Cost(), s.Bounds()); got != "flower · gen 2 · context 10.0K/200K · $0.00" {
		t.Errorf("line %q", got)
	}
	if got := ScreenText("a\nb\x1b]52;c;x\x07", 0, ""); strings.ContainsAny(got, "\n\x1b\x07") {
		t.Errorf("line %q keeps a newline or a control character", got)
	}
}

// The harness's retries are counted on the line until a reply comes, and
// refused credentials are said until then; a new session starts clean.
func TestScreenLineRetries(t *testing.T) {
	s := NewScreenLine(LangEn, false, "", "/home/p", Bounds{})
	s.Handle(event.Event{Kind: event.KindGeneration, Generation: 1})
	for _, c := range []struct {
		ev   event.Event
		want string
	}{
		{event.Event{Kind: event.KindAPI, Phase: event.PhaseRetrying, Generation: 1}, "gen 1 · starting · API retry 1"},
		{event.Event{Kind: event.KindAPI, Phase: event.PhaseRetrying, Generation: 1}, "gen 1 · starting · API retry 2"},
		{event.Event{Kind: event.KindAPI, Phase: event.PhaseRefused, Generation: 1}, "gen 1 · starting · the API refused the credentials"},
		{event.Event{Kind: event.KindText, Generation: 1, Context: 20_000, Window: 200_000, At: 150_000}, "gen 1 · context 20.0K/200K · about 130K to handoff"},
		{event.Event{Kind: event.KindAPI, Phase: event.PhaseRetrying, Generation: 1}, "gen 1 · context 20.0K/200K · about 130K to handoff · API retry 1"},
		{event.Event{Kind: event.KindTurn, Generation: 1, Context: 22_000}, "gen 1 · context 22.0K/200K · about 128K to handoff · done"},
		{event.Event{Kind: event.KindText, Generation: 1, Context: 23_000}, "gen 1 · context 23.0K/200K · about 127K to handoff"},
		{event.Event{Kind: event.KindTurn, Generation: 1, IsError: true}, "gen 1 · context 23.0K/200K · about 127K to handoff"},
		{event.Event{Kind: event.KindGeneration, Generation: 2}, "gen 2 · starting"},
	} {
		if s.Handle(c.ev); s.Meter() != c.want {
			t.Errorf("after %s %s: %q, want %q", c.ev.Kind, c.ev.Phase, s.Meter(), c.want)
		}
	}
	zh := NewScreenLine(LangZh, false, "", "", Bounds{})
	zh.Handle(event.Event{Kind: event.KindGeneration, Generation: 1})
	zh.Handle(event.Event{Kind: event.KindAPI, Phase: event.PhaseRetrying, Generation: 1})
	if got, want := zh.Meter(), "第 1 代 · 启动中 · API 重试第 1 次"; got != want {
		t.Errorf("zh: %q, want %q", got, want)
	}
}

// A burned harness that tells its cost only as it exits, after its
// successor started: the status line's cost becomes the chain's at once,
// and the generation shown stays the successor's.
func TestScreenLineChainCost(t *testing.T) {
	s := NewScreenLine(LangEn, false, "", "/home/p", Bounds{})
	s.Handle(event.Event{Kind: event.KindGeneration, Generation: 1})
	s.Handle(event.Event{Kind: event.KindGeneration, Generation: 2})
	if !s.Handle(event.Event{Kind: event.KindCost, CostUSD: 1.5}) {
		t.Error("the cost event changed nothing")
	}
	if got, want := s.Meter(), "gen 2 · starting"; got != want || s.Cost() != 1.5 {
		t.Errorf("meter %q, cost %v; want %q, 1.5", got, s.Cost(), want)
	}
}
