package integration_test

// These tests re-verify the harness facts of DESIGN.md «Harness facts» on the real, pinned harness
// against the scripted server of package scriptedapi. What they found beyond
// or against DESIGN.md «Harness facts» (Claude Code 2.1.328):
//
//   - The init line lists the subagent tool as "Task", but the API request
//     offers it as "Agent" (input: description, prompt, subagent_type
//     required in practice, run_in_background, model, …); a model must call
//     "Agent". An empty subagent_type fails ("Agent type '' not found");
//     "general-purpose" works.
//   - Agents run in the background by default. Then the turn's result comes
//     first, the subagent keeps running, and when it ends the harness starts
//     a main-thread turn by itself and writes a second result line
//     (result_index 1) without any user line. With run_in_background false
//     the turn has one result.
//   - A foreground subagent's assistant lines carry parent_tool_use_id, but
//     only those holding a tool_use: its text and its final report are not
//     written as assistant lines (the report comes back as the Agent tool
//     result). A background subagent's lines are all written.
//   - result.usage sums the main thread's requests of the turn only;
//     modelUsage also counts the subagent's.
//   - Interrupting a running Bash tool: control_response {"still_queued":[]}
//     at once, a task_notification "stopped", a tool_result, the user line
//     "[Request interrupted by user for tool use]", then a result with
//     subtype "error_during_execution", is_error true and
//     terminal_reason "aborted_tools" (not "success"). Interrupting while the
//     API call is in flight gives "[Request interrupted by user]" and
//     terminal_reason "aborted_streaming". Interrupting an idle session
//     gives only the control_response. The next user line continues the
//     same session; the API sees the interrupt marker and the new text merged
//     into one user message.
//   - The harness refuses "sleep 30" and "sleep 30; …" as Bash commands
//     (a tool_use_error, "Blocked: standalone sleep"); the interrupt test
//     uses "timeout 30 tail -f /dev/null" instead.
//   - The overflow text after an API 400 is "Prompt is too long" followed by
//     " · the request is ~250123 tokens …" when the conversation is a single
//     exchange: match the prefix. After blocking_limit it is exactly
//     "Prompt is too long".
//   - With auto-compact disabled get_context_usage omits
//     autoCompactThreshold (rather than sending null).
//   - The init line is written at the start of every turn; stdout lines
//     arrive while the process runs. Closing stdin lets the queued turn
//     finish, then the process exits: status 0 when the last turn
//     succeeded, 1 when it ended in error.

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/flowerhq/flower/checkup"
	"github.com/flowerhq/flower/scriptedapi"
)

// TestHarnessFacts checks every fact of flower doctor's list (package
// checkup, DESIGN.md «Doctor») on the real harness, each a subtest, and
// that the harness is the version asked for: FLOWER_HARNESS_VERSION, the
// pinned one under make test. The tests below measure what the list does
// not: the requests the harness sends, subagents, overflow, a running tool
// interrupted.
func TestHarnessFacts(t *testing.T) {
	t.Parallel()
	cu := checkup.New(checkup.Config{Harness: harnessPath(t), Env: []string{"PATH=" + os.Getenv("PATH"), "TMPDIR=" + os.TempDir()}})
	levers, err := cu.HoldsCompactionOff()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range checkup.Facts() {
		t.Run(f.Name, func(t *testing.T) {
			t.Parallel()
			r := cu.One(context.Background(), f)
			t.Logf("%s (%.1fs)", r.Line(), r.Took.Seconds())
			switch {
			case !r.OK && !levers && slices.Contains(checkup.CompactionFacts, f.Name):
				// flower's launch carries no compaction levers
				// (DESIGN.md «Compaction levers») on this build: the
				// fact cannot hold, and the line above says why.
			case !r.OK:
				t.Errorf("the fact does not hold: %s", r.Detail)
			case f.Name == checkup.FactVersion && !strings.HasPrefix(r.Detail, harnessVersion+","):
				t.Errorf("the harness is %s, want %s (FLOWER_HARNESS_VERSION, else the pinned one)", r.Detail, harnessVersion)
			}
		})
	}
}

