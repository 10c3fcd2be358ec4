package codex_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flowerhq/flower/handoffwriter"
	"github.com/flowerhq/flower/inbox"
	"github.com/flowerhq/flower/manifest"
	"github.com/flowerhq/flower/policy"
	"github.com/flowerhq/flower/scriptedresp"
	"github.com/flowerhq/flower/supervisor"
)

// tool is a work reply running cmd at context ctx.
func tool(ctx int, cmd string) scriptedresp.Reply {
	return scriptedresp.Reply{Calls: []scriptedresp.Call{{Cmd: cmd}}, Usage: scriptedresp.Usage{InputTokens: ctx, OutputTokens: 40}}
}

// A handoff asked for while a long command runs (flower handoff now) cuts
// the turn there: Codex's interrupt ends it at once, the command with it,
// and the same thread writes the handoff. (A threshold crossed cannot cut
// a command: Codex reports a response's usage only once its commands have
// run.)
func TestHandoffAskedDuringLongCommand(t *testing.T) {
	mark := filepath.Join(t.TempDir(), "started")
	j := &job{rounds: []int{30000}, final: 1, work: func(gen, n int) (scriptedresp.Reply, bool) {
		if gen == 0 && n == 2 {
			return tool(40000, "touch "+mark+"; exec sleep 120"), true
		}
		return scriptedresp.Reply{}, false
	}}
	r := newRun(t, j, personConfig, nil)
	go func() {
		for deadline := time.Now().Add(90 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if _, err := os.Stat(mark); err == nil {
				_, _ = inbox.Post(inbox.Dir(r.rt.RunDir(), "port"), inbox.Request{Kind: inbox.KindHandoff, From: "the test"})
				return
			}
		}
	}()
	start := time.Now()
	st := r.run(t, "port it")
	took := time.Since(start)
	if len(st.Generations) != 2 || st.Status != manifest.StatusSucceeded {
		t.Fatalf("%d generations, status %s (errors %q)", len(st.Generations), st.Status, st.Errors)
	}
	if h := st.Generations[0].Handoff; h == nil || h.Degraded || h.Reason != manifest.ReasonRequested {
		t.Fatalf("handoff %+v: want a whole one, asked for", h)
	}
	if took > 60*time.Second {
		t.Errorf("the job took %v: the cut waited for the command", took)
	}
	if out, _ := exec.Command("pgrep", "-f", "sleep 120").Output(); len(out) > 0 {
		t.Errorf("the cut command still runs: pids %s", out)
	}
}

// A writing turn that fails degrades the handoff (the seed's
// [降级:交接没写成]); the successor starts from it and the task.
func TestFailedWritingTurnDegrades(t *testing.T) {
	j := &job{rounds: []int{30000, 160000}, final: 1, write: func(gen int) scriptedresp.Reply {
		return scriptedresp.Reply{Failed: "server_error", FailedMessage: "the model fell over"}
	}}
	r := newRun(t, j, personConfig, nil)
	st := r.run(t, "TASK-MARK port it")
	if len(st.Generations) != 2 || st.Status != manifest.StatusSucceeded {
		t.Fatalf("%d generations, status %s (errors %q)", len(st.Generations), st.Status, st.Errors)
	}
	h := st.Generations[0].Handoff
	if h == nil || !h.Degraded || !strings.Contains(h.Why, "writing turn failed") {
		t.Fatalf("handoff %+v: want degraded for the failed writing turn", h)
	}
	if len(j.firsts) != 1 || !strings.Contains(j.firsts[0].LastUserText, handoffwriter.DegradedMarker) ||
		!strings.Contains(j.firsts[0].LastUserText, "TASK-MARK") {
		t.Fatalf("the successor's first prompt lacks the degraded handoff or the task")
	}
}

// An overflow (the Responses API's context_length_exceeded) is the
// overflow path: degraded, and a fresh thread goes on.
func TestOverflowDegrades(t *testing.T) {
	j := &job{rounds: []int{30000}, final: 1, work: func(gen, n int) (scriptedresp.Reply, bool) {
		if gen == 0 && n == 2 {
			return scriptedresp.Overflow(), true
		}
		return scriptedresp.Reply{}, false
	}}
	r := newRun(t, j, personConfig, nil)
	st := r.run(t, "port it")
	if len(st.Generations) != 2 || st.Status != manifest.StatusSucceeded {
		t.Fatalf("%d generations, status %s (errors %q)", len(st.Generations), st.Status, st.Errors)
	}
	if h := st.Generations[0].Handoff; h == nil || !h.Degraded || h.Reason != manifest.ReasonOverflow {
		t.Fatalf("handoff %+v: want a degraded one for the overflow", h)
	}
	if st.Generations[0].SessionID == st.Generations[1].SessionID {
		t.Error("the successor runs in the overflowed thread")
	}
}

