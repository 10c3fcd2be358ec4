package integration_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/flowerhq/flower/handoffwriter"
	"github.com/flowerhq/flower/manifest"
	"github.com/flowerhq/flower/scriptedapi"
)

// The harness's own retries are kept to one, so that it gives up on a
// limit in seconds; oauth makes it a subscriber's, which reads the unified
// rate-limit headers (DESIGN.md «Limits»).
var (
	oneRetry = "CLAUDE_CODE_MAX_RETRIES=1"
	oauth    = []string{"ANTHROPIC_API_KEY=", "CLAUDE_CODE_OAUTH_TOKEN=sk-ant-oat01-scripted"}
)

// unattendedModel is a scripted model for the tests of DESIGN.md
// «Unattended: limits, budget, deadline»: the working turns follow plans
// (one per generation, the last reply repeated), the writing turn answers
// goodHandoff; limit, when set, answers a request in its place (ok false
// lets the request through). It keeps every main-thread request.
type unattendedModel struct {
	mu    sync.Mutex
	plans [][]scriptedapi.Reply
	gen   int
	i     int
	limit func(r *scriptedapi.Request, writing bool) (scriptedapi.Reply, bool)
	main  []scriptedapi.Request
}

func (m *unattendedModel) script(r *scriptedapi.Request) scriptedapi.Reply {
	if r.Kind != scriptedapi.KindMain {
		return scriptedapi.Harmless(r)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.main = append(m.main, *r)
	writing := strings.Contains(r.LastUserText, handoffwriter.PromptTag)
	if m.limit != nil {
		if rep, ok := m.limit(r, writing); ok {
			return rep
		}
	}
	if writing {
		rep := goodHandoff(m.gen)
		m.gen++
		m.i = 0
		return rep
	}
	plan := m.plans[min(m.gen, len(m.plans)-1)]
	rep := plan[min(m.i, len(plan)-1)]
	m.i++
	return rep
}

func (m *unattendedModel) requests() []scriptedapi.Request {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]scriptedapi.Request{}, m.main...)
}

func (m *unattendedModel) setLimit(f func(r *scriptedapi.Request, writing bool) (scriptedapi.Reply, bool)) {
	m.mu.Lock()
	m.limit = f
	m.mu.Unlock()
}

// continueRun runs flower continue on g's run with flags, and waits.
func continueRun(t *testing.T, g *guarRun, flags ...string) (int, string) {
	t.Helper()
	h := g.front.start(g, append([]string{"continue", "-C", g.ws, "--run-dir", g.runDir}, flags...), "")
	return g.wait(h), h.output()
}

// TestLimitWaitedOut: a 429 whose retry-after is 3 s, mid-turn, on an API
// key: the harness retries once itself and gives up; flower waits the
// announced retry-after, says so, and sends the same session on (the next
// request continues the same conversation). The manifest records the wait
// and no attempt.
func TestLimitWaitedOut(t *testing.T) {
	t.Parallel()
	m := &unattendedModel{plans: [][]scriptedapi.Reply{{bash(50_000, "echo one >> work.txt"), done(60_000)}}}
	limited := 0
	m.limit = func(r *scriptedapi.Request, writing bool) (scriptedapi.Reply, bool) {
		// The second working request and the harness's own retry of it.
		if len(m.main) >= 2 && limited < 2 {
			limited++
			return scriptedapi.RateLimited(3*time.Second, time.Now().Add(3*time.Second)), true
		}
		return scriptedapi.Reply{}, false
	}
	g := newGuarRun(t, headlessGuar{}, m.script, oneRetry)
	events := filepath.Join(t.TempDir(), "events")
	h := g.run(guarTask, "--window", "200000", "--limit-backoff", "1s", "--lang", "en", "--notify", notifyTo(events))
	code := g.wait(h)
	st := g.step()
	out := h.output()
	if code != 0 || st.Status != manifest.StatusSucceeded {
		t.Fatalf("exit %d, status %s; want 0, succeeded:\n%s", code, st.Status, out)
	}
	if st.Attempts != 0 || len(st.Generations) != 1 {
		t.Errorf("%d attempts, %d generations; want 0 and 1: a limit is no failure and needs no handoff", st.Attempts, len(st.Generations))
	}
	waits := st.Generations[0].LimitWaits
	if len(waits) != 1 || waits[0].Kind != "rate_limit" || waits[0].End == nil || waits[0].Stopped || waits[0].ResetAt != nil {
		t.Fatalf("limit waits %+v; want one rate-limit wait, ended, no reset shown", waits)
	}
	if took := waits[0].End.Sub(waits[0].Start); took < 3*time.Second {
		t.Errorf("waited %s; the harness announced the retry-after of 3 s", took)
	}
	if !strings.Contains(out, "rate limit reached: waiting until ") || !strings.Contains(out, "the same session goes on") {
		t.Errorf("flower did not say it waits:\n%s", out)
	}
	reqs := m.requests()
	if len(reqs) != 4 {
		t.Fatalf("%d main requests, want 4 (work, the limited one and its retry, the continuation)", len(reqs))
	}
	next := reqs[3]
	if next.SessionID != reqs[0].SessionID || !strings.Contains(next.LastUserText, "that stopped your last turn has lifted") ||
		!strings.Contains(next.AllText, "GUAR-TASK-MARK") || !strings.Contains(next.AllText, "running echo one") {
		t.Errorf("the request after the wait: session %s (first %s), last user text %q, conversation %q: want the same conversation, continued",
			next.SessionID, reqs[0].SessionID, clip(next.LastUserText, 200), clip(next.AllText, 400))
	}
	if gap := next.Time.Sub(reqs[2].Time); gap < 3*time.Second {
		t.Errorf("the continuation came %s after the last limited request, before the retry-after", gap)
	}
	got := notified(t, events)
	if kinds := kindsOf(got); kinds != "limit_wait_begin,limit_wait_end,step_end" {
		t.Fatalf("notified %s; want limit_wait_begin, limit_wait_end, step_end", kinds)
	}
	if b := got[0]; b.Get("limit").String() != "rate_limit" || b.Get("session_id").String() != reqs[0].SessionID {
		t.Errorf("limit_wait_begin %s; want the rate limit and the session", b.Raw)
	}
}

