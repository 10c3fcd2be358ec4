package policy

import (
	"errors"
	"strings"
	"testing"
)

func TestDefault(t *testing.T) { // DESIGN.md «Policy»
	tests := []struct {
		name   string
		window int
		want   HandoffPolicy
	}{
		{"no guess", 0, HandoffPolicy{Enabled: true, Window: 1_000_000, Headroom: 50_000, MaxGenerations: 8}},
		{"a guess", 200_000, HandoffPolicy{Enabled: true, Window: 200_000, Headroom: 50_000, MaxGenerations: 8}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Default(tt.window); got != tt.want {
				t.Errorf("Default = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestThresholds(t *testing.T) { // DESIGN.md «Thresholds»
	tests := []struct {
		window, headroom int
		at, warnAt       int
	}{
		{200_000, 50_000, 150_000, 130_000}, // the scale drawing in DESIGN.md «Thresholds»
		{1_000_000, 50_000, 950_000, 930_000},
		{70_000, 50_000, 20_000, 1_000},   // warn floor: 20k-20k = 0
		{60_000, 50_000, 10_000, 1_000},   // at exactly at its floor
		{55_000, 50_000, 10_000, 1_000},   // at floor: 5k -> 10k
		{30_000, 50_000, 10_000, 1_000},   // window below headroom
		{80_500, 50_000, 30_500, 10_500},  // no floor involved
		{71_000, 50_000, 21_000, 1_000},   // at-20k = 1000, equal to the floor
		{72_000, 50_000, 22_000, 2_000},   // just above the warn floor
		{200_000, 0, 200_000, 180_000},    // raw zero headroom is not defaulted here
		{200_000, 195_000, 10_000, 1_000}, // huge headroom
	}
	for _, tt := range tests {
		p := HandoffPolicy{Enabled: true, Window: tt.window, Headroom: tt.headroom}
		if got := p.At(); got != tt.at {
			t.Errorf("window %d headroom %d: At = %d, want %d", tt.window, tt.headroom, got, tt.at)
		}
		if got := p.WarnAt(); got != tt.warnAt {
			t.Errorf("window %d headroom %d: WarnAt = %d, want %d", tt.window, tt.headroom, got, tt.warnAt)
		}
	}
}

func TestResolve(t *testing.T) { // DESIGN.md «Policy»
	const haiku = 200_000 // the front's guess
	tests := []struct {
		name    string
		setting *HandoffPolicy
		want    HandoffPolicy
		wantErr string
	}{
		{name: "nil", setting: nil, want: HandoffPolicy{Enabled: true, Window: 200_000, Headroom: 50_000, MaxGenerations: 8}},
		{name: "on", setting: Switch(true), want: HandoffPolicy{Enabled: true, Window: 200_000, Headroom: 50_000, MaxGenerations: 8}},
		{name: "off", setting: Switch(false), want: HandoffPolicy{Enabled: false, Window: 200_000, Headroom: 50_000, MaxGenerations: 8}},
		{name: "window only", setting: &HandoffPolicy{Enabled: true, Window: 300_000},
			want: HandoffPolicy{Enabled: true, Window: 300_000, Headroom: 50_000, MaxGenerations: 8}},
		{name: "headroom and generations", setting: &HandoffPolicy{Enabled: true, Headroom: 60_000, MaxGenerations: 3},
			want: HandoffPolicy{Enabled: true, Window: 200_000, Headroom: 60_000, MaxGenerations: 3}},
		{name: "enabled taken as given", setting: &HandoffPolicy{Window: 300_000},
			want: HandoffPolicy{Enabled: false, Window: 300_000, Headroom: 50_000, MaxGenerations: 8}},
		{name: "all set", setting: &HandoffPolicy{Enabled: true, Window: 123_000, Headroom: 4_000, MaxGenerations: 2},
			want: HandoffPolicy{Enabled: true, Window: 123_000, Headroom: 4_000, MaxGenerations: 2}},
		{name: "negative window", setting: &HandoffPolicy{Enabled: true, Window: -1}, wantErr: "window is negative"},
		{name: "negative headroom", setting: &HandoffPolicy{Headroom: -5}, wantErr: "headroom is negative"},
		{name: "negative generations", setting: &HandoffPolicy{MaxGenerations: -2}, wantErr: "max generations is negative"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Resolve(tt.setting, haiku)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Resolve(%+v) error = %v, want one containing %q", tt.setting, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Resolve(%+v): %v", tt.setting, err)
			}
			if got != tt.want {
				t.Errorf("Resolve(%+v) = %+v, want %+v", tt.setting, got, tt.want)
			}
		})
	}
}

func TestResolveDoesNotModifyCallersPolicy(t *testing.T) {
	p := &HandoffPolicy{Enabled: true}
	if _, err := Resolve(p, 0); err != nil {
		t.Fatal(err)
	}
	if *p != (HandoffPolicy{Enabled: true}) {
		t.Errorf("caller's policy changed to %+v", *p)
	}
}

func TestHandoffDue(t *testing.T) { // DESIGN.md «Threshold path», «Writing turn»
	on := HandoffPolicy{Enabled: true, Window: 200_000, Headroom: 50_000, MaxGenerations: 8} // at 150k
	off := on
	off.Enabled = false
	tiny := HandoffPolicy{Enabled: true, Window: 20_000, Headroom: 50_000} // at floored to 10k

	tests := []struct {
		name string
		s    State
		want bool
	}{
		{"at threshold", State{Policy: on, Context: 150_000, SessionID: "s1"}, true},
		{"above threshold", State{Policy: on, Context: 190_000, SessionID: "s1"}, true},
		{"one below threshold", State{Policy: on, Context: 149_999, SessionID: "s1"}, false},
		{"disabled", State{Policy: off, Context: 190_000, SessionID: "s1"}, false},
		{"writing turn is exempt", State{Policy: on, WritingTurn: true, Context: 190_000, SessionID: "s1"}, false},
		{"no session id yet", State{Policy: on, Context: 190_000}, false},
		{"warned does not matter", State{Policy: on, Context: 150_000, SessionID: "s1", Warned: true}, true},
		{"floor 10k reached", State{Policy: tiny, Context: 10_000, SessionID: "s1"}, true},
		{"below floor 10k", State{Policy: tiny, Context: 9_999, SessionID: "s1"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := HandoffDue(tt.s); got != tt.want {
				t.Errorf("HandoffDue(%+v) = %v, want %v", tt.s, got, tt.want)
			}
		})
	}
}

func TestNearDue(t *testing.T) { // DESIGN.md «Near notice»
	on := HandoffPolicy{Enabled: true, Window: 200_000, Headroom: 50_000} // warn 130k, at 150k
	off := on
	off.Enabled = false
	tiny := HandoffPolicy{Enabled: true, Window: 20_000, Headroom: 50_000} // warn floored to 1k

	tests := []struct {
		name string
		s    State
		want bool
	}{
		{"at warn line", State{Policy: on, Context: 130_000}, true},
		{"between lines", State{Policy: on, Context: 149_999, SessionID: "s1"}, true},
		{"below warn line", State{Policy: on, Context: 129_999}, false},
		{"already warned this generation", State{Policy: on, Context: 140_000, Warned: true}, false},
		{"jumped past handoff line", State{Policy: on, Context: 150_000, SessionID: "s1"}, false},
		{"disabled", State{Policy: off, Context: 140_000}, false},
		{"writing turn", State{Policy: on, WritingTurn: true, Context: 140_000}, false},
		{"warn floor 1k reached", State{Policy: tiny, Context: 1_000}, true},
		{"below warn floor", State{Policy: tiny, Context: 999}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := NearDue(tt.s); got != tt.want {
				t.Errorf("NearDue(%+v) = %v, want %v", tt.s, got, tt.want)
			}
		})
	}
}