// A compaction Codex attempts all the same (one response past 90 % of the
// window, before flower could cut) reaches flower's hook: it is stopped
// before any compaction request, recorded as blocked, and handed off; the
// thread takes no more turns, so the handoff is degraded.
func TestBlockedCompactionHandsOff(t *testing.T) {
	j := &job{rounds: []int{30000, 185000}, final: 1}
	r := newRun(t, j, personConfig, nil)
	st := r.run(t, "port it")
	if len(st.Generations) != 2 || st.Status != manifest.StatusSucceeded {
		t.Fatalf("%d generations, status %s (errors %q)", len(st.Generations), st.Status, st.Errors)
	}
	g := st.Generations[0]
	if len(g.BlockedCompactions) == 0 || g.BlockedCompactions[0].SessionID != g.SessionID {
		t.Errorf("blocked compactions %+v: want Codex's attempt recorded, in its thread", g.BlockedCompactions)
	}
	if g.Handoff == nil || !g.Handoff.Degraded {
		t.Errorf("handoff %+v: want a degraded one (the thread takes no more turns)", g.Handoff)
	}
	for _, q := range r.api.Requests() {
		if q.Compaction {
			t.Fatalf("request %d is a compaction request", q.Seq)
		}
	}
}

// With compact mode auto, Codex's own compaction stays on (no hold, no
// hook): it compacts at the person's limit, and flower records it.
func TestCompactAutoLeavesCodexCompaction(t *testing.T) {
	j := &job{rounds: []int{30000, 120000, 40000}, final: 0}
	r := newRun(t, j, personConfig, func(o *supervisor.Options) { o.Compact = policy.CompactAuto })
	st := r.run(t, "port it")
	if len(st.Generations) != 1 || st.Status != manifest.StatusSucceeded {
		t.Fatalf("%d generations, status %s (errors %q)", len(st.Generations), st.Status, st.Errors)
	}
	compactions := 0
	for _, q := range r.api.Requests() {
		if q.Compaction {
			compactions++
		}
	}
	if compactions == 0 || len(st.Generations[0].Compactions) == 0 {
		t.Fatalf("%d compaction requests, recorded %+v: want Codex's compaction, recorded", compactions, st.Generations[0].Compactions)
	}
}

// A rate limit (a 429 Codex gives up on) ends the turn limited: the
// engine waits it out, then the same thread goes on, with no attempt
// spent and no handoff.
func TestRateLimitIsWaitedOut(t *testing.T) {
	j := &job{rounds: []int{30000, 30000}, final: 0, work: func(gen, n int) (scriptedresp.Reply, bool) {
		switch n {
		case 2:
			return scriptedresp.RateLimited(0), true
		case 3:
			return scriptedresp.Reply{Text: "all done", Usage: scriptedresp.Usage{InputTokens: 35000, OutputTokens: 10}}, true
		}
		return scriptedresp.Reply{}, false
	}}
	r := newRun(t, j, personConfig, func(o *supervisor.Options) { o.LimitBackoff = 500 * time.Millisecond })
	st := r.run(t, "port it")
	if len(st.Generations) != 1 || st.Status != manifest.StatusSucceeded || st.Attempts != 0 {
		t.Fatalf("%d generations, status %s, attempts %d (errors %q): want the same session on after the wait", len(st.Generations), st.Status, st.Attempts, st.Errors)
	}
	if w := st.Generations[0].LimitWaits; len(w) != 1 {
		t.Errorf("limit waits %+v: want the one", w)
	}
	reqs := r.api.Requests()
	if last := reqs[len(reqs)-1]; !strings.Contains(string(last.Body), "echo working") {
		t.Errorf("the request after the wait lacks the thread's history: not the same thread")
	}
}

// A writing turn that calls a command is stopped as the command starts
// (the Codex front reports a writing turn's tool call at once, not with
// its response's usage), and the handoff is asked for again.
func TestWritingTurnCommandStopped(t *testing.T) {
	mark := filepath.Join(t.TempDir(), "ran")
	var asked int
	// Both writing requests count as a session's end in job: the
	// successor is its third.
	j := &job{rounds: []int{30000, 160000}, final: 2, write: func(gen int) scriptedresp.Reply {
		asked++
		if asked == 1 {
			return tool(150000, "sleep 2; touch "+mark)
		}
		return scriptedresp.Reply{Text: document(gen), Usage: scriptedresp.Usage{InputTokens: 150000, OutputTokens: 400}}
	}}
	r := newRun(t, j, personConfig, nil)
	st := r.run(t, "port it")
	if len(st.Generations) != 2 || st.Status != manifest.StatusSucceeded {
		t.Fatalf("%d generations, status %s (errors %q)", len(st.Generations), st.Status, st.Errors)
	}
	if h := st.Generations[0].Handoff; h == nil || h.Degraded || h.Outcome != manifest.OutcomeWrittenOnRetry {
		t.Fatalf("handoff %+v: want a whole one, written when asked again", h)
	}
	time.Sleep(3 * time.Second)
	if _, err := os.Stat(mark); err == nil {
		t.Error("the writing turn's command ran to its end: it was not stopped as it started")
	}
}
