package handoffwriter

import (
	"slices"
	"strings"
	"testing"
)

func TestSections(t *testing.T) {
	want := []Section{
		{"doing", "现在在做", "Doing"},
		{"decided", "已定的事", "Decided"},
		{"deadends", "走不通的", "Dead ends"},
		{"next", "下一步", "Next"},
		{"scene", "现场", "Scene"},
	}
	if !slices.Equal(Sections, want) {
		t.Fatalf("Sections = %v, want %v", Sections, want)
	}
	if !slices.Equal(Required, []string{"doing", "next"}) {
		t.Fatalf("Required = %v", Required)
	}
	if DegradedMarker != "[降级:交接没写成]" {
		t.Fatalf("DegradedMarker = %q", DegradedMarker)
	}
}

func TestGet(t *testing.T) {
	h := Handoff{Step: "s", Doing: "a", Decided: "b", Deadends: "c", Next: "d", Scene: "e"}
	for key, want := range map[string]string{
		"doing": "a", "decided": "b", "deadends": "c", "next": "d", "scene": "e",
		"step": "", "Doing": "", "": "",
	} {
		if got := h.Get(key); got != want {
			t.Errorf("Get(%q) = %q, want %q", key, got, want)
		}
	}
}

func TestMissingCompleteFilled(t *testing.T) {
	tests := []struct {
		name    string
		h       Handoff
		missing []string
		filled  []string
	}{
		{"empty", Handoff{}, []string{"doing", "next"}, nil},
		{"step alone fills nothing", Handoff{Step: "build"}, []string{"doing", "next"}, nil},
		{"required only", Handoff{Doing: "x", Next: "y"}, nil, []string{"doing", "next"}},
		{"optional only", Handoff{Decided: "x", Deadends: "y", Scene: "z"}, []string{"doing", "next"}, []string{"decided", "deadends", "scene"}},
		{"blank is missing", Handoff{Doing: " \n\t", Next: "y"}, []string{"doing"}, []string{"next"}},
		{"next missing", Handoff{Doing: "x", Deadends: "d"}, []string{"next"}, []string{"doing", "deadends"}},
		{"all", Handoff{Doing: "a", Decided: "b", Deadends: "c", Next: "d", Scene: "e"}, nil, []string{"doing", "decided", "deadends", "next", "scene"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.h.Missing(); !slices.Equal(got, tt.missing) {
				t.Errorf("Missing() = %v, want %v", got, tt.missing)
			}
			if got, want := tt.h.Complete(), len(tt.missing) == 0; got != want {
				t.Errorf("Complete() = %v, want %v", got, want)
			}
			if got := tt.h.Filled(); !slices.Equal(got, tt.filled) {
				t.Errorf("Filled() = %v, want %v", got, tt.filled)
			}
		})
	}
}

func TestIsDegraded(t *testing.T) {
	tests := []struct {
		h    Handoff
		want bool
	}{
		{Handoff{Doing: DegradedMarker + " why"}, true},
		{Handoff{Doing: "note: " + DegradedMarker}, true},
		{Handoff{Doing: "working on the Makefile"}, false},
		{Handoff{Doing: "[降级]"}, false},
		{Handoff{Scene: DegradedMarker}, false}, // only doing counts
		{Degraded("s", "task", ""), true},
	}
	for _, tt := range tests {
		if got := tt.h.IsDegraded(); got != tt.want {
			t.Errorf("IsDegraded(%+v) = %v, want %v", tt.h, got, tt.want)
		}
	}
}

func TestMarkdownLayout(t *testing.T) {
	h := Handoff{
		Step:    "干活",
		Doing:   "在给 Makefile 加 macOS 垫片头。",
		Decided: "不改业务源码 —— 用户明确说过边界。\n- 走 Makefile 生成 shim",
		Next:    "  在干净 clone 上跑一次 make。\n",
	}
	md := h.Markdown()
	lines := strings.Split(md, "\n")
	if lines[0] != "# 交接 · 干活" {
		t.Errorf("title = %q", lines[0])
	}
	if !strings.HasSuffix(md, "\n") || strings.HasSuffix(md, "\n\n") {
		t.Errorf("want exactly one trailing newline: %q", md[len(md)-5:])
	}
	// Headings appear once each, in order, each with both labels.
	at := -1
	for _, s := range Sections {
		i := slices.Index(lines, "## "+s.Zh+" ("+s.Key+")")
		if i <= at {
			t.Fatalf("heading for %s at line %d, previous at %d:\n%s", s.Key, i, at, md)
		}
		at = i
	}
	// Each body sits under its heading; blank ones read (空); text is trimmed.
	for _, s := range Sections {
		body := strings.TrimSpace(h.Get(s.Key))
		if body == "" {
			body = "(空)"
		}
		if !strings.Contains(md, s.Heading()+"\n\n"+body+"\n") {
			t.Errorf("section %s: body %q not under its heading:\n%s", s.Key, body, md)
		}
	}
	if strings.Count(md, "干活") != 1 {
		t.Errorf("step should appear only in the title:\n%s", md)
	}
}

func TestMarkdownTitle(t *testing.T) {
	tests := []struct{ step, title string }{
		{"", "# 交接"},
		{"   ", "# 交接"},
		{"build", "# 交接 · build"},
		{"two\nlines\r\n## 下一步", "# 交接 · two lines ## 下一步"}, // a step cannot inject a heading
	}
	for _, tt := range tests {
		md := Handoff{Step: tt.step, Doing: "d", Next: "n"}.Markdown()
		if first, _, _ := strings.Cut(md, "\n"); first != tt.title {
			t.Errorf("step %q: title %q, want %q", tt.step, first, tt.title)
		}
		if got := Parse(md); got != (Handoff{Doing: "d", Next: "n"}) {
			t.Errorf("step %q: parsed back to %+v", tt.step, got)
		}
	}
}

func TestMarkdownEscapesWhatWouldBreakIt(t *testing.T) {
	tests := []struct {
		name, body, written string
	}{
		{"heading line", "see\n## Next steps\nend", "see\n\\## Next steps\nend"},
		{"bold heading line", "**Scene**", "\\**Scene**"},
		{"escaped line stacks", "\\## 下一步", "\\\\## 下一步"},
		{"headings inside a fence are left alone", "```sh\n# next: run make\n```", "```sh\n# next: run make\n```"},
		{"unknown heading left alone", "### Details\nx", "### Details\nx"},
		{"unclosed fence closed", "````go\nfunc f()", "````go\nfunc f()\n````"},
		{"crlf normalised", "a\r\nb\rc", "a\nb\nc"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			md := Handoff{Deadends: tt.body}.Markdown()
			want := Sections[2].Heading() + "\n\n" + tt.written + "\n\n" + Sections[3].Heading()
			if !strings.Contains(md, want) {
				t.Errorf("want %q in:\n%s", want, md)
			}
		})
	}
}