// notifyTo is a --notify command that appends each event to file, one a line.
func notifyTo(file string) string { return "{ cat; echo; } >> " + file }

// notified reads the events notifyTo's command recorded.
func notified(t *testing.T, file string) []gjson.Result {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var out []gjson.Result
	for _, l := range strings.Split(string(b), "\n") {
		if strings.TrimSpace(l) != "" {
			out = append(out, gjson.Parse(l))
		}
	}
	return out
}

func kindsOf(evs []gjson.Result) string {
	var k []string
	for _, e := range evs {
		k = append(k, e.Get("kind").String())
	}
	return strings.Join(k, ",")
}

// TestLimitOnWritingTurn: a subscription's usage limit rejects the writing
// turn, its reset 3 s ahead. flower waits until the reset, asks the same
// session for its handoff again, and the handoff is whole.
func TestLimitOnWritingTurn(t *testing.T) {
	t.Parallel()
	m := &unattendedModel{plans: twoGens}
	var reset time.Time
	m.limit = func(r *scriptedapi.Request, writing bool) (scriptedapi.Reply, bool) {
		if !writing {
			return scriptedapi.Reply{}, false
		}
		if reset.IsZero() {
			reset = r.Time.Add(3 * time.Second).Truncate(time.Second)
		}
		if r.Time.Before(reset) {
			return scriptedapi.UsageLimited(reset), true
		}
		return scriptedapi.Reply{}, false
	}
	g := newGuarRun(t, headlessGuar{}, m.script, oauth...)
	h := g.run(guarTask, "--window", "200000", "--lang", "en")
	code := g.wait(h)
	st := g.step()
	if code != 0 || st.Status != manifest.StatusSucceeded || len(st.Generations) != 2 {
		t.Fatalf("exit %d, status %s, %d generations; want 0, succeeded, 2:\n%s", code, st.Status, len(st.Generations), h.output())
	}
	gen := st.Generations[0]
	if gen.Handoff == nil || gen.Handoff.Degraded || gen.Handoff.Outcome != manifest.OutcomeWritten {
		t.Fatalf("handoff %+v; want a whole one, written", gen.Handoff)
	}
	if st.Attempts != 0 || len(gen.LimitWaits) != 1 {
		t.Fatalf("%d attempts, waits %+v; want none and one wait", st.Attempts, gen.LimitWaits)
	}
	w := gen.LimitWaits[0]
	if w.Kind != "usage_limit" || !w.Writing || w.ResetAt == nil || !w.ResetAt.Equal(reset) || w.End == nil || w.End.Before(reset) {
		t.Errorf("wait %+v; want a usage limit on the writing turn, reset %s, ended after it", w, reset)
	}
	var writing []scriptedapi.Request
	for _, r := range m.requests() {
		if strings.Contains(r.LastUserText, handoffwriter.PromptTag) {
			writing = append(writing, r)
		}
	}
	if len(writing) != 2 || writing[1].SessionID != writing[0].SessionID || writing[1].Time.Before(reset) {
		t.Errorf("%d writing requests; want the rejected one and one after the reset %s, same session", len(writing), reset)
	}
}

