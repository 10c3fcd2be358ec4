package interactive

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

// The end of Claude Code 2.1.328's output when it exits, byte for byte as a
// pty gave it (recorded against the scripted API): its last frame on the
// alternate screen, the terminal reset, then the goodbye on the person's
// screen.
const (
	harnessEnters   = "\x1b7\x1b[r\x1b8\x1b[?25h\x1b[?2004h\x1b[?2031h\x1b[?1004h\x1b]0;\xe2\x9c\xb3 Claude Code\x07\x1b[?1049h\x1b[2J\x1b[H"
	harnessLastDraw = "\x1b(B\x0f\x1b[?2004h\x1b[?1000h\x1b[?1002h\x1b[?1003h\x1b[?1006h\x1b[H\r\x1b[2C\x1b[39B\x1b[38;5;246mPress Ctrl-C again to exit\x1b[39m\x1b[K\x1b[40;1H\x1b[38;3H\x1b[?1006l\x1b[?1003l\x1b[?1002l\x1b[?1000l\x1b[?25h\x1b[?1004l\x1b[<u"
	harnessReset    = "\x1b[?1049l\x1b[>4m\x1b[>4m\x1b[<u\x1b[?2031l\x1b[?2004l\x1b(B\x0f\x1b[?1016l\x1b[?1006l\x1b[?1003l\x1b[?1002l\x1b[?1000l\x1b[?7h\x1b[?25h\x1b7\x1b[r\x1b8\x1b[?25h\x1b(B\x0f\x1b[?1016l\x1b[?1006l\x1b[?1003l\x1b[?1002l\x1b[?1000l\x1b[>4m\x1b[?1004l\x1b[?2031l\x1b[?2004l\x1b[?7h\x1b[<u\x1b[?25h\x1b7\x1b[r\x1b8\x1b]0;\a\x1b[2m\x1b[22m\r\n"
	goodbyeHeader   = "\x1b[2mResume this session with:\x1b[22m\r\n"
	goodbyeCommand  = "\x1b[2mclaude --resume f81ffbf7-133a-4df6-9af4-684774138c80\x1b[22m\r\n"
	harnessLast     = "\x1b[2m\x1b[22m\x1b[?25h"
)

// filterAll feeds chunks through a filter and returns what reached the
// screen, flushed.
func filterAll(t *testing.T, arm int, chunks ...string) string {
	t.Helper()
	var screen bytes.Buffer
	f := NewGoodbyeFilter(&screen)
	for i, c := range chunks {
		if i == arm {
			f.Arm()
		}
		n, err := f.Write([]byte(c))
		if err != nil || n != len(c) {
			t.Fatalf("Write = %d, %v; want %d, nil", n, err, len(c))
		}
	}
	if err := f.Flush(); err != nil {
		t.Fatal(err)
	}
	return screen.String()
}

// However the pty splits the harness's exit, the goodbye is dropped and
// every other byte reaches the screen in order.
func TestGoodbyeFilterDropsTheHarnessGoodbye(t *testing.T) {
	in := harnessEnters + harnessLastDraw + harnessReset + goodbyeHeader + goodbyeCommand + harnessLast
	want := harnessEnters + harnessLastDraw + harnessReset + harnessLast
	for _, arm := range []int{-1, 0} { // the person exits; flower stops it
		if got := filterAll(t, arm, in); got != want {
			t.Fatalf("arm %d: screen got\n%q\nwant\n%q", arm, got, want)
		}
		for i := 1; i < len(in); i++ {
			if got := filterAll(t, arm, in[:i], in[i:]); got != want {
				t.Fatalf("arm %d, split at %d: screen got\n%q\nwant\n%q", arm, i, got, want)
			}
		}
		bytewise := make([]string, len(in))
		for i := 0; i < len(in); i++ {
			bytewise[i] = in[i : i+1]
		}
		if got := filterAll(t, arm, bytewise...); got != want {
			t.Fatalf("arm %d, byte by byte: screen got\n%q", arm, got)
		}
	}
}

