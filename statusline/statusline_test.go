package statusline

import (
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

// writtenState is a state file the running flower wrote for these events.
func writtenState(t *testing.T, now time.Time, evs ...event.Event) string {
	t.Helper()
	dir := t.TempDir()
	w := NewWriter(dir, console.NewScreenLine(console.LangEn, false, "/home/p/ws", "/home/p", console.Bounds{BudgetUSD: 5}), slog.New(slog.DiscardHandler))
	w.now = func() time.Time { return now }
	for _, ev := range evs {
		w.Handle(ev)
	}
	return w.Path()
}

const sessionJSON = `{"session_id":"SESSION-MARK","model":{"id":"m"},"cost":{"total_cost_usd":0.5},"context_window":{"total_input_tokens":1}}`

// print is Print's output.
func print(stdin, state string, lang console.Lang, theirs string, now time.Time) string {
	var out strings.Builder
	Print(strings.NewReader(stdin), &out, state, lang, theirs, now)
	return out.String()
}

// A missing or broken state gives a short neutral line; a person's command
// that hangs is cut off in bounded time.
func TestPrintWithoutState(t *testing.T) {
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
		if got := print(sessionJSON, state, console.LangEn, "", time.Now()); got != "flower · no live state\n" {
			t.Errorf("state %q: %q", state, got)
		}
	}
	if got := print("", broken, console.LangZh, "", time.Now()); got != "flower · 没有运行状态\n" {
		t.Errorf("zh: %q", got)
	}
	start := time.Now()
	got := print(sessionJSON, broken, console.LangEn, "echo early; sleep 30", time.Now())
	if took := time.Since(start); took > theirsTimeout+2*time.Second {
		t.Errorf("a hanging command of the person's held the status line %v", took)
	}
	if got != "early\nflower · no live state\n" {
		t.Errorf("hanging command: %q", got)
	}
}

// After a handoff the line announces it, with the file's path, until
// handoffShown after the successor started.
func TestPrintAnnouncesHandoff(t *testing.T) {
	now := time.Now()
	h := handoffwriter.Parse("## doing\nporting the parser\n")
	state := writtenState(t, now,
		event.Event{Kind: event.KindGeneration, Generation: 1},
		event.Event{Kind: event.KindHandoff, Phase: event.PhaseDone, Generation: 1, Context: 152_000, Window: 200_000,
			Handoff: &h, Path: "/home/p/ws/.flower/notes/交接-main.md"},
		event.Event{Kind: event.KindGeneration, Generation: 2})
	got := print(sessionJSON, state, console.LangEn, "", now.Add(handoffShown-time.Second))
	want := "flower · gen 2 · starting · $0.50 · budget $5.00\n<- gen 1 handed off, to .flower/notes/交接-main.md · doing: porting the parser\n"
	if got != want {
		t.Errorf("during the announcement\n%q, want\n%q", got, want)
	}
	if got := print(sessionJSON, state, console.LangEn, "", now.Add(handoffShown+time.Second)); strings.Contains(got, "handed off") {
		t.Errorf("the announcement outlived its time: %q", got)
	}
}