// TestTurnsShareSession covers what the harness asks the API over two
// turns (DESIGN.md «Stream-json»): one main request per turn carrying the
// user line, the second carrying the conversation, the default model's
// window, no endpoint but the two scripted ones, and exit status 0 once
// stdin closes. The line shapes themselves are facts of TestHarnessFacts.
func TestTurnsShareSession(t *testing.T) {
	t.Parallel()
	first := scriptedapi.Usage{InputTokens: 12, CacheCreationInputTokens: 345, CacheReadInputTokens: 150000, OutputTokens: 7}
	second := scriptedapi.Usage{InputTokens: 3, CacheReadInputTokens: 151000, OutputTokens: 9}
	srv := startServer(t, scriptedapi.Sequence(
		scriptedapi.Reply{Text: "first answer", Usage: first},
		scriptedapi.Reply{Text: "second answer", Usage: second, ChunkText: 3},
	))
	h := startHarness(t, srv, nil)

	lines := h.turn("first question")
	t.Logf("harness start + one turn: %.2fs", lines[len(lines)-1].at.Seconds())
	if !h.running() {
		t.Fatal("harness exited after one turn with stdin open")
	}
	model := filter(lines, isType("system/init"))[0].Get("model").String()
	reqs := srv.Requests()
	if len(reqs) != 1 || reqs[0].Model != model || reqs[0].Kind != scriptedapi.KindMain {
		t.Fatalf("requests after one turn: %+v (init model %q)", kinds(reqs), model)
	}
	if !strings.Contains(reqs[0].LastUserText, "first question") {
		t.Errorf("request's last user text %q lacks the user line", reqs[0].LastUserText)
	}
	res := filter(lines, isType("result"))[0]
	if w := res.Get("modelUsage." + gjsonKey(model) + ".contextWindow").Int(); w != 1000000 {
		t.Errorf("contextWindow of %s = %d, want 1000000", model, w)
	}

	h.turn("second question")
	reqs = srv.Requests()
	if len(reqs) != 2 || !strings.Contains(reqs[1].LastUserText, "second question") || !strings.Contains(reqs[1].AllText, "first answer") {
		t.Errorf("second request does not carry the conversation: %+v", kinds(reqs))
	}

	rest, err := h.closeAndWait()
	if n := len(filter(rest, isType("result"))); n != 0 {
		t.Errorf("%d extra result lines after stdin closed", n)
	}
	if err != nil {
		t.Errorf("exit after successful turns: %v, want status 0", err)
	}
	if u := srv.Unexpected(); len(u) != 0 {
		t.Errorf("harness called unexpected endpoints: %q", u)
	}
}

// TestStdinCloseFinishesTurn: closing stdin right after a user line is an
// orderly end, not an abort.
func TestStdinCloseFinishesTurn(t *testing.T) {
	t.Parallel()
	srv := startServer(t, scriptedapi.Sequence(scriptedapi.Reply{Text: "done anyway", Usage: scriptedapi.Usage{InputTokens: 1, OutputTokens: 1}}))
	h := startHarness(t, srv, nil)
	h.sendUser("last words")
	lines, err := h.closeAndWait()
	res := filter(lines, isType("result"))
	if len(res) != 1 {
		t.Fatalf("%d result lines, want 1", len(res))
	}
	checkResult(t, res[0], res[0].Get("session_id").String(), "done anyway", 1)
	if err != nil {
		t.Errorf("exit: %v, want status 0", err)
	}
}

