package handoffwriter

import (
	"strings"
	"testing"
	"unicode"
)

func TestHandoffPromptSubstitution(t *testing.T) {
	tests := []struct {
		used, window int
		want         []string
	}{
		{152_000, 200_000, []string{"152,000 of 200,000 tokens"}},
		{949_999, 1_000_000, []string{"949,999 of 1,000,000 tokens"}},
		{0, 999, []string{"0 of 999 tokens"}},
		{-123_456, 10_000, []string{"-123,456 of 10,000 tokens"}},
	}
	for _, tt := range tests {
		p := HandoffPrompt(tt.used, tt.window)
		for _, w := range tt.want {
			if !strings.Contains(p, w) {
				t.Errorf("HandoffPrompt(%d, %d) lacks %q", tt.used, tt.window, w)
			}
		}
		if strings.Contains(p, "{used}") || strings.Contains(p, "{window}") {
			t.Errorf("HandoffPrompt(%d, %d) left a placeholder", tt.used, tt.window)
		}
		if !strings.Contains(p, PromptTag) {
			t.Errorf("HandoffPrompt(%d, %d) lacks the tag", tt.used, tt.window)
		}
	}
}

func TestPromptTemplateContent(t *testing.T) {
	for _, ph := range []string{"{used}", "{window}"} {
		if strings.Count(PromptTemplate, ph) != 1 {
			t.Errorf("template should hold %s once", ph)
		}
	}
	lower := strings.ToLower(PromptTemplate)
	for _, want := range []string{
		PromptTag,
		"do not call any tool",
		"handoff document only",
		"doing and next are required",
		"write (空) under its heading",
		"why",                                   // decided carries why
		"not their contents",                    // scene is pointers
		"optimism bias",                         // DESIGN.md «Dead ends»
		"record what they did, not what failed", // DESIGN.md «Dead ends»
		"an hour went into a compile problem",   // its measured cost
		"walked the same loop again",
		"every approach you tried that did not work, and why",
	} {
		if !strings.Contains(lower, strings.ToLower(want)) {
			t.Errorf("template lacks %q", want)
		}
	}
	// The headings shown are exactly the ones Markdown writes, in order.
	var shown []string
	for _, line := range strings.Split(PromptTemplate, "\n") {
		if strings.HasPrefix(line, "## ") {
			shown = append(shown, line)
		}
	}
	if len(shown) != len(Sections) {
		t.Fatalf("template shows %d headings, want %d", len(shown), len(Sections))
	}
	for i, s := range Sections {
		if shown[i] != s.Heading() {
			t.Errorf("heading %d = %q, want %q", i, shown[i], s.Heading())
		}
	}
	// Dead ends get a paragraph of their own (DESIGN.md «Dead ends»).
	var deadends int
	for _, para := range strings.Split(PromptTemplate, "\n\n") {
		if strings.Contains(para, "optimism bias") && strings.Contains(para, "compile problem") && !strings.Contains(para, "\n- ") {
			deadends++
		}
	}
	if deadends != 1 {
		t.Errorf("want one paragraph on dead ends, found %d", deadends)
	}
	// English apart from the labels it must show.
	rest := PromptTemplate
	for _, s := range Sections {
		rest = strings.ReplaceAll(rest, s.Zh, "")
	}
	rest = strings.ReplaceAll(rest, "(空)", "")
	for _, r := range rest {
		if unicode.Is(unicode.Han, r) {
			t.Fatalf("template has Chinese outside the labels: %q", r)
		}
	}
}

func TestPromptBlock(t *testing.T) {
	tests := []struct {
		name       string
		h          Handoff
		incomplete bool
	}{
		{"written", Handoff{Step: "build", Doing: "shim", Next: "run make"}, false},
		{"degraded", Degraded("build", "make the build pass on macOS", "network"), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := tt.h.PromptBlock()
			opening, _, _ := strings.Cut(p, "\n\n")
			for _, want := range []string{"taking over", "previous session of yourself", "context window ran out", "Everything you need", "Do not go back to ask a person for background"} {
				if !strings.Contains(opening, want) {
					t.Errorf("opening lacks %q: %q", want, opening)
				}
			}
			md := tt.h.Markdown()
			i := strings.Index(p, md)
			if i < 0 {
				t.Fatalf("prompt block lacks the markdown:\n%s", p)
			}
			if tail := strings.TrimSpace(p[i+len(md):]); tail != "Start with the `next` section (下一步)." {
				t.Errorf("after the markdown: %q", tail)
			}
			before := p[:i]
			hasNote := strings.Contains(before, "This handoff is incomplete") && strings.Contains(before, "Inspect the workspace yourself")
			if hasNote != tt.incomplete {
				t.Errorf("incomplete note present = %v, want %v:\n%s", hasNote, tt.incomplete, before)
			}
			if got := Parse(p); got.Doing != tt.h.Doing || got.Next != tt.h.Next {
				t.Errorf("the block's document parses to %+v", got)
			}
		})
	}
}
