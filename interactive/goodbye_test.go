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
		{"before any alternate screen", -1, []string{running}},
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
