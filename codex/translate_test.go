package codex

import (
	"encoding/json"
	"testing"

	"github.com/flowerhq/flower/codexrpc"
	"github.com/flowerhq/flower/front"
)

func item(t *testing.T, kind string, fields map[string]any) codexrpc.Notification {
	t.Helper()
	it := map[string]any{"type": kind, "id": "i1"}
	for k, v := range fields {
		it[k] = v
	}
	raw, err := json.Marshal(map[string]any{"threadId": "th", "turnId": "tu", "item": it})
	if err != nil {
		t.Fatal(err)
	}
	return codexrpc.Notification{Method: codexrpc.NoteItemCompleted, Params: raw, Value: codexrpc.Item{ThreadID: "th", TurnID: "tu", ID: "i1", Type: kind}}
}

func run(tr *translator, ns ...codexrpc.Notification) []front.Fact {
	var out []front.Fact
	for _, n := range ns {
		tr.facts(n, func(f front.Fact) { out = append(out, f) })
	}
	return out
}

// A response's text and tool calls come before its usage (which Codex
// reports once the calls have run): one Round carries them all, with the
// last request's context, not the thread's running total.
func TestOneRoundPerResponse(t *testing.T) {
	tr := &translator{thread: "th", model: "gpt-5", held: true}
	usage := codexrpc.Notification{Value: codexrpc.TokenUsage{TurnID: "tu",
		Last:  codexrpc.Tokens{InputTokens: 1500, CachedInputTokens: 1200, OutputTokens: 20},
		Total: codexrpc.Tokens{InputTokens: 2700}, ModelContextWindow: 190000}}
	facts := run(tr,
		item(t, "userMessage", map[string]any{"content": []any{map[string]any{"type": "text", "text": "the task"}}}),
		item(t, "agentMessage", map[string]any{"text": "let me look"}),
		item(t, "commandExecution", map[string]any{"command": "/bin/bash -lc 'ls'"}),
		usage,
		codexrpc.Notification{Value: codexrpc.TurnCompleted{TurnID: "tu", Status: codexrpc.StatusCompleted}})
	if len(facts) != 3 {
		t.Fatalf("facts %#v: want the prompt, one round, the turn's end", facts)
	}
	if u, ok := facts[0].(front.UserMessage); !ok || u.Text != "the task" || !u.MainThread {
		t.Errorf("first fact %#v: want the prompt", facts[0])
	}
	r, ok := facts[1].(front.Round)
	if !ok || r.Context != 1500 || r.Text != "let me look" || len(r.ToolUses) != 1 || r.ToolUses[0].Name != "commandExecution" ||
		r.Usage.CacheReadInputTokens != 1200 || r.Usage.Context() != 1500 || !r.MainThread {
		t.Fatalf("round %#v: want context 1500 (the last request's), its text and its command", facts[1])
	}
	e := facts[2].(front.TurnEnded)
	if e.How != front.EndedOnOwn || e.Text != "let me look" || e.Turns != 1 || e.Windows["gpt-5"] != 180000 {
		t.Errorf("end %+v: want on its own, its last text, one round, window 180000 (90 %% of 200000)", e)
	}
}

// How a turn ends, from turn/completed: an interrupt flower sent, one it
// did not (flower's hook stopped a compaction: the thread takes no more
// turns), and the errors.
func TestTurnEndings(t *testing.T) {
	for _, c := range []struct {
		name         string
		interrupting bool
		status       string
		err          *codexrpc.ErrorInfo
		want         front.Ending
		apiStatus    int
	}{
		{"asked interrupt", true, codexrpc.StatusInterrupted, nil, front.EndedInterrupted, 0},
		{"hook stop", false, codexrpc.StatusInterrupted, nil, front.EndedOverflow, 0},
		{"completed after an interrupt", true, codexrpc.StatusCompleted, nil, front.EndedOnOwn, 0},
		{"overflow", false, codexrpc.StatusFailed, &codexrpc.ErrorInfo{Kind: "contextWindowExceeded"}, front.EndedOverflow, 0},
		{"usage limit", false, codexrpc.StatusFailed, &codexrpc.ErrorInfo{Kind: "usageLimitExceeded"}, front.EndedLimited, 0},
		{"429", false, codexrpc.StatusFailed, &codexrpc.ErrorInfo{Kind: "responseTooManyFailedAttempts", HTTPStatus: 429}, front.EndedLimited, 0},
		{"401", false, codexrpc.StatusFailed, &codexrpc.ErrorInfo{Kind: "httpConnectionFailed", HTTPStatus: 401}, front.EndedError, 401},
		{"other", false, codexrpc.StatusFailed, &codexrpc.ErrorInfo{Kind: "internalServerError", Message: "boom"}, front.EndedError, 0},
		{"no error said", false, codexrpc.StatusFailed, nil, front.EndedError, 0},
	} {
		tr := &translator{thread: "th", interrupting: c.interrupting}
		facts := run(tr, codexrpc.Notification{Value: codexrpc.TurnCompleted{Status: c.status, Error: c.err}})
		e := facts[len(facts)-1].(front.TurnEnded)
		if e.How != c.want || e.APIErrorStatus != c.apiStatus || (c.want == front.EndedLimited) != (e.Limit != nil) || e.Text == "" && c.err != nil && c.err.Message != "" {
			t.Errorf("%s: %+v, want %v (status %d)", c.name, e, c.want, c.apiStatus)
		}
		if tr.interrupting {
			t.Errorf("%s: still interrupting after the turn ended", c.name)
		}
	}
}

// A compaction Codex makes anyway is reported (with compact mode auto, say).
func TestCompactionReported(t *testing.T) {
	tr := &translator{thread: "th"}
	facts := run(tr, codexrpc.Notification{Value: codexrpc.Item{Started: true, Type: codexrpc.ItemContextCompaction}})
	if len(facts) != 1 || !facts[0].(front.Compacted).Boundary {
		t.Fatalf("facts %#v: want one compaction", facts)
	}
}

// In the writing turn a tool call is reported as it starts, before it
// runs, so the engine can stop it; its end adds nothing more. In a work
// turn it comes with its response's usage.
func TestWritingTurnToolReportedAsItStarts(t *testing.T) {
	started := item(t, "commandExecution", map[string]any{"command": "ls"})
	started.Method, started.Value = codexrpc.NoteItemStarted, codexrpc.Item{Started: true, ID: "i1", Type: "commandExecution"}
	done := item(t, "commandExecution", map[string]any{"command": "ls"})
	usage := codexrpc.Notification{Value: codexrpc.TokenUsage{Last: codexrpc.Tokens{InputTokens: 150000}}}
	for _, writing := range []bool{true, false} {
		tr := &translator{thread: "th", writing: writing}
		facts := run(tr, started)
		if got := len(facts); writing != (got == 1) {
			t.Fatalf("writing %v: %d facts at the tool's start", writing, got)
		}
		facts = append(facts, run(tr, done, usage)...)
		tools := 0
		for _, f := range facts {
			if r, ok := f.(front.Round); ok {
				tools += len(r.ToolUses)
			}
		}
		if tools != 1 {
			t.Errorf("writing %v: the tool reported %d times, want once", writing, tools)
		}
	}
}
