package console

import (
	"strings"
	"testing"

	"github.com/flowerhq/flower/event"
	"github.com/flowerhq/flower/handoffwriter"
	"github.com/flowerhq/flower/manifest"
)

// What a hostile workspace puts in text a person's terminal would act on:
// an OSC 52 clipboard write, a title change, a screen clear, the same as C1
// controls, a bidi override and a lone 8-bit CSI byte.
const (
	osc52 = "\x1b]52;c;cm0gLXJmIH4=\x07"
	title = "\x1b]0;pwned\x1b\\"
	clear = "\x1b[2J"
	c1CSI = "\u009b2J"
	bidi  = "\u202egnp.exe"
	lone  = "\x9b6n"
)

func TestEscape(t *testing.T) {
	tests := []struct{ in, want string }{
		{"plain 文字 text\n\tindented", "plain 文字 text\n\tindented"},
		{osc52, `\x1b]52;c;cm0gLXJmIH4=\x07`},
		{title, `\x1b]0;pwned\x1b\`},
		{"a" + clear + "b", `a\x1b[2Jb`},
		{"cr\roverwrite\b\x7f", `cr\x0doverwrite\x08\x7f`},
		{c1CSI, `\u009b2J`},
		{"\u009d0;t\u009c", `\u009d0;t\u009c`},
		{bidi, `\u202egnp.exe`},
		{"\u2066x\u2069\u200f\u061c", `\u2066x\u2069\u200f\u061c`},
		{lone, `\x9b6n`},
		{"", ""},
	}
	for _, tt := range tests {
		if got := Escape(tt.in); got != tt.want {
			t.Errorf("Escape(%q) = %q, want %q", tt.in, got, tt.want)
		}
		if got := Escape(Escape(tt.in)); got != Escape(tt.in) {
			t.Errorf("Escape is not idempotent on %q: %q", tt.in, got)
		}
	}
}

// hostile is every sequence above in one string.
var hostile = "x" + osc52 + title + clear + c1CSI + bidi + lone

// terminalSafe fails if out holds anything a terminal acts on but a
// newline or a tab.
func terminalSafe(t *testing.T, what, out string) {
	t.Helper()
	if i := firstUnsafe(out); i >= 0 {
		t.Errorf("%s holds a control sequence at %d: %q", what, i, out)
	}
	if !strings.Contains(out, `\x1b]52;`) {
		t.Errorf("%s lost the escaped text instead of showing it: %q", what, out)
	}
}

// Status lines in both languages, the job's output and the summary show
// what a workspace or model wrote, escaped.
func TestOutputsEscapeControlCharacters(t *testing.T) {
	h := handoffwriter.Parse("## doing\n" + hostile + "\n\n## next\n" + hostile + "\n")
	events := []event.Event{
		{Kind: event.KindNotice, Text: "notice " + hostile},
		{Kind: event.KindRetry, Text: "retry " + hostile},
		{Kind: event.KindHandoff, Phase: event.PhaseDone, Context: 155000, Window: 200000, Handoff: &h, Path: "/ws/" + hostile},
	}
	for _, lang := range []Lang{LangZh, LangEn} {
		for _, ev := range events {
			var b strings.Builder
			NewStatus(&b, lang).Handle(ev)
			terminalSafe(t, string(lang)+" status line of "+string(ev.Kind), b.String())
			b.Reset()
			l := NewLive(&b, LiveOptions{Lang: lang})
			l.Handle(ev)
			l.Close()
			terminalSafe(t, string(lang)+" live line of "+string(ev.Kind), b.String())
		}
	}
	var b strings.Builder
	o := NewOutput(&b)
	o.Handle(event.Event{Kind: event.KindText, Text: "text " + hostile})
	o.Handle(event.Event{Kind: event.KindTool, Tool: "Bash" + clear, Input: `{"command":"` + hostile + `"}`})
	terminalSafe(t, "output", b.String())
	b.Reset()
	Summary(&b, &manifest.StepResult{Name: "step" + hostile, Status: manifest.StatusSucceeded, HandoffPath: "/ws/" + hostile}, "/ws/.flower/runs/r")
	terminalSafe(t, "summary", b.String())
}
