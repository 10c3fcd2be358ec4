package main

import (
	"context"
	"io"
	"log/slog"
	"os"
	"strings"
	"testing"

	"github.com/flowerhq/flower/console"
	"github.com/flowerhq/flower/event"
	"github.com/flowerhq/flower/statusline"
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

const sessionJSON = `{"session_id":"SESSION-MARK","model":{"id":"m"},"cost":{"total_cost_usd":0.5},"context_window":{"total_input_tokens":1}}`

// The harness's JSON in, flower's line out: the meter of the state file,
// the step's booked cost plus the live session's, the bounds; the person's
// own command runs first on the same stdin.
func TestStatusLineCommand(t *testing.T) {
	w := statusline.NewWriter(t.TempDir(), console.NewScreenLine(console.LangEn, false, "/home/p/ws", "/home/p", console.Bounds{BudgetUSD: 5}), slog.New(slog.DiscardHandler))
	w.Handle(event.Event{Kind: event.KindGeneration, Generation: 1})
	w.Handle(event.Event{Kind: event.KindTurn, Generation: 1, Context: 130_000, Window: 200_000, At: 150_000, CostUSD: 0.25})
	state := w.Path()
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
	// A missing state, and no --lang: the neutral line in Chinese, exit 0.
	if got := statusLineRun(t, "", "--state", state+".missing"); got != "flower · 没有运行状态\n" {
		t.Errorf("missing state: %q", got)
	}
}