// TestInterruptRunningTool: the interrupt stops a running Bash tool at a
// message boundary and the session continues.
func TestInterruptRunningTool(t *testing.T) {
	t.Parallel()
	const slow = "touch started.marker; timeout 30 tail -f /dev/null; touch finished.marker"
	usage := scriptedapi.Usage{InputTokens: 5, CacheReadInputTokens: 120000, OutputTokens: 3}
	srv := startServer(t, scriptedapi.Route(func(r *scriptedapi.Request) scriptedapi.Reply {
		switch {
		case strings.Contains(r.LastUserText, "run the slow command") && len(r.LastToolResults) == 0:
			return scriptedapi.Reply{ToolUses: []scriptedapi.ToolUse{{Name: "Bash", Input: map[string]any{"command": slow, "description": "Wait for a while"}}}, Usage: usage}
		case strings.Contains(r.LastUserText, "answer slowly") && !strings.Contains(r.LastUserText, "[Request interrupted"):
			return scriptedapi.Reply{Text: "too late", Usage: usage, Delay: 30 * time.Second}
		default:
			return scriptedapi.Reply{Text: "carrying on", Usage: usage}
		}
	}, nil, nil))
	h := startHarness(t, srv, nil, "--allowedTools", "Bash")

	h.sendUser("run the slow command")
	lines := h.until("Bash task start", isType("system/task_started"))
	session := lines[0].Get("session_id").String()
	waitForFile(t, filepath.Join(h.cwd, "started.marker"))

	t0 := time.Now()
	id := h.control("interrupt")
	lines = h.until("result after interrupt", isType("result"))
	took := time.Since(t0)
	t.Logf("interrupt of a running Bash tool: result after %.2fs", took.Seconds())
	if took > 5*time.Second {
		t.Errorf("interrupt took %s to end the turn", took)
	}
	resp := filter(lines, isType("control_response"))
	if len(resp) != 1 || resp[0].Get("response.request_id").String() != id || resp[0].Get("response.subtype").String() != "success" {
		t.Fatalf("control_response for %s: %d lines", id, len(resp))
	}
	if !slices.Contains(texts(filter(lines, isType("user"))), "[Request interrupted by user for tool use]") {
		t.Error("no user line saying the tool use was interrupted")
	}
	res := lines[len(lines)-1]
	if res.Get("terminal_reason").String() != "aborted_tools" || res.Get("subtype").String() != "error_during_execution" || !res.Get("is_error").Bool() {
		t.Errorf("interrupted result: terminal_reason %q subtype %q is_error %v",
			res.Get("terminal_reason"), res.Get("subtype"), res.Get("is_error"))
	}
	time.Sleep(500 * time.Millisecond)
	if _, err := os.Stat(filepath.Join(h.cwd, "finished.marker")); err == nil {
		t.Error("the interrupted command ran to its end")
	}

	lines = h.turn("go on")
	res = lines[len(lines)-1]
	checkResult(t, res, session, "carrying on", 1)
	reqs := srv.Requests()
	last := reqs[len(reqs)-1].LastUserText
	if !strings.Contains(last, "[Request interrupted by user for tool use]") || !strings.Contains(last, "go on") {
		t.Errorf("request after the interrupt: last user text %q", clip(last, 300))
	}

	// An interrupt while the API call is in flight.
	h.sendUser("answer slowly")
	for len(srv.Requests()) == len(reqs) {
		time.Sleep(20 * time.Millisecond)
	}
	h.control("interrupt")
	lines = h.until("result after interrupting the API call", isType("result"))
	if res := lines[len(lines)-1]; res.Get("terminal_reason").String() != "aborted_streaming" {
		t.Errorf("terminal_reason %q, want aborted_streaming", res.Get("terminal_reason"))
	}
	if !slices.Contains(texts(filter(lines, isType("user"))), "[Request interrupted by user]") {
		t.Error("no user line saying the request was interrupted")
	}
	lines = h.turn("and again")
	checkResult(t, lines[len(lines)-1], session, "carrying on", 1)
	if _, err := h.closeAndWait(); err != nil {
		t.Errorf("exit after a successful last turn: %v, want status 0 despite the interrupted ones", err)
	}
	reqs = srv.Requests()
	if last := reqs[len(reqs)-1].LastUserText; !strings.Contains(last, "answer slowly\n\n[Request interrupted by user]\n\nand again") {
		t.Errorf("request after interrupting the API call: last user text %q", clip(last, 300))
	}
}