// TestMaxWait: a usage limit whose reset is an hour ahead, --max-wait 2s:
// the step stops at once with its own status and exit code, and a degraded
// handoff flower wrote itself on disk (a limited session cannot write
// one), its session live and not burned (its context is intact); flower
// continue, once the limit lifted, finishes it in the same session.
func TestMaxWait(t *testing.T) {
	t.Parallel()
	m := &unattendedModel{plans: [][]scriptedapi.Reply{{bash(50_000, "echo one >> work.txt"), done(60_000)}}}
	m.limit = func(r *scriptedapi.Request, writing bool) (scriptedapi.Reply, bool) {
		if len(m.main) == 2 {
			return scriptedapi.UsageLimited(time.Now().Add(time.Hour)), true
		}
		return scriptedapi.Reply{}, false
	}
	g := newGuarRun(t, headlessGuar{}, m.script, oauth...)
	events := filepath.Join(t.TempDir(), "events")
	h := g.run(guarTask, "--window", "200000", "--max-wait", "2s", "--notify", notifyTo(events))
	code := g.wait(h)
	st := g.step()
	if code != 6 || st.Status != manifest.StatusLimited {
		t.Fatalf("exit %d, status %s; want 6, %s:\n%s", code, st.Status, manifest.StatusLimited, h.output())
	}
	if st.SessionID == "" || st.Attempts != 0 || len(st.Generations[0].LimitWaits) != 1 || !st.Generations[0].LimitWaits[0].Stopped {
		t.Fatalf("session %q, %d attempts, waits %+v; want the session live, no attempt, one wait not made", st.SessionID, st.Attempts, st.Generations[0].LimitWaits)
	}
	// The session cannot write while the API refuses it: flower left a
	// degraded handoff on disk, and the session is not burned by it.
	w := st.Generations[0].LimitWaits[0]
	doc, err := os.ReadFile(w.HandoffPath)
	if err != nil || !strings.Contains(string(doc), handoffwriter.DegradedMarker) || !strings.Contains(string(doc), "did not lift within --max-wait") {
		t.Fatalf("the handoff left at %q (%v) is not the degraded one naming --max-wait:\n%s", w.HandoffPath, err, doc)
	}
	if len(st.Retired) != 0 || st.Generations[0].Handoff != nil || st.HandoffPath != w.HandoffPath {
		t.Fatalf("retired %q, generation handoff %+v, handoff_path %q: want the session live and the document recorded", st.Retired, st.Generations[0].Handoff, st.HandoffPath)
	}
	// A hook hears of the document as a degraded handoff, then of the
	// stop (no wait began: the reset is past --max-wait already).
	got := notified(t, events)
	if kinds := kindsOf(got); kinds != "handoff,step_end" {
		t.Fatalf("notified %s; want handoff, step_end", kinds)
	}
	if hv := got[0]; !hv.Get("degraded").Bool() || hv.Get("path").String() != w.HandoffPath || !strings.Contains(hv.Get("why").String(), "--max-wait") {
		t.Errorf("handoff event %s; want the degraded document flower left, with its path and why", hv.Raw)
	}
	if end := got[1]; end.Get("status").String() != manifest.StatusLimited {
		t.Errorf("step_end %s; want status %s", end.Raw, manifest.StatusLimited)
	}
	first := m.requests()[0].SessionID
	m.setLimit(nil)
	code, out := continueRun(t, g)
	st = g.step()
	if code != 0 || st.Status != manifest.StatusSucceeded || len(st.Generations) != 1 {
		t.Fatalf("continue: exit %d, status %s, %d generations; want 0, succeeded, 1:\n%s", code, st.Status, len(st.Generations), out)
	}
	reqs := m.requests()
	if last := reqs[len(reqs)-1]; last.SessionID != first {
		t.Errorf("continue asked in session %s, the step's was %s", last.SessionID, first)
	}
}