// What the harness draws while it runs passes untouched, even text that
// looks like a goodbye: only its exit text is read a line at a time.
func TestGoodbyeFilterLeavesTheRunningHarnessAlone(t *testing.T) {
	running := "claude --resume f81ffbf7-133a-4df6-9af4-684774138c80\r\nResume this session with:\r\n"
	for _, tc := range []struct {
		name   string
		arm    int
		chunks []string
	}{
		// The default renderer draws on the person's screen: only the
		// goodbye's two lines together are taken for it.
		{"before any alternate screen", -1, []string{running + "and then some\r\n"}},
		{"the header alone, then more", -1, []string{"x\r\n", goodbyeHeader, "\x1b[2mclaude code is still running\x1b[22m\r\n", "\x1b[3Gmore"}},
		{"on the alternate screen", -1, []string{harnessEnters, running}},
		{"on the alternate screen while flower stops it", 1, []string{harnessEnters, running}},
		// An editor opened from the harness: it leaves and re-enters.
		{"back on the alternate screen", -1, []string{harnessEnters, "\x1b[?1049l", "\x1b[?1049h", running}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := strings.Join(tc.chunks, "")
			if got := filterAll(t, tc.arm, tc.chunks...); got != want {
				t.Errorf("screen got %q, want %q", got, want)
			}
		})
	}
}

// The end of Claude Code 2.1.328's output when a person types /exit in its
// default renderer, which uses no alternate screen (recorded against the
// scripted API with "tui":"default"): its last frame on the person's
// screen, the terminal reset, then the goodbye.
const (
	defaultLastDraw = "\x1b[2D\x1b[3B\r\x1b[2C\x1b[3A\x1b[38;5;153m/exit\x1b[39m\x1b[7m \r\x1b[2C\x1b[2B\x1b[27m\x1b[38;5;153m\xe2\x9d\xaf /\x1b[1mexit\x1b[22m                       \x1b[1mExit\x1b[22m the CLI\x1b[39m\r\r\n\x1b[3G\x1b[38;5;246m \x1b[5G/context\x1b[33GShow\x1b[38Gwhat\x1b[43Gfills\x1b[49Gthe\x1b[53Gcontext\x1b[39m\r\r\n\r\r\n\r\r\n\x1b[7C\x1b[22A\x1b[?1006l\x1b[?1003l\x1b[?1002l\x1b[?1000l\x1b[7D\x1b[22B\x1b[?1004l\x1b[>4m\x1b[<u\x1b[?2031l\x1b[?2004l\x1b(B\x0f\x1b[?1016l\x1b[?1006l\x1b[?1003l\x1b[?1002l\x1b[?1000l\x1b[?7h\x1b[?25h\x1b7\x1b[r\x1b8\x1b]0;\a\x1b[2m\x1b[22m\r\n"
	defaultLast     = "\x1b[2m\x1b[22m"
)

// In the default renderer the person's /exit prints the goodbye on the
// person's screen, with no alternate screen to leave: it is dropped all the
// same, however the pty splits it, and the rest reaches the screen.
func TestGoodbyeFilterDropsTheGoodbyeWithoutAlternateScreen(t *testing.T) {
	in := defaultLastDraw + goodbyeHeader + goodbyeCommand + defaultLast
	want := defaultLastDraw + defaultLast
	if got := filterAll(t, -1, in); got != want {
		t.Fatalf("screen got\n%q\nwant\n%q", got, want)
	}
	// A write may end right after an escape sequence at a line's start,
	// which is then passed at once: the bytes may differ, what shows may
	// not.
	for i := 1; i < len(in); i++ {
		got := filterAll(t, -1, in[:i], in[i:])
		if visibleText([]byte(got)) != visibleText([]byte(want)) || strings.Contains(got, "Resume") || strings.Contains(got, "--resume") {
			t.Fatalf("split at %d: screen got\n%q\nwant\n%q", i, got, want)
		}
	}
	bytewise := make([]string, len(in))
	for i := 0; i < len(in); i++ {
		bytewise[i] = in[i : i+1]
	}
	if got := filterAll(t, -1, bytewise...); visibleText([]byte(got)) != visibleText([]byte(want)) || strings.Contains(got, "Resume") {
		t.Fatalf("byte by byte: screen got\n%q", got)
	}
}