// TestContextUsageReportsAutoCompact: get_context_usage answers before any
// turn and shows whether DISABLE_AUTO_COMPACT reached the child.
func TestContextUsageReportsAutoCompact(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name          string
		env           []string
		wantEnabled   bool
		wantThreshold bool
	}{
		{"disabled", []string{"DISABLE_AUTO_COMPACT=1"}, false, false},
		{"default", nil, true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := startServer(t, scriptedapi.Sequence())
			h := startHarness(t, srv, append([]string{"ANTHROPIC_MODEL=claude-haiku-4-5"}, tt.env...))
			id := h.control("get_context_usage")
			lines := h.until("context usage", isType("control_response"))
			r := lines[len(lines)-1].Get("response")
			if r.Get("request_id").String() != id || r.Get("subtype").String() != "success" {
				t.Fatalf("control_response %s", clip(r.Raw, 300))
			}
			u := r.Get("response")
			t.Logf("start-up floor: totalTokens %d of %d, %d count_tokens calls", u.Get("totalTokens").Int(), u.Get("maxTokens").Int(), srv.CountTokensCalls())
			if got := u.Get("isAutoCompactEnabled"); !got.Exists() || got.Bool() != tt.wantEnabled {
				t.Errorf("isAutoCompactEnabled = %s, want %v", got.Raw, tt.wantEnabled)
			}
			th := u.Get("autoCompactThreshold")
			if tt.wantThreshold && th.Int() != u.Get("maxTokens").Int()-33000 {
				t.Errorf("autoCompactThreshold %s, want maxTokens-33000", th.Raw)
			}
			if !tt.wantThreshold && th.Type != gjson.Null {
				t.Errorf("autoCompactThreshold %s, want absent or null", th.Raw)
			}
			if u.Get("maxTokens").Int() != 200000 || u.Get("model").String() != "claude-haiku-4-5" {
				t.Errorf("maxTokens %d model %q, want 200000 claude-haiku-4-5", u.Get("maxTokens").Int(), u.Get("model"))
			}
			if tot := u.Get("totalTokens").Int(); tot <= 0 || tot >= 200000 {
				t.Errorf("totalTokens before any turn %d", tot)
			}
			if n := len(srv.Requests()); n != 0 {
				t.Errorf("get_context_usage made %d /v1/messages requests", n)
			}
		})
	}
}

// TestOverflow covers both overflow paths flower must treat alike.
func TestOverflow(t *testing.T) {
	t.Parallel()
	t.Run("api says prompt too long", func(t *testing.T) {
		t.Parallel()
		srv := startServer(t, scriptedapi.Sequence(scriptedapi.Reply{
			Status: 400, ErrorType: "invalid_request_error",
			ErrorMessage: "prompt is too long: 250123 tokens > 200000 maximum",
		}))
		h := startHarness(t, srv, nil)
		lines := h.turn("too much")
		checkOverflow(t, lines, "prompt_too_long")
		if a := filter(lines, isType("assistant")); len(a) > 0 && a[0].Get("api_error_status").Int() != 400 {
			t.Errorf("api_error_status %s, want 400", a[0].Get("api_error_status").Raw)
		}
		if n := len(srv.Requests()); n != 1 {
			t.Errorf("%d requests, want 1 (a 400 is not retried)", n)
		}
		if _, err := h.closeAndWait(); exitCode(err) != 1 {
			t.Errorf("exit after an overflow turn: %v, want status 1", err)
		}
	})
	t.Run("blocking limit", func(t *testing.T) {
		t.Parallel()
		srv := startServer(t, scriptedapi.Sequence(scriptedapi.Reply{
			Text: "that filled it", Usage: scriptedapi.Usage{InputTokens: 10, CacheReadInputTokens: 188000, OutputTokens: 5},
		}))
		h := startHarness(t, srv, []string{"DISABLE_AUTO_COMPACT=1", "ANTHROPIC_MODEL=claude-haiku-4-5"})
		lines := h.turn("fill it")
		if r := lines[len(lines)-1]; r.Get("terminal_reason").String() != "completed" {
			t.Fatalf("first turn ended %s", r.Get("terminal_reason"))
		}
		before := len(srv.Requests())
		lines = h.turn("one more")
		checkOverflow(t, lines, "blocking_limit")
		if got := texts(filter(lines, isType("assistant"))); !slices.Contains(got, "Prompt is too long") {
			t.Errorf("blocking_limit text %q, want exactly \"Prompt is too long\"", got)
		}
		if after := len(srv.Requests()); after != before {
			t.Errorf("blocking_limit turn made %d API requests, want 0", after-before)
		}
	})
}

