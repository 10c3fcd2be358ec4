package console

import (
	"testing"

	"github.com/flowerhq/flower/event"
)

func TestGaugeText(t *testing.T) {
	tests := []struct {
		name      string
		g         gauge
		noHandoff bool
		en, zh    string
	}{
		{"working", gauge{gen: 2, context: 142_300, window: 200_000, at: 150_000, cost: 0.42, phase: gaugeWorking}, false,
			"gen 2 · context 142.3K/200K · 7.7K to handoff · $0.42", "第 2 代 · 上下文 142.3K/200K · 距换代 7.7K · $0.42"},
		{"starting", gauge{gen: 3, window: 200_000, at: 150_000, cost: 1.5, phase: gaugeStarting}, false,
			"gen 3 · starting · $1.50", "第 3 代 · 启动中 · $1.50"},
		{"past the threshold", gauge{gen: 1, context: 151_000, window: 200_000, at: 150_000, phase: gaugeWorking}, false,
			"gen 1 · context 151.0K/200K · writing the handoff · $0.00", "第 1 代 · 上下文 151.0K/200K · 写交接中 · $0.00"},
		{"writing", gauge{gen: 1, context: 152_000, window: 200_000, at: 150_000, cost: 0.3, phase: gaugeWriting}, false,
			"gen 1 · context 152.0K/200K · writing the handoff · $0.30", "第 1 代 · 上下文 152.0K/200K · 写交接中 · $0.30"},
		{"handed on", gauge{gen: 1, context: 152_000, window: 200_000, at: 150_000, cost: 0.3, phase: gaugeHandedOn}, false,
			"gen 1 · context 152.0K/200K · handing over · $0.30", "第 1 代 · 上下文 152.0K/200K · 换代中 · $0.30"},
		{"no handoff", gauge{gen: 1, context: 612_345, window: 1_000_000, at: 950_000, cost: 12.345, phase: gaugeWorking}, true,
			"gen 1 · context 612.3K/1M · $12.35", "第 1 代 · 上下文 612.3K/1M · $12.35"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.g.text(en, !tt.noHandoff); got != tt.en {
				t.Errorf("en: %q, want %q", got, tt.en)
			}
			if got := tt.g.text(zh, !tt.noHandoff); got != tt.zh {
				t.Errorf("zh: %q, want %q", got, tt.zh)
			}
		})
	}
}

// TestGaugeUpdate follows a generation through a handoff into the next.
func TestGaugeUpdate(t *testing.T) {
	win := event.Event{Window: 200_000, At: 150_000}
	with := func(ev event.Event) event.Event {
		ev.Window, ev.At = win.Window, win.At
		return ev
	}
	steps := []struct {
		ev      event.Event
		changed bool
		want    gauge
	}{
		{with(event.Event{Kind: event.KindGeneration, Generation: 1}), true,
			gauge{gen: 1, window: 200_000, at: 150_000, phase: gaugeStarting}},
		{event.Event{Kind: event.KindNotice, Text: "hello"}, false,
			gauge{gen: 1, window: 200_000, at: 150_000, phase: gaugeStarting}},
		// Context 0 (the init line) says nothing yet.
		{with(event.Event{Kind: event.KindRaw, Generation: 1}), false,
			gauge{gen: 1, window: 200_000, at: 150_000, phase: gaugeStarting}},
		{with(event.Event{Kind: event.KindText, Generation: 1, Context: 40_000}), true,
			gauge{gen: 1, context: 40_000, window: 200_000, at: 150_000, phase: gaugeWorking}},
		{with(event.Event{Kind: event.KindTurn, Generation: 1, Context: 41_000, CostUSD: 0.2}), true,
			gauge{gen: 1, context: 41_000, window: 200_000, at: 150_000, cost: 0.2, phase: gaugeWorking, done: true}},
		{with(event.Event{Kind: event.KindHandoff, Phase: event.PhaseWriting, Generation: 1, Context: 152_000, CostUSD: 0.2}), true,
			gauge{gen: 1, context: 152_000, window: 200_000, at: 150_000, cost: 0.2, phase: gaugeWriting}},
		{with(event.Event{Kind: event.KindHandoff, Phase: event.PhaseDone, Generation: 1, Context: 152_000, CostUSD: 0.3}), true,
			gauge{gen: 1, context: 152_000, window: 200_000, at: 150_000, cost: 0.3, phase: gaugeHandedOn}},
		// The new process forgets the old context but not the step's cost.
		{with(event.Event{Kind: event.KindGeneration, Generation: 2}), true,
			gauge{gen: 2, window: 200_000, at: 150_000, cost: 0.3, phase: gaugeStarting}},
		{with(event.Event{Kind: event.KindSession, Generation: 2, Context: 21_000, CostUSD: 0.3}), true,
			gauge{gen: 2, context: 21_000, window: 200_000, at: 150_000, cost: 0.3, phase: gaugeWorking}},
	}
	var g gauge
	for i, s := range steps {
		if changed := g.update(s.ev); changed != s.changed {
			t.Errorf("step %d (%s): changed = %v, want %v", i, s.ev.Kind, changed, s.changed)
		}
		if g != s.want {
			t.Fatalf("step %d (%s): gauge %+v, want %+v", i, s.ev.Kind, g, s.want)
		}
	}
}

func TestClip(t *testing.T) {
	tests := []struct {
		s    string
		n    int
		want string
	}{
		{"gen 1 · context", 0, "gen 1 · context"},
		{"gen 1 · context", 15, "gen 1 · context"},
		{"gen 1 · context", 8, "gen 1 ·…"},
		{"第 2 代 · 上下文", 9, "第 2 代 …"}, // 第 and 代 take two columns each
		{"第 2 代 · 上下文", 6, "第 2 …"},
		{"第 2 代 · 上下文", 7, "第 2 …"}, // 代 would take the last two
		{"上下文", 4, "上…"},
	}
	for _, tt := range tests {
		got := clip(tt.s, tt.n)
		if got != tt.want {
			t.Errorf("clip(%q, %d) = %q, want %q", tt.s, tt.n, got, tt.want)
		}
		if tt.n > 0 && columns(got) > tt.n {
			t.Errorf("clip(%q, %d) takes %d columns", tt.s, tt.n, columns(got))
		}
	}
}
