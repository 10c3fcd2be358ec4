package handoffwriter

import (
	"strings"
	"testing"
)

// A handoff past the cap is cut to it: still complete, parsed back to the
// same sections, each cut one marked with the sizes; one within the cap is
// left whole.
func TestFit(t *testing.T) {
	small := Handoff{Step: "main", Doing: "doing", Next: "next"}
	if got, cut := small.Fit(1 << 10); cut || got != small {
		t.Errorf("a small handoff was cut: %+v", got)
	}
	big := Handoff{Step: "main", Doing: "doing it\n" + strings.Repeat("行 line of work\n", 1<<19), Decided: "keep X",
		Next: strings.Repeat("n", 3<<20), Scene: "scene"}
	const limit = 256 << 10
	got, cut := big.Fit(limit)
	md := got.Markdown()
	if !cut || len(md) > limit || len(md) < limit*9/10 {
		t.Fatalf("cut %v to %d bytes, want close under %d", cut, len(md), limit)
	}
	back := Parse(md)
	if !back.Complete() || back.Decided != "keep X" || back.Scene != "scene" {
		t.Errorf("the cut handoff does not parse back whole: missing %v, decided %q, scene %q", back.Missing(), back.Decided, back.Scene)
	}
	for _, sec := range []string{back.Doing, back.Next} {
		if strings.Count(sec, CutMarker) != 1 || !strings.Contains(sec, "the handoff was 11.5 MiB, over the cap of 256 KiB") {
			t.Errorf("a cut section is not marked: …%q", sec[max(0, len(sec)-200):])
		}
	}
	if !strings.HasPrefix(back.Doing, "doing it\n行 line") || !strings.HasPrefix(back.Next, "nnnn") {
		t.Errorf("the cut sections lost their start")
	}
	if strings.ContainsRune(md, '\uFFFD') {
		t.Errorf("a character was cut in half")
	}
}
