package console

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/flowerhq/flower/event"
)

// beat is one moment of a scripted run: time passes, then an event arrives.
type beat struct {
	after time.Duration
	ev    event.Event
}

// twoGenerations is a run that hands off once: generation 1 works up to the
// threshold, writes its handoff, and generation 2 takes over.
func twoGenerations() []beat {
	g := func(kind event.Kind, gen, context int, cost float64) event.Event {
		return event.Event{Kind: kind, Step: "干活", Generation: gen, Context: context, CostUSD: cost,
			Window: 200_000, At: 150_000, WarnAt: 130_000}
	}
	text := func(gen, context int, cost float64, s string) event.Event {
		ev := g(event.KindText, gen, context, cost)
		ev.Text = s
		return ev
	}
	tool := func(gen, context int, cost float64, name, input string) event.Event {
		ev := g(event.KindTool, gen, context, cost)
		ev.Tool, ev.Input = name, input
		return ev
	}
	seed := seedEvents()
	done := seed[2]
	done.CostUSD = 0.42
	return []beat{
		{0, g(event.KindGeneration, 1, 0, 0)},
		{time.Second, g(event.KindRaw, 1, 0, 0)},
		{0, g(event.KindSession, 1, 0, 0)},
		{2 * time.Second, text(1, 21_000, 0, "Looking at the Makefile.")},
		{0, tool(1, 21_000, 0, "Read", `{"file_path":"Makefile"}`)},
		{5 * time.Second, text(1, 25_000, 0, "It needs a shim.")},            // within Every of the last gauge line
		{40 * time.Second, tool(1, 90_000, 0, "Bash", `{"command":"make"}`)}, // Every has passed
		{10 * time.Second, g(event.KindTurn, 1, 90_000, 0.31)},
		{40 * time.Second, g(event.KindRaw, 1, 90_000, 0.31)}, // nothing changed
		{time.Second, seed[0]},
		{time.Second, tool(1, 152_000, 0.31, "Edit", `{"file_path":"Makefile"}`)},
		{time.Second, seed[1]},
		{12 * time.Second, done},
		{time.Second, g(event.KindGeneration, 2, 0, 0)},
		{time.Second, text(2, 19_500, 0.42, "Reading the handoff.")}, // a new generation: at once
	}
}

// play runs the beats through a Live writing to stderr; stdout, when not
// nil, gets the job's lines through the Live's guard.
func play(opts LiveOptions, beats []beat, stderr, stdout *bytes.Buffer) *Live {
	now := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	opts.Now = func() time.Time { return now }
	l := NewLive(stderr, opts)
	var out *Output
	if stdout != nil {
		out = NewOutput(l.Guard(stdout))
	}
	for _, b := range beats {
		now = now.Add(b.after)
		l.Handle(b.ev)
		if out != nil {
			out.Handle(b.ev)
		}
	}
	return l
}

func TestLivePlain(t *testing.T) {
	for _, lang := range []Lang{LangZh, LangEn} {
		t.Run(string(lang), func(t *testing.T) {
			var stderr, stdout bytes.Buffer
			l := play(LiveOptions{Lang: lang, Home: "/home/a"}, twoGenerations(), &stderr, &stdout)
			l.Close()
			if strings.ContainsAny(stderr.String()+stdout.String(), "\r\x1b") {
				t.Errorf("control characters outside a terminal:\n%q", stderr.String())
			}
			golden(t, "live_plain_"+string(lang)+".golden", stderr.Bytes())
		})
	}
}

// TestLivePlainCadence checks which gauge lines a non-terminal gets: one at
// each generation's first measure, then at most one per Every, and none
// when nothing changed.
func TestLivePlainCadence(t *testing.T) {
	var stderr bytes.Buffer
	play(LiveOptions{Lang: LangEn, Every: 30 * time.Second}, twoGenerations(), &stderr, nil)
	var gauges []string
	for _, l := range strings.Split(stderr.String(), "\n") {
		if strings.HasPrefix(l, "gen ") {
			gauges = append(gauges, l)
		}
	}
	want := []string{
		"gen 1 · context 21.0K/200K · 129.0K to handoff · $0.00", // the generation's first measure
		"gen 1 · context 90.0K/200K · 60.0K to handoff · $0.00",  // 45 s later; 25.0K (5 s later) was skipped
		"gen 1 · context 90.0K/200K · 60.0K to handoff · $0.31",  // 51 s later: the cost moved
		"gen 2 · context 19.5K/200K · 130.5K to handoff · $0.42", // generation 2, at once
	}
	if strings.Join(gauges, "\n") != strings.Join(want, "\n") {
		t.Errorf("gauge lines:\n%s\nwant:\n%s", strings.Join(gauges, "\n"), strings.Join(want, "\n"))
	}
	// The generation-2 line comes after the takeover line, not before.
	if i, j := strings.Index(stderr.String(), "<- new session takes over"), strings.Index(stderr.String(), "gen 2 "); i < 0 || j < i {
		t.Errorf("gen 2 gauge before the takeover line:\n%s", stderr.String())
	}
}

