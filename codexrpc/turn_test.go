package codexrpc_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/flowerhq/flower/codexrpc"
	"github.com/flowerhq/flower/scriptedresp"
)

func TestInterruptLongToolCall(t *testing.T) {
	script := func(r *scriptedresp.Request) scriptedresp.Reply {
		if r.LastUserText == "first" && len(r.Outputs) == 0 {
			return scriptedresp.Reply{Calls: []scriptedresp.Call{{Cmd: "sleep 60"}}, Usage: scriptedresp.Usage{InputTokens: 900, OutputTokens: 5}}
		}
		return scriptedresp.Reply{Text: "again", Usage: scriptedresp.Usage{InputTokens: 1000, OutputTokens: 5}}
	}
	s := start(t, script, "")
	first := s.turn("first")
	s.until(func(n codexrpc.Notification) bool {
		it, ok := n.Value.(codexrpc.Item)
		return ok && it.Started && it.Type == "commandExecution"
	})
	asked := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.client.Interrupt(ctx, s.thread, first); err != nil {
		t.Fatal(err)
	}
	tc := s.completed(first)
	t.Logf("interrupted turn ended %s after the interrupt", time.Since(asked).Round(time.Millisecond))
	if tc.Status != codexrpc.StatusInterrupted {
		t.Fatalf("turn ended %q, want interrupted", tc.Status)
	}
	if time.Since(asked) > 20*time.Second {
		t.Errorf("the interrupt took %s: the tool call was not cut", time.Since(asked))
	}
	second := s.turn("second")
	if tc := s.completed(second); tc.Status != codexrpc.StatusCompleted {
		t.Fatalf("the next turn in the same thread ended %q (%+v)", tc.Status, tc.Error)
	}
	last := s.api.Requests()[len(s.api.Requests())-1]
	if last.LastUserText != "second" {
		t.Errorf("the next turn's request ends with user text %q", last.LastUserText)
	}
}

func TestErrorsReachTheTurn(t *testing.T) {
	for _, tc := range []struct {
		name   string
		reply  scriptedresp.Reply
		kind   string
		status int
	}{
		{"overflow", scriptedresp.Overflow(), "contextWindowExceeded", 0},
		{"unauthorized", scriptedresp.Unauthorized(), "httpConnectionFailed", 401},
		// With request_max_retries = 0 a 429 is "too many failed
		// attempts", not rateLimitExceeded.
		{"rate limited", scriptedresp.RateLimited(0), "responseTooManyFailedAttempts", 429},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := start(t, scriptedresp.Sequence(tc.reply), "")
			end := s.completed(s.turn("hi"))
			if end.Status != codexrpc.StatusFailed || end.Error == nil || end.Error.Kind != tc.kind || end.Error.HTTPStatus != tc.status {
				t.Fatalf("turn ended %q with %+v, want failed with %s %d", end.Status, end.Error, tc.kind, tc.status)
			}
			errs := values[codexrpc.Error](s)
			if len(errs) != 1 || errs[0].WillRetry || errs[0].Error.Kind != tc.kind {
				t.Fatalf("error notifications %+v, want one of kind %s, not retried", errs, tc.kind)
			}
		})
	}
}

// personConfig is a person's config.toml that compacts at 100K of a 200K
// window.
const personConfig = "model_auto_compact_token_limit = 100000\nmodel_context_window = 200000\n"

// compactingScript answers every turn with a context of input tokens and
// a compaction request with a short summary.
func compactingScript(input int) scriptedresp.Script {
	return func(r *scriptedresp.Request) scriptedresp.Reply {
		if r.Compaction {
			return scriptedresp.Reply{Text: "SUMMARY", Usage: scriptedresp.Usage{InputTokens: 2000, OutputTokens: 10}}
		}
		return scriptedresp.Reply{Text: "ok", Usage: scriptedresp.Usage{InputTokens: input, OutputTokens: 10}}
	}
}

func compactions(s *session) (requests, items int) {
	for _, r := range s.api.Requests() {
		if r.Compaction {
			requests++
		}
	}
	for _, it := range values[codexrpc.Item](s) {
		if it.Started && it.Type == codexrpc.ItemContextCompaction {
			items++
		}
	}
	return requests, items
}

// postTurnConfig adds the post-turn compaction threshold to personConfig:
// at 10 %, any context of these tests passes it.
const postTurnConfig = personConfig + "model_post_turn_compact_threshold_percent = 10\n"

func TestOverridesHoldCompaction(t *testing.T) {
	for _, tc := range []struct {
		name      string
		config    string
		input     int
		overrides []string
		compacts  bool
	}{
		{"person's config alone", personConfig, 120000, nil, true},
		{"person's post-turn threshold, limit lifted", postTurnConfig, 120000, codexrpc.HoldOverrides("")[:1], true},
		{"overrides", postTurnConfig, 120000, codexrpc.HoldOverrides(""), false},
		// Below 90 % of the person's window of 200000, and past it.
		{"overrides, below 90 % of the window", postTurnConfig, 175000, codexrpc.HoldOverrides(""), false},
		{"overrides, past 90 % of the window", postTurnConfig, 185000, codexrpc.HoldOverrides(""), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := start(t, compactingScript(tc.input), tc.config, tc.overrides...)
			for range 3 {
				if end := s.completed(s.turn("go on")); end.Status != codexrpc.StatusCompleted {
					t.Fatalf("turn ended %q (%+v)", end.Status, end.Error)
				}
			}
			reqs, items := compactions(s)
			if got := reqs > 0; got != tc.compacts || (reqs > 0) != (items > 0) {
				t.Fatalf("%d compaction requests, %d compaction items over 3 turns; want compaction %v", reqs, items, tc.compacts)
			}
		})
	}
}