// TestNearOncePerGeneration walks the rounds of two generations the way a
// supervisor would and counts notices (DESIGN.md «Near notice»: one per
// generation, not one per message).
func TestNearOncePerGeneration(t *testing.T) {
	p := HandoffPolicy{Enabled: true, Window: 200_000, Headroom: 50_000}
	s := State{Policy: p, SessionID: "s1"}
	var near, handoffs int
	gen := func(rounds []int) {
		for _, ctx := range rounds {
			s.Context = ctx
			if NearDue(s) {
				near++
				s.Warned = true
			}
			if HandoffDue(s) {
				handoffs++
				s = State{Policy: p, SessionID: "s2"} // a new generation resets Warned
				return
			}
		}
	}
	gen([]int{30_000, 120_000, 130_000, 135_000, 140_000, 145_000, 152_000})
	gen([]int{40_000, 131_000, 149_000, 150_500})
	if near != 2 || handoffs != 2 {
		t.Errorf("near notices = %d, handoffs = %d; want 2 and 2", near, handoffs)
	}
}

func TestGenerationLimitError(t *testing.T) { // DESIGN.md «Runaway guard»
	tests := []struct {
		name     string
		err      *GenerationLimitError
		contains []string
		absent   []string
	}{
		{
			name:     "floor unknown",
			err:      &GenerationLimitError{Max: 8, Window: 40_000, At: 10_000},
			contains: []string{"handoff generation limit reached", "8 handoffs", "window 40K", "handoff at 10K", "start-up floor", "~34k", "--window", "--no-handoff"},
			absent:   []string{"measured at"},
		},
		{
			name:     "floor known",
			err:      &GenerationLimitError{Max: 3, Window: 60_000, At: 10_000, Floor: 34_200},
			contains: []string{"3 handoffs", "window 60K", "handoff at 10K", "floor measured at 34.2K", "--window", "--no-handoff"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var err error = tt.err
			msg := err.Error()
			for _, s := range tt.contains {
				if !strings.Contains(msg, s) {
					t.Errorf("message %q lacks %q", msg, s)
				}
			}
			for _, s := range tt.absent {
				if strings.Contains(msg, s) {
					t.Errorf("message %q has %q", msg, s)
				}
			}
			wrapped := errors.Join(errors.New("step x"), err)
			if !errors.Is(wrapped, ErrGenerationLimit) {
				t.Error("errors.Is(wrapped, ErrGenerationLimit) = false")
			}
			var gl *GenerationLimitError
			if !errors.As(wrapped, &gl) || gl.Max != tt.err.Max {
				t.Errorf("errors.As gave %+v", gl)
			}
			if errors.Is(err, errors.New("handoff generation limit reached")) {
				t.Error("Is matched an unrelated error with the same text")
			}
		})
	}
}

// The limit's advice names the settings where flower runs: the flags by
// default, the environment when an application runs flower as its harness.
func TestGenerationLimitAdviceNamesTheKnobs(t *testing.T) {
	for _, tc := range []struct {
		knobs       Knobs
		window, off string
	}{
		{Knobs{}, "--window", "--no-handoff"},
		{Knobs{Window: "FLOWER_WINDOW", Off: "FLOWER_HANDOFF=off"}, "FLOWER_WINDOW", "FLOWER_HANDOFF=off"},
	} {
		for _, futile := range []bool{false, true} {
			msg := (&GenerationLimitError{Futile: futile, Max: 8, Window: 200_000, At: 150_000, Floor: 160_000, Knobs: tc.knobs}).Error()
			if !strings.Contains(msg, "raise the window ("+tc.window+") or use "+tc.off) {
				t.Errorf("futile %v, knobs %+v: %s", futile, tc.knobs, msg)
			}
		}
	}
}