// TestMaxWaitWriting: a usage limit on the writing turn, lasting past
// --max-wait: the step stops with the session live and its handoff not
// degraded; flower continue resumes the session, which writes the handoff
// whole, and the successor finishes.
func TestMaxWaitWriting(t *testing.T) {
	t.Parallel()
	m := &unattendedModel{plans: twoGens}
	m.limit = func(r *scriptedapi.Request, writing bool) (scriptedapi.Reply, bool) {
		if writing {
			return scriptedapi.UsageLimited(time.Now().Add(time.Hour)), true
		}
		return scriptedapi.Reply{}, false
	}
	g := newGuarRun(t, headlessGuar{}, m.script, oauth...)
	h := g.run(guarTask, "--window", "200000", "--max-wait", "1m")
	code := g.wait(h)
	st := g.step()
	if code != 6 || st.Status != manifest.StatusLimited || st.SessionID == "" || st.Generations[0].Handoff != nil {
		t.Fatalf("exit %d, status %s, session %q, handoff %+v; want 6, %s, the session live, no handoff yet:\n%s",
			code, st.Status, st.SessionID, st.Generations[0].Handoff, manifest.StatusLimited, h.output())
	}
	if w := st.Generations[0].LimitWaits; len(w) != 1 || !w[0].Writing || !w[0].Stopped {
		t.Errorf("waits %+v; want one on the writing turn, not made", w)
	}
	session := st.SessionID
	m.setLimit(nil)
	code, out := continueRun(t, g)
	st = g.step()
	if code != 0 || st.Status != manifest.StatusSucceeded || len(st.Generations) != 2 {
		t.Fatalf("continue: exit %d, status %s, %d generations; want 0, succeeded, 2:\n%s", code, st.Status, len(st.Generations), out)
	}
	if ho := st.Generations[0].Handoff; ho == nil || ho.Degraded || st.Generations[0].SessionID != session {
		t.Errorf("generation 1: session %s (was %s), handoff %+v; want the same session's whole handoff", st.Generations[0].SessionID, session, ho)
	}
}