// TestSubagentLinesCarryParent: a subagent's lines point at the Agent tool
// use that started it, and its requests are told apart by the server.
func TestSubagentLinesCarryParent(t *testing.T) {
	t.Parallel()
	mainUsage := scriptedapi.Usage{InputTokens: 10, CacheReadInputTokens: 150000, OutputTokens: 5}
	subUsage := scriptedapi.Usage{InputTokens: 3, CacheReadInputTokens: 4444, OutputTokens: 2}
	subFinal := scriptedapi.Usage{InputTokens: 3, CacheReadInputTokens: 5555, OutputTokens: 2}
	script := func(background bool) scriptedapi.Script {
		return scriptedapi.Route(
			func(r *scriptedapi.Request) scriptedapi.Reply {
				if strings.Contains(r.LastUserText, "delegate") && len(r.LastToolResults) == 0 {
					return scriptedapi.Reply{Usage: mainUsage, ToolUses: []scriptedapi.ToolUse{{Name: "Agent", Input: map[string]any{
						"description": "Echo something", "prompt": "echo from the subagent",
						"subagent_type": "general-purpose", "run_in_background": background,
					}}}}
				}
				return scriptedapi.Reply{Text: "main done", Usage: mainUsage}
			},
			func(r *scriptedapi.Request) scriptedapi.Reply {
				if len(r.LastToolResults) == 0 {
					return scriptedapi.Reply{Text: "sub thinking", Usage: subUsage, ToolUses: []scriptedapi.ToolUse{{Name: "Bash", Input: map[string]any{"command": "echo from-sub", "description": "Echo"}}}}
				}
				return scriptedapi.Reply{Text: "sub report", Usage: subFinal}
			},
			nil)
	}

	t.Run("foreground", func(t *testing.T) {
		t.Parallel()
		srv := startServer(t, script(false))
		h := startHarness(t, srv, nil, "--allowedTools", "Agent", "Bash")
		lines := h.turn("please delegate")

		init := filter(lines, isType("system/init"))[0]
		if !slices.Contains(stringsOf(init.Get("tools").Array()), "Task") {
			t.Errorf("init tools lack Task: %s", init.Get("tools").Raw)
		}
		if !slices.Contains(srv.Requests()[0].Tools, "Agent") {
			t.Errorf("API request tools lack Agent: %q", srv.Requests()[0].Tools)
		}

		agentID := toolUseID(lines, "Agent")
		if agentID == "" {
			t.Fatal("no Agent tool_use line")
		}
		var sub []line
		for _, a := range filter(lines, isType("assistant")) {
			switch p := a.Get("parent_tool_use_id"); {
			case p.Exists() && p.Type == gjson.Null:
				if got := a.Get("message.usage.cache_read_input_tokens").Int(); got != int64(mainUsage.CacheReadInputTokens) {
					t.Errorf("main-thread assistant line with cache_read %d", got)
				}
			case p.String() == agentID:
				sub = append(sub, a)
				if got := a.Get("message.usage.cache_read_input_tokens").Int(); got != int64(subUsage.CacheReadInputTokens) {
					t.Errorf("subagent assistant line with cache_read %d, want %d", got, subUsage.CacheReadInputTokens)
				}
			default:
				t.Errorf("assistant line with parent_tool_use_id %s", p.Raw)
			}
		}
		if len(sub) == 0 {
			t.Error("no assistant line with parent_tool_use_id set")
		}
		if got := texts(sub); slices.Contains(got, "sub report") {
			t.Log("the foreground subagent's final report now appears as an assistant line")
		}
		if n := len(filter(lines, isType("result"))); n != 1 {
			t.Errorf("%d result lines, want 1", n)
		}

		var nSub int
		for _, r := range srv.Requests() {
			if r.IsSubagent {
				nSub++
			} else if r.Kind != scriptedapi.KindMain {
				t.Errorf("request %d classified %s", r.Seq, r.Kind)
			}
		}
		if nSub != 2 {
			t.Errorf("%d subagent requests, want 2; kinds %v", nSub, kinds(srv.Requests()))
		}

		res := lines[len(lines)-1]
		model := filter(lines, isType("system/init"))[0].Get("model").String()
		if got := res.Get("usage.cache_read_input_tokens").Int(); got != int64(2*mainUsage.CacheReadInputTokens) {
			t.Errorf("result.usage cache_read %d, want main thread only %d", got, 2*mainUsage.CacheReadInputTokens)
		}
		want := 2*mainUsage.CacheReadInputTokens + subUsage.CacheReadInputTokens + subFinal.CacheReadInputTokens
		if got := res.Get("modelUsage." + gjsonKey(model) + ".cacheReadInputTokens").Int(); got != int64(want) {
			t.Errorf("modelUsage cacheReadInputTokens %d, want %d (with the subagent)", got, want)
		}
	})

	t.Run("background", func(t *testing.T) {
		t.Parallel()
		srv := startServer(t, script(true))
		h := startHarness(t, srv, nil, "--allowedTools", "Agent", "Bash")
		h.sendUser("please delegate")
		first := h.until("first result", isType("result"))
		more := h.until("second result", isType("result"))
		session := first[len(first)-1].Get("session_id").String()
		for i, r := range []line{first[len(first)-1], more[len(more)-1]} {
			if r.Get("result_index").Int() != int64(i) || r.Get("session_id").String() != session || r.Get("is_error").Bool() {
				t.Errorf("result %d: %s", i, clip(r.Raw, 300))
			}
		}
		all := append(first, more...)
		var sub []line
		for _, a := range filter(all, isType("assistant")) {
			if a.Get("parent_tool_use_id").String() != "" {
				sub = append(sub, a)
			}
		}
		if got := texts(sub); !slices.Contains(got, "sub report") {
			t.Errorf("background subagent texts %q lack its report", got)
		}
		if n := len(filter(all, isType("system/task_notification"))); n != 1 {
			t.Errorf("%d task_notification lines, want 1", n)
		}
	})
}

