package front

import (
	"strings"
	"testing"
)

func TestVersions(t *testing.T) {
	vs := Versions{"2.1.328", "2.1.332"}
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
		if got := vs.Newer(tc.v); got != tc.newer {
			t.Errorf("Newer(%q) = %v, want %v", tc.v, got, tc.newer)
		}
		if got := vs.Has(tc.v); got != tc.tested {
			t.Errorf("Has(%q) = %v, want %v", tc.v, got, tc.tested)
		}
		if line := vs.Untested("the CLI")(tc.v); (line != "") != tc.newer || (tc.newer && !strings.Contains(line, "the CLI "+tc.v+" is newer than the newest flower was tested on (2.1.332)")) {
			t.Errorf("Untested(%q) = %q", tc.v, line)
		}
	}
}