// TestBounds: the step's budget, then its deadline, reached mid-turn. The
// session is cut at the next message boundary, writes its whole handoff
// (its writing turn passing the budget), and the step stops with the
// bound's status and exit code; flower continue with the bound raised
// finishes it from the handoff.
func TestBounds(t *testing.T) {
	t.Parallel()
	rows := []struct {
		name   string
		front  guarFront
		plan   []scriptedapi.Reply
		flags  []string
		raise  []string
		status string
		code   int
		reason string
	}{
		// Each response of 100k context costs about $0.03 at Sonnet's
		// list price (the harness's figure and flower's estimate agree
		// for it): the second one passes a budget of $0.05.
		{name: "budget", plan: []scriptedapi.Reply{bash(100_000, "echo one >> work.txt"), bash(100_000, "echo two >> work.txt"),
			bash(100_000, "echo three >> work.txt"), bash(100_000, "echo four >> work.txt"), bash(100_000, "echo five >> work.txt"), done(100_000)},
			flags: []string{"--max-budget-usd", "0.05", "--model", "claude-sonnet-4-5"}, raise: []string{"--max-budget-usd", "10"},
			status: manifest.StatusBudget, code: 4, reason: manifest.ReasonBudget},
		// The interactive front: the harness's screen says its cost only
		// as it exits, so the estimate alone reaches the budget. Its cut
		// is a key the screen takes in its own time: the tools take one
		// (as real ones do), so that the cut meets the boundary it was
		// sent for rather than racing instant tools and an instant API.
		{name: "budget on the interactive front", front: interactiveGuar{}, plan: []scriptedapi.Reply{bash(100_000, "sleep 0.5; echo one >> work.txt"), bash(100_000, "sleep 0.5; echo two >> work.txt"),
			bash(100_000, "sleep 0.5; echo three >> work.txt"), bash(100_000, "sleep 0.5; echo four >> work.txt"), bash(100_000, "sleep 0.5; echo five >> work.txt"), done(100_000)},
			flags: []string{"--max-budget-usd", "0.05", "--model", "claude-sonnet-4-5"}, raise: []string{"--max-budget-usd", "10"},
			status: manifest.StatusBudget, code: 4, reason: manifest.ReasonBudget},
		// Each tool call takes a second; the deadline comes a few calls in.
		{name: "deadline", plan: sleepers(12), flags: []string{"--max-duration", "5s"}, raise: []string{"--max-duration", "5m"},
			status: manifest.StatusDeadline, code: 5, reason: manifest.ReasonDeadline},
	}
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			t.Parallel()
			m := &unattendedModel{plans: [][]scriptedapi.Reply{row.plan, {done(20_000)}}}
			fr := row.front
			if fr == nil {
				fr = headlessGuar{}
			}
			g := newGuarRun(t, fr, m.script)
			events := filepath.Join(t.TempDir(), "events")
			h := g.run(guarTask, append([]string{"--window", "200000", "--lang", "en", "--notify", notifyTo(events)}, row.flags...)...)
			code := g.wait(h)
			st := g.step()
			if code != row.code || st.Status != row.status {
				t.Fatalf("exit %d, status %s; want %d, %s:\n%s", code, st.Status, row.code, row.status, h.output())
			}
			if len(st.Generations) != 1 || st.Generations[0].Handoff == nil {
				t.Fatalf("%d generations, handoff %+v; want one generation, handed off", len(st.Generations), st.Generations[0].Handoff)
			}
			ho := st.Generations[0].Handoff
			if ho.Degraded || ho.Reason != row.reason || ho.Outcome != manifest.OutcomeWritten {
				t.Errorf("handoff %+v; want a whole one, reason %s", ho, row.reason)
			}
			reqs := m.requests()
			t.Logf("model %s; flower.log results: %s", reqs[0].Model, grepLog(t, g, `turn cost`))
			working := 0
			for _, r := range reqs {
				if !strings.Contains(r.LastUserText, handoffwriter.PromptTag) {
					working++
				}
			}
			if working >= len(row.plan) || working < 2 {
				t.Errorf("%d working requests of the plan's %d: want the cut mid-turn", working, len(row.plan))
			}
			if strings.HasPrefix(row.name, "budget") {
				// The cut came at the boundary after the second response:
				// at most the request in flight followed.
				if working > 3 {
					t.Errorf("%d working requests; the budget was passed by the second response", working)
				}
				if (row.front == nil && st.CostUSD <= 0.05) || st.BudgetUSD != 0.05 {
					t.Errorf("cost $%v, budget $%v; want past the budget of $0.05, recorded", st.CostUSD, st.BudgetUSD)
				}
			}
			if row.front == nil && !strings.Contains(h.output(), "hands off at the message boundary, then the step stops") {
				t.Errorf("flower did not say why it stops:\n%s", h.output())
			}
			got := notified(t, events)
			if kinds, want := kindsOf(got), row.reason+"_reached,handoff,step_end"; kinds != want {
				t.Errorf("notified %s; want %s", kinds, want)
			} else if end := got[2]; end.Get("status").String() != row.status || end.Get("cost_usd").Float() != st.CostUSD {
				t.Errorf("step_end %s; want status %s, cost %v", end.Raw, row.status, st.CostUSD)
			}
			if row.name == "budget" {
				// A continue that does not raise the budget starts nothing.
				before := len(m.requests())
				code, out := continueRun(t, g)
				if st := g.step(); code != row.code || st.Status != row.status || len(m.requests()) != before || len(st.Generations) != 1 {
					t.Fatalf("continue without a new budget: exit %d, status %s, %d new requests, %d generations; want %d, %s, none, 1:\n%s",
						code, st.Status, len(m.requests())-before, len(st.Generations), row.code, row.status, out)
				}
				if !strings.Contains(out, "raise it with --max-budget-usd") {
					t.Errorf("continue without a new budget does not say to raise it:\n%s", out)
				}
			}
			code, out := continueRun(t, g, row.raise...)
			st = g.step()
			if code != 0 || st.Status != manifest.StatusSucceeded || len(st.Generations) != 2 {
				t.Fatalf("continue %v: exit %d, status %s, %d generations; want 0, succeeded, 2:\n%s", row.raise, code, st.Status, len(st.Generations), out)
			}
			last := m.requests()[len(m.requests())-1]
			if !strings.Contains(last.AllText, "DOING-MARK-1") {
				t.Errorf("the continued step did not start from the handoff")
			}
		})
	}
}

// sleepers is a plan of n tool calls of a second each, then done.
func sleepers(n int) []scriptedapi.Reply {
	var plan []scriptedapi.Reply
	for i := range n {
		plan = append(plan, bash(50_000, fmt.Sprintf("sleep 1; echo %d >> work.txt", i)))
	}
	return append(plan, done(50_000))
}

func grepLog(t *testing.T, g *guarRun, what string) string {
	b, _ := os.ReadFile(filepath.Join(g.runDir, "flower.log"))
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.Contains(l, what) {
			out = append(out, clip(l, 300))
		}
	}
	return strings.Join(out, "\n")
}
