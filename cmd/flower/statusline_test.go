package main

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/flowerhq/flower/console"
	"github.com/flowerhq/flower/event"
	"github.com/flowerhq/flower/handoffwriter"
)

// statusLineRun runs `flower statusline` in-process with stdin and the
// extra flags; its stdout.
func statusLineRun(t *testing.T, stdin string, args ...string) string {
	t.Helper()
	var out strings.Builder
	p := proc{stdin: strings.NewReader(stdin), stdout: &out, stderr: io.Discard, env: os.Environ()}
	if err := runIn(context.Background(), append([]string{"flower", "statusline"}, args...), p); err != nil {
		t.Fatalf("flower statusline: %v", err)
	}
	return out.String()
}

// writtenState is a state file the running flower wrote for these events.
func writtenState(t *testing.T, now time.Time, evs ...event.Event) string {
	t.Helper()
	dir := t.TempDir()
	w := newStatusWriter(dir, console.NewScreenLine(console.LangEn, false, "/home/p/ws", "/home/p", console.Bounds{BudgetUSD: 5}), slog.New(slog.DiscardHandler))
	w.now = func() time.Time { return now }
	for _, ev := range evs {
		w.handle(ev)
	}
	return w.path
}

const sessionJSON = `{"session_id":"SESSION-MARK","model":{"id":"m"},"cost":{"total_cost_usd":0.5},"context_window":{"total_input_tokens":1}}`

// The harness's JSON in, flower's line out: the meter of the state file,
// the step's booked cost plus the live session's, the bounds; the person's
// own command runs first on the same stdin.
func TestStatusLineCommand(t *testing.T) {
	state := writtenState(t, time.Now(),
		event.Event{Kind: event.KindGeneration, Generation: 1},
		event.Event{Kind: event.KindTurn, Generation: 1, Context: 130_000, Window: 200_000, At: 150_000, CostUSD: 0.25})
	got := statusLineRun(t, sessionJSON, "--state", state, "--lang", "en", "--theirs", "grep -o SESSION-MARK; echo second line")
	// The turn ended on its own: the line says it is done.
	want := "SESSION-MARK\nsecond line\nflower · gen 1 · context 130.0K/200K · about 20K to handoff · done · $0.75 · budget $5.00\n"
	if got != want {
		t.Errorf("status line\n%q, want\n%q", got, want)
	}
	// Stdin that is no JSON: the booked cost alone.
	if got := statusLineRun(t, "not json", "--state", state, "--lang", "en"); got != "flower · gen 1 · context 130.0K/200K · about 20K to handoff · done · $0.25 · budget $5.00\n" {
		t.Errorf("bad stdin: %q", got)
	}
}

// A missing or broken state gives a short neutral line and exit 0; a
// person's command that hangs is cut off in bounded time.
func TestStatusLineWithoutState(t *testing.T) {
	dir := t.TempDir()
	broken := filepath.Join(dir, "broken.json")
	if err := os.WriteFile(broken, []byte("{half"), 0o600); err != nil {
		t.Fatal(err)
	}
	// A state planted as a link or a FIFO is not followed nor waited on.
	good := writtenState(t, time.Now(), event.Event{Kind: event.KindGeneration, Generation: 1})
	link, fifo := filepath.Join(dir, "link.json"), filepath.Join(dir, "fifo.json")
	if err := os.Symlink(good, link); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, state := range []string{filepath.Join(dir, "missing.json"), broken, "", link, fifo} {
		if got := statusLineRun(t, sessionJSON, "--state", state, "--lang", "en"); got != "flower · no live state\n" {
			t.Errorf("state %q: %q", state, got)
		}
	}
	if got := statusLineRun(t, "", "--state", broken); got != "flower · 没有运行状态\n" {
		t.Errorf("zh: %q", got)
	}
	start := time.Now()
	got := statusLineRun(t, sessionJSON, "--state", broken, "--lang", "en", "--theirs", "echo early; sleep 30")
	if took := time.Since(start); took > theirsTimeout+2*time.Second {
		t.Errorf("a hanging command of the person's held the status line %v", took)
	}
	if got != "early\nflower · no live state\n" {
		t.Errorf("hanging command: %q", got)
	}
}

// After a handoff the line announces it, with the file's path, until
// handoffShown after the successor started.
func TestStatusLineAnnouncesHandoff(t *testing.T) {
	now := time.Now()
	h := handoffwriter.Parse("## doing\nporting the parser\n")
	state := writtenState(t, now,
		event.Event{Kind: event.KindGeneration, Generation: 1},
		event.Event{Kind: event.KindHandoff, Phase: event.PhaseDone, Generation: 1, Context: 152_000, Window: 200_000,
			Handoff: &h, Path: "/home/p/ws/.flower/notes/交接-main.md"},
		event.Event{Kind: event.KindGeneration, Generation: 2})
	var out strings.Builder
	statusLine(strings.NewReader(sessionJSON), &out, state, console.LangEn, "", now.Add(handoffShown-time.Second))
	want := "flower · gen 2 · starting · $0.50 · budget $5.00\n<- gen 1 handed off, to .flower/notes/交接-main.md · doing: porting the parser\n"
	if out.String() != want {
		t.Errorf("during the announcement\n%q, want\n%q", out.String(), want)
	}
	out.Reset()
	statusLine(strings.NewReader(sessionJSON), &out, state, console.LangEn, "", now.Add(handoffShown+time.Second))
	if strings.Contains(out.String(), "handed off") {
		t.Errorf("the announcement outlived its time: %q", out.String())
	}
}
