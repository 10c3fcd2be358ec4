package policy

import (
	"strings"
	"testing"
)

func TestParseCompactMode(t *testing.T) {
	tests := []struct {
		in      string
		want    CompactMode
		wantErr bool
	}{
		{"", CompactUnset, false},
		{"no_summary", CompactNoSummary, false},
		{"auto", CompactAuto, false},
		{"Auto", "", true},
		{"off", "", true},
		{" auto", "", true},
	}
	for _, tt := range tests {
		got, err := ParseCompactMode(tt.in)
		if tt.wantErr {
			if err == nil {
				t.Errorf("ParseCompactMode(%q) = %q, want an error", tt.in, got)
				continue
			}
			for _, v := range []string{"no_summary", "auto"} {
				if !strings.Contains(err.Error(), v) {
					t.Errorf("ParseCompactMode(%q) error %q does not list %q", tt.in, err, v)
				}
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("ParseCompactMode(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
}

func TestEffective(t *testing.T) { // DESIGN.md «Auto-compact off»
	tests := []struct {
		spec    CompactMode
		handoff bool
		want    CompactMode
	}{
		{CompactUnset, true, CompactNoSummary},     // handoff forces it off
		{CompactAuto, true, CompactAuto},           // explicit auto is respected
		{CompactNoSummary, true, CompactNoSummary}, // explicit, same as forced
		{CompactUnset, false, CompactUnset},        // no handoff: the harness's own way
		{CompactAuto, false, CompactAuto},
		{CompactNoSummary, false, CompactNoSummary},
	}
	for _, tt := range tests {
		if got := tt.spec.Effective(tt.handoff); got != tt.want {
			t.Errorf("Effective(%q, %v) = %q, want %q", tt.spec, tt.handoff, got, tt.want)
		}
	}
}
