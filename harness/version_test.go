package harness

import "testing"

func TestVersions(t *testing.T) {
	for _, tc := range []struct {
		v             string
		newer, tested bool
	}{
		{"2.1.328", false, true},
		{"2.1.332 (Claude Code)", false, true},
		{"2.1.333", true, false},
		{"2.2.0", true, false},
		{"3.0.1 (Claude Code)", true, false},
		{"2.1.330", false, false},
		{"2.0.999", false, false},
		{"", false, false},
		{"2.1", false, false},
		{"2.1.x", false, false},
	} {
		if got := NewerThanTested(tc.v); got != tc.newer {
			t.Errorf("NewerThanTested(%q) = %v, want %v", tc.v, got, tc.newer)
		}
		if got := Tested(tc.v); got != tc.tested {
			t.Errorf("Tested(%q) = %v, want %v", tc.v, got, tc.tested)
		}
	}
	if !Tested(PinnedVersion) {
		t.Errorf("the pinned version %s is not among the tested %q", PinnedVersion, TestedVersions)
	}
}