func checkResult(t *testing.T, res line, session, text string, turns int64) {
	t.Helper()
	checks := []struct {
		field string
		got   any
		want  any
	}{
		{"type", res.Get("type").String(), "result"},
		{"subtype", res.Get("subtype").String(), "success"},
		{"is_error", res.Get("is_error").Bool(), false},
		{"session_id", res.Get("session_id").String(), session},
		{"result", res.Get("result").String(), text},
		{"num_turns", res.Get("num_turns").Int(), turns},
		{"terminal_reason", res.Get("terminal_reason").String(), "completed"},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("result %s = %v, want %v", c.field, c.got, c.want)
		}
	}
}

func checkOverflow(t *testing.T, lines []line, reason string) {
	t.Helper()
	as := filter(lines, isType("assistant"))
	if len(as) != 1 {
		t.Fatalf("%d assistant lines, want 1", len(as))
	}
	a := as[0]
	if a.Get("message.model").String() != "<synthetic>" || a.Get("error").String() != "invalid_request" || !a.Get("is_api_error_message").Bool() {
		t.Errorf("overflow assistant line: %s", clip(a.Raw, 400))
	}
	if got := texts(as); len(got) != 1 || !strings.HasPrefix(got[0], "Prompt is too long") {
		t.Errorf("overflow text %q", got)
	}
	res := lines[len(lines)-1]
	if !res.Get("is_error").Bool() || res.Get("terminal_reason").String() != reason || !strings.HasPrefix(res.Get("result").String(), "Prompt is too long") {
		t.Errorf("overflow result: is_error %v terminal_reason %q result %q",
			res.Get("is_error"), res.Get("terminal_reason"), clip(res.Get("result").String(), 80))
	}
}

func toolUseID(lines []line, name string) string {
	for _, a := range filter(lines, isType("assistant")) {
		for _, b := range a.Get("message.content").Array() {
			if b.Get("type").String() == "tool_use" && b.Get("name").String() == name {
				return b.Get("id").String()
			}
		}
	}
	return ""
}

func waitForFile(t *testing.T, path string) {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for {
		if _, err := os.Stat(path); err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never appeared", path)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func kinds(reqs []scriptedapi.Request) []string {
	var out []string
	for _, r := range reqs {
		out = append(out, string(r.Kind))
	}
	return out
}