// TestCompactionMidTurn: past the limit after a tool round, Codex compacts
// inside the turn and goes on from the summary; the hook's
// {"continue":false} ends that turn "interrupted" instead, before the
// compaction, and every later turn of the thread too, before any request.
func TestCompactionMidTurn(t *testing.T) {
	toolThenText := func() scriptedresp.Script {
		n := 0
		return func(r *scriptedresp.Request) scriptedresp.Reply {
			if r.Compaction {
				return scriptedresp.Reply{Text: "SUMMARY", Usage: scriptedresp.Usage{InputTokens: 2000, OutputTokens: 10}}
			}
			n++
			if n == 1 {
				return scriptedresp.Reply{Calls: []scriptedresp.Call{{Cmd: "echo hi"}}, Usage: scriptedresp.Usage{InputTokens: 120000, OutputTokens: 10}}
			}
			return scriptedresp.Reply{Text: "ok", Usage: scriptedresp.Usage{InputTokens: 3000, OutputTokens: 10}}
		}
	}
	t.Run("compacts", func(t *testing.T) {
		s := start(t, toolThenText(), personConfig)
		if end := s.completed(s.turn("one")); end.Status != codexrpc.StatusCompleted {
			t.Fatalf("turn ended %q", end.Status)
		}
		reqs := s.api.Requests()
		if len(reqs) != 3 || !reqs[1].Compaction || !strings.HasPrefix(reqs[2].LastUserText, "Another language model started to solve this problem") {
			t.Fatalf("requests %+v: want the tool round, a compaction, then the turn going on from the summary", reqs)
		}
	})
	t.Run("hook", func(t *testing.T) {
		hook := writeHook(t, `echo '{"continue":false}'`)
		s := start(t, toolThenText(), personConfig, `hooks.PreCompact=[{hooks=[{type="command",command="`+hook+`"}]}]`)
		for _, text := range []string{"one", "two"} {
			if end := s.completed(s.turn(text)); end.Status != codexrpc.StatusInterrupted {
				t.Fatalf("turn %s ended %q, want interrupted", text, end.Status)
			}
		}
		if reqs := s.api.Requests(); len(reqs) != 1 {
			t.Fatalf("%d requests, want only the first turn's tool round", len(reqs))
		}
	})
}

func TestPreCompactHook(t *testing.T) {
	for _, tc := range []struct {
		name   string
		answer string
		blocks bool
	}{
		{"continue false", `echo '{"continue":false}'`, true},
		{"exit 2", `echo no >&2; exit 2`, false},
		{"decision block", `echo '{"decision":"block","reason":"no"}'`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hook := writeHook(t, tc.answer)
			s := start(t, compactingScript(120000), personConfig,
				`hooks.PreCompact=[{hooks=[{type="command",command="`+hook+`"}]}]`)
			if end := s.completed(s.turn("one")); end.Status != codexrpc.StatusCompleted {
				t.Fatalf("first turn ended %q", end.Status)
			}
			end := s.completed(s.turn("two"))
			reqs, _ := compactions(s)
			if tc.blocks {
				if reqs != 0 || end.Status != codexrpc.StatusInterrupted || len(s.api.Requests()) != 1 {
					t.Fatalf("turn two ended %q after %d requests (%d compactions); want interrupted before any", end.Status, len(s.api.Requests()), reqs)
				}
				return
			}
			if reqs != 1 || end.Status != codexrpc.StatusCompleted {
				t.Fatalf("turn two ended %q with %d compaction requests; want it compacted and completed", end.Status, reqs)
			}
		})
	}
}

func writeHook(t *testing.T, answer string) string {
	t.Helper()
	p := t.TempDir() + "/hook.sh"
	body := "#!/bin/sh\ncat >/dev/null\n" + answer + "\n"
	if err := writeExec(p, body); err != nil {
		t.Fatal(err)
	}
	if strings.ContainsAny(p, `"\`) {
		t.Fatalf("hook path %q needs quoting", p)
	}
	return p
}

// TestHoldPastModelWindow: where the overrides alone no longer hold (past
// 90 % of the window), the hook of HoldOverrides stops the
// compaction before it reaches the model. With the post-turn threshold at
// 100 % the attempt comes at the end of the turn that crossed, so that
// turn, its answer given, ends "interrupted"; so does the next, before any
// request.
func TestHoldPastModelWindow(t *testing.T) {
	s := start(t, compactingScript(245000), personConfig, codexrpc.HoldOverrides(writeHook(t, `echo '{"continue":false}'`))...)
	for _, text := range []string{"one", "two"} {
		if end := s.completed(s.turn(text)); end.Status != codexrpc.StatusInterrupted {
			t.Fatalf("turn %s ended %q, want interrupted", text, end.Status)
		}
	}
	if reqs := s.api.Requests(); len(reqs) != 1 || reqs[0].Compaction || reqs[0].Answered.IsZero() {
		t.Fatalf("requests %+v: want the first turn's, answered, and nothing more", reqs)
	}
	var answered bool
	for _, it := range values[codexrpc.Item](s) {
		answered = answered || (!it.Started && it.Type == "agentMessage")
	}
	if !answered {
		t.Error("the first turn's answer never completed as an item")
	}
}
