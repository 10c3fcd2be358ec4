package handoffwriter

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestDegraded(t *testing.T) {
	// 1199 ASCII runes then 4-byte emoji and 3-byte CJK: a cut at 1200 bytes
	// would split the emoji.
	long := strings.Repeat("a", 1199) + "😀汉字" + strings.Repeat("字", 50)
	cjk := strings.Repeat("汉字🚧", 500) // 1500 runes, 5000 bytes
	tests := []struct {
		name, step, task, why string
		scene                 string
	}{
		{"short task", "build", "make the build pass", "", "make the build pass"},
		{"with why", "build", "make the build pass", "network: connection reset", "make the build pass"},
		{"multi-line why is flattened", "s", "t", "model said\n\n  nothing useful", "t"},
		{"cut inside emoji by bytes", "s", long, "", strings.Repeat("a", 1199) + "😀"},
		{"cjk", "干活", cjk, "parsed doc misses doing", strings.Repeat("汉字🚧", 400)},
		{"exactly 1200", "s", strings.Repeat("字", 1200), "", strings.Repeat("字", 1200)},
		{"empty task", "s", "", "", ""},
		{"surrounding space trimmed", "s", "\n  task  \n", "", "task"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := Degraded(tt.step, tt.task, tt.why)
			if h.Step != tt.step {
				t.Errorf("Step = %q", h.Step)
			}
			if !strings.HasPrefix(h.Doing, DegradedMarker+" ") || !h.IsDegraded() {
				t.Errorf("Doing = %q, want it to open with the marker", h.Doing)
			}
			why := strings.Join(strings.Fields(tt.why), " ")
			if why != "" && !strings.Contains(h.Doing, why) {
				t.Errorf("Doing = %q, lacks why %q", h.Doing, why)
			}
			if strings.Contains(h.Doing, "\n") {
				t.Errorf("Doing spans lines: %q", h.Doing)
			}
			if !h.Complete() {
				t.Errorf("degraded handoff should be complete, missing %v", h.Missing())
			}
			if h.Scene != tt.scene {
				t.Errorf("Scene has %d runes (%q…), want %d", utf8.RuneCountInString(h.Scene), firstRunes(h.Scene, 20), utf8.RuneCountInString(tt.scene))
			}
			if !utf8.ValidString(h.Scene) {
				t.Errorf("Scene is not valid UTF-8")
			}
			if h.Decided != "" || h.Deadends != "" {
				t.Errorf("degraded handoff invents decided/deadends: %+v", h)
			}
			back := Parse(h.Markdown())
			if !back.IsDegraded() || !back.Complete() || back.Doing != h.Doing || back.Next != h.Next {
				t.Errorf("degraded handoff does not survive the file: %+v", back)
			}
		})
	}
}

func TestDegradedWhyIsBounded(t *testing.T) {
	h := Degraded("s", "t", strings.Repeat("错", 5000))
	if n := utf8.RuneCountInString(h.Doing); n > 500 {
		t.Errorf("Doing has %d runes", n)
	}
}

func TestDegradedTaskWithHeadingsAndOpenFence(t *testing.T) {
	task := "Fix the build.\n## Next steps\nrun make\n```sh\n" + strings.Repeat("x", 1300)
	h := Degraded("s", task, "")
	back := Parse(h.Markdown())
	if back.Next != h.Next || back.Doing != h.Doing {
		t.Errorf("the task's headings leaked into other sections: %+v", back)
	}
	if !strings.HasPrefix(back.Scene, "Fix the build.\n## Next steps\nrun make\n```sh\n") || !strings.HasSuffix(back.Scene, "\n```") {
		t.Errorf("scene = %q…%q", firstRunes(back.Scene, 60), back.Scene[len(back.Scene)-10:])
	}
}

func firstRunes(s string, n int) string { return cutRunes(s, n) }

func TestCutRunes(t *testing.T) {
	tests := []struct {
		s    string
		n    int
		want string
	}{
		{"", 3, ""},
		{"abc", 0, ""},
		{"abc", 3, "abc"},
		{"abcd", 3, "abc"},
		{"汉字🚧x", 3, "汉字🚧"},
		{"a\xffb", 2, "a\xff"}, // an invalid byte is one rune, kept as is
	}
	for _, tt := range tests {
		if got := cutRunes(tt.s, tt.n); got != tt.want {
			t.Errorf("cutRunes(%q, %d) = %q, want %q", tt.s, tt.n, got, tt.want)
		}
	}
}

func TestIsOverflow(t *testing.T) {
	tests := []struct {
		texts []string
		want  bool
	}{
		{nil, false},
		{[]string{""}, false},
		{[]string{"Prompt is too long"}, true}, // the harness's own line
		{[]string{`{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 250123 tokens > 200000 maximum"}}`}, true},
		{[]string{"PROMPT IS TOO LONG"}, true},
		{[]string{"Context length exceeded"}, true},
		{[]string{"error code: context_length_exceeded"}, true},
		{[]string{"This model's maximum context length is 8192 tokens"}, true},
		{[]string{"too many total text bytes: 9999999 > 9000000"}, true},
		{[]string{"input length and `max_tokens` exceed context limit: 197108 + 8192 > 200000"}, true},
		{[]string{"input length and max_tokens exceed context limit"}, true},
		{[]string{"terminal_reason: prompt_too_long"}, true},
		{[]string{"ok", "", "Prompt is too long"}, true}, // any of the texts
		{[]string{"rate limit exceeded", "overloaded_error"}, false},
		{[]string{"the prompt is long", "context length"}, false},
		{[]string{"max_tokens exceeded"}, false},
	}
	for _, tt := range tests {
		if got := IsOverflow(tt.texts...); got != tt.want {
			t.Errorf("IsOverflow(%q) = %v, want %v", tt.texts, got, tt.want)
		}
	}
}
