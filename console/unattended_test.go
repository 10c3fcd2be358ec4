package console

import (
	"strings"
	"testing"
	"time"

	"github.com/flowerhq/flower/event"
)

// A limit's wait: a status line when it begins and ends, and the gauge
// counting down to its end in between (DESIGN.md «Unattended: limits,
// budget, deadline»).
func TestLimitWaitLines(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 3, 33, 0, time.Local)
	until := now.Add(90 * time.Second)
	var b strings.Builder
	l := NewLive(&b, LiveOptions{Lang: LangEn, Terminal: true, Now: func() time.Time { return now }})
	l.Handle(event.Event{Kind: event.KindGeneration, Generation: 1, Window: 200_000, At: 150_000})
	l.Handle(event.Event{Kind: event.KindLimitWait, Phase: event.PhaseBegun, Generation: 1, Limit: "usage_limit", Until: &until,
		Text: "usage limit reached: waiting until 12:05:03 (1m30s), then the same session goes on"})
	out := b.String()
	if !strings.Contains(out, "flower: usage limit reached: waiting until 12:05:03 (1m30s), then the same session goes on\n") {
		t.Errorf("no status line for the wait's start:\n%q", out)
	}
	if want := "limit: waiting until " + until.Local().Format("15:04:05") + " (1m30s left)"; !strings.Contains(out, want) {
		t.Errorf("the gauge does not count down (%q):\n%q", want, out)
	}
	b.Reset()
	now = now.Add(time.Second)
	l.Handle(event.Event{Kind: event.KindLimitWait, Phase: event.PhaseWaiting, Generation: 1, Limit: "usage_limit", Until: &until})
	if out := b.String(); strings.Contains(out, "flower:") || !strings.Contains(out, "(1m29s left)") {
		t.Errorf("a tick a second later: %q; want the gauge at 1m29s, no status line", out)
	}
	b.Reset()
	l.Handle(event.Event{Kind: event.KindLimitWait, Phase: event.PhaseEnded, Generation: 1, Limit: "usage_limit", Until: &until,
		Text: "the wait for the usage limit is over: the same session goes on"})
	if out := b.String(); !strings.Contains(out, "flower: the wait for the usage limit is over") || strings.Contains(out, "left)") {
		t.Errorf("the wait's end: %q; want its line and the gauge without the countdown", out)
	}
	if got := (&Status{lab: en}).lines(event.Event{Kind: event.KindBound, Reason: "budget", Text: "the step's budget of $5.00 is reached"}); got != "flower: the step's budget of $5.00 is reached\n" {
		t.Errorf("bound line %q", got)
	}
}

func TestGaugeWaiting(t *testing.T) {
	until := time.Date(2026, 12, 1, 12, 5, 3, 0, time.Local)
	g := gauge{gen: 2, context: 42_000, window: 200_000, at: 150_000, cost: 1.2, phase: gaugeWorking, until: until, left: 4*time.Minute + 12*time.Second}
	if got, want := g.text(en, true), "gen 2 · context 42.0K/200K · 108.0K to handoff · limit: waiting until 12:05:03 (4m12s left) · $1.20"; got != want {
		t.Errorf("en: %q, want %q", got, want)
	}
	if got, want := g.text(zh, true), "第 2 代 · 上下文 42.0K/200K · 距换代 108.0K · 限额,等到 12:05:03(还有 4m12s) · $1.20"; got != want {
		t.Errorf("zh: %q, want %q", got, want)
	}
}