func TestLiveTerminal(t *testing.T) {
	var screenBytes bytes.Buffer
	// stdout and stderr share one terminal, as they do when a person runs
	// flower.
	l := play(LiveOptions{Lang: LangZh, Terminal: true}, twoGenerations(), &screenBytes, &screenBytes)
	before := screen(screenBytes.String())
	l.Close()
	after := screen(screenBytes.String())
	golden(t, "live_terminal_zh.golden", visible(screenBytes.Bytes()))

	// What is left on screen is every status and stdout line, whole and in
	// order, and the gauge below them until Close takes it down.
	var want bytes.Buffer
	var plainStdout bytes.Buffer
	plainStatus := NewStatus(&want, LangZh)
	out := NewOutput(&plainStdout)
	for _, b := range twoGenerations() {
		plainStatus.Handle(b.ev)
		out.Handle(b.ev)
		want.Write(plainStdout.Bytes())
		plainStdout.Reset()
	}
	wantLines := strings.Split(want.String(), "\n") // ends in "": the cursor's line
	gaugeNow := "第 2 代 · 上下文 19.5K/200K · 距换代 130.5K · $0.42"
	if got, w := strings.Join(before, "\n"), strings.Join(wantLines[:len(wantLines)-1], "\n")+"\n"+gaugeNow; got != w {
		t.Errorf("screen before Close:\n%s\nwant:\n%s", got, w)
	}
	if got, w := strings.Join(after, "\n"), want.String(); got != w {
		t.Errorf("screen after Close:\n%s\nwant:\n%s", got, w)
	}
	// Every gauge drawn replaced the one before it on the same line.
	if n := strings.Count(screenBytes.String(), "\r第 "); n < 5 {
		t.Errorf("the gauge was drawn %d times, want it redrawn as the run moves", n)
	}
}

func TestLiveTerminalWidth(t *testing.T) {
	var b bytes.Buffer
	width := 30
	l := NewLive(&b, LiveOptions{Lang: LangEn, Terminal: true, Width: func() int { return width }})
	l.Handle(event.Event{Kind: event.KindText, Generation: 1, Context: 142_300, Window: 200_000, At: 150_000, CostUSD: 0.42})
	lines := screen(b.String())
	if got := lines[len(lines)-1]; columns(got) != width-1 || !strings.HasSuffix(got, "…") {
		t.Errorf("gauge %q (%d columns) on a %d-column terminal", got, columns(got), width)
	}
	width = 0 // unknown: not clipped
	l.Handle(event.Event{Kind: event.KindText, Generation: 1, Context: 142_400, Window: 200_000, At: 150_000, CostUSD: 0.42})
	lines = screen(b.String())
	if got := lines[len(lines)-1]; got != "gen 1 · context 142.4K/200K · 7.6K to handoff · $0.42" {
		t.Errorf("gauge %q with the width unknown", got)
	}
}

// TestLiveWriteHalfLine: a line written in pieces is not broken by a redraw.
func TestLiveWriteHalfLine(t *testing.T) {
	var b bytes.Buffer
	l := NewLive(&b, LiveOptions{Lang: LangEn, Terminal: true})
	l.Handle(event.Event{Kind: event.KindText, Generation: 1, Context: 50_000, Window: 200_000, At: 150_000})
	fmt.Fprint(l, "flower: step main done")
	l.Handle(event.Event{Kind: event.KindTurn, Generation: 1, Context: 51_000, Window: 200_000, At: 150_000, CostUSD: 1})
	fmt.Fprint(l, " · $1.00\n")
	lines := screen(b.String())
	if len(lines) != 2 || lines[0] != "flower: step main done · $1.00" || lines[1] != "gen 1 · context 51.0K/200K · 99.0K to handoff · $1.00" {
		t.Errorf("screen:\n%s", strings.Join(lines, "\n"))
	}
}

// TestLiveGuardPlain: outside a terminal the guard adds nothing.
func TestLiveGuardPlain(t *testing.T) {
	var stderr, stdout bytes.Buffer
	l := NewLive(&stderr, LiveOptions{})
	if w := l.Guard(&stdout); w != &stdout {
		t.Errorf("Guard wrapped the writer outside a terminal: %T", w)
	}
}

// visible spells out the terminal controls, so the golden file reads.
func visible(b []byte) []byte {
	return []byte(strings.NewReplacer(carriageReturn, "<CR>", clearToEOL, "<EL>").Replace(string(b)))
}

// screen is what a terminal shows after out: it interprets "\r", "\n" and
// clear-to-end-of-line, and fails on any other control sequence.
func screen(out string) []string {
	lines := [][]rune{nil}
	col := 0
	for i := 0; i < len(out); {
		cur := &lines[len(lines)-1]
		switch {
		case strings.HasPrefix(out[i:], clearToEOL):
			*cur = (*cur)[:min(col, len(*cur))]
			i += len(clearToEOL)
		case out[i] == '\r':
			col = 0
			i++
		case out[i] == '\n':
			lines = append(lines, nil)
			col = 0
			i++
		case out[i] == '\x1b':
			panic(fmt.Sprintf("unexpected control sequence at %d: %q", i, out[i:min(i+8, len(out))]))
		default:
			r, n := utf8.DecodeRuneInString(out[i:])
			if col < len(*cur) {
				(*cur)[col] = r
			} else {
				*cur = append(*cur, r)
			}
			col++
			i += n
		}
	}
	s := make([]string, len(lines))
	for i, l := range lines {
		s[i] = string(l)
	}
	return s
}