// Off the alternate screen a line is held only while it could still be the
// goodbye's header: the rest of a frame reaches the screen within the same
// write.
func TestGoodbyeFilterHoldsNothingOfTheRunningScreen(t *testing.T) {
	var screen bytes.Buffer
	f := NewGoodbyeFilter(&screen)
	for _, chunk := range []string{"\x1b[2K\x1b[1A\r\n", "\x1b[38;5;153m\xe2\x9d\xaf \x1b[7m \x1b[27m", "\r\n\x1b[3G", "Resume", " the work\r\n", "Res"} {
		before := screen.Len()
		f.Write([]byte(chunk))
		got := screen.String()[before:]
		switch chunk {
		case "Resume", "Res": // could be the header still: held
			if got != "" {
				t.Errorf("write %q: %q reached the screen, want it held", chunk, got)
			}
		case " the work\r\n":
			if got != "Resume the work\r\n" {
				t.Errorf("write %q: screen got %q", chunk, got)
			}
		default:
			if got != chunk {
				t.Errorf("write %q: screen got %q, want it at once", chunk, got)
			}
		}
	}
	f.Flush()
	if !strings.HasSuffix(screen.String(), "Res") {
		t.Errorf("flush lost the last held bytes: %q", screen.String())
	}
}

// A harness with no alternate screen (the fake one, another version): once
// flower is stopping it, its goodbye goes, its other words stay, and an
// unfinished last line is judged when its output ends.
func TestGoodbyeFilterArmedWithoutAlternateScreen(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
	}{
		{"goodbye", "bye\r\nResume this session with:\r\nclaude --foo x --resume fake-1-99\r\n", "bye\r\n"},
		{"unfinished innocent line", "bye\r\nsee you", "bye\r\nsee you"},
		{"unfinished goodbye", "bye\r\nclaude --resume fake-1-99", "bye\r\n"},
		{"a session id in other words", "session 0B7F5D3E-1111-4222-8333-944455556666 saved\r\nok\r\n", "ok\r\n"},
		{"text that only looks close", "resume your work with flower continue\r\n", "resume your work with flower continue\r\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := filterAll(t, 1, "fake harness\r\n", tc.in); got != "fake harness\r\n"+tc.want {
				t.Errorf("screen got %q, want %q", got, "fake harness\r\n"+tc.want)
			}
		})
	}
}

// A line too long to be a goodbye is not held back: it reaches the screen
// whole, as it comes.
func TestGoodbyeFilterLongLinePasses(t *testing.T) {
	long := strings.Repeat("x", 3*maxHeldLine) + " --resume at the end\r\n"
	if got := filterAll(t, 0, long[:maxHeldLine+10], long[maxHeldLine+10:], "after\r\n"); got != long+"after\r\n" {
		t.Errorf("screen got %d bytes, want the long line and the next intact (%d)", len(got), len(long)+7)
	}
}

type goneScreen struct{}

func (goneScreen) Write([]byte) (int, error) { return 0, errors.New("screen gone") }

func TestGoodbyeFilterReportsScreenErrors(t *testing.T) {
	f := NewGoodbyeFilter(goneScreen{})
	if _, err := f.Write([]byte("text")); err == nil {
		t.Errorf("Write hid the screen's error")
	}
	f.Arm()
	if _, err := f.Write([]byte("unfinished")); err != nil {
		t.Errorf("held bytes did not reach the screen yet, yet Write failed: %v", err)
	}
	if err := f.Flush(); err == nil {
		t.Errorf("Flush hid the screen's error")
	}
}

func TestVisibleText(t *testing.T) {
	if got := visibleText([]byte(goodbyeCommand)); got != "claude --resume f81ffbf7-133a-4df6-9af4-684774138c80" {
		t.Errorf("visibleText = %q", got)
	}
	if got := visibleText([]byte("\x1b]0;title --resume\x07ok\x1b[1;2H 交接\r\n")); got != "ok 交接" {
		t.Errorf("visibleText = %q", got)
	}
}
