package integration_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flowerhq/flower/handoffwriter"
	flowerharness "github.com/flowerhq/flower/harness"
	"github.com/flowerhq/flower/manifest"
	"github.com/flowerhq/flower/policy"
	"github.com/flowerhq/flower/scriptedapi"
	"github.com/flowerhq/flower/supervisor"
)

// job is a scripted model doing work in generations. Each generation's main
// thread runs through its plan of replies (one per working request); the
// handoff-writing turn is answered with the generation's handoff. The plan of
// the last generation ends with a text reply, which ends the turn and the step.
type job struct {
	mu    sync.Mutex
	gen   int // 0-based generation of the scripted model
	i     int // working requests answered in this generation
	plans [][]scriptedapi.Reply
	// handoff returns the writing turn's reply for a generation.
	handoff func(gen int) scriptedapi.Reply
	// sub answers subagent requests.
	sub scriptedapi.Script
	// marks: request sequence numbers of interest.
	writingSeq []int // requests recognised as the writing turn
	firstSeq   []int // first working request of each generation
}

func (j *job) script(r *scriptedapi.Request) scriptedapi.Reply {
	if r.Kind == scriptedapi.KindSubagent {
		if j.sub != nil {
			return j.sub(r)
		}
		return scriptedapi.Harmless(r)
	}
	if r.Kind != scriptedapi.KindMain {
		return scriptedapi.Harmless(r)
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if strings.Contains(r.LastUserText, handoffwriter.PromptTag) {
		j.writingSeq = append(j.writingSeq, r.Seq)
		reply := j.handoff(j.gen)
		j.gen++
		j.i = 0
		return reply
	}
	// A successor whose predecessor wrote no handoff (overflow) starts
	// without a writing turn having advanced the generation.
	if j.i > 0 && r.Replies == 0 && strings.Contains(r.LastUserText, "You are taking over") {
		j.gen++
		j.i = 0
	}
	plan := j.plans[min(j.gen, len(j.plans)-1)]
	if j.i == 0 {
		j.firstSeq = append(j.firstSeq, r.Seq)
	}
	reply := plan[min(j.i, len(plan)-1)]
	j.i++
	return reply
}

// generationsSeen is how many generations' first requests reached the
// model so far (safe while the server still answers).
func (j *job) generationsSeen() int {
	j.mu.Lock()
	defer j.mu.Unlock()
	return len(j.firstSeq)
}

func usage(ctx int) scriptedapi.Usage {
	return scriptedapi.Usage{InputTokens: 100, CacheReadInputTokens: ctx - 100, OutputTokens: 50}
}

func bash(ctx int, cmd string) scriptedapi.Reply {
	return scriptedapi.Reply{Text: "running " + cmd, Usage: usage(ctx),
		ToolUses: []scriptedapi.ToolUse{{Name: "Bash", Input: map[string]any{"command": cmd, "description": "work"}}}}
}

func done(ctx int) scriptedapi.Reply {
	return scriptedapi.Reply{Text: "All done: the task is complete.", Usage: usage(ctx)}
}

func goodHandoff(gen int) scriptedapi.Reply {
	return scriptedapi.Reply{Usage: usage(156_000), Text: fmt.Sprintf(`## 现在在做 (doing)
Generation %[1]d was adding the shim header DOING-MARK-%[1]d.

## 已定的事 (decided)
- Keep business sources untouched: the user said so.

## 走不通的 (deadends)
- -D_ANSI_SOURCE switched off other macros (DEADEND-MARK-%[1]d).

## 下一步 (next)
Run make on a clean clone NEXT-MARK-%[1]d.

## 现场 (scene)
- Makefile, shim/sig.h
`, gen+1)}
}

type flowerRun struct {
	t         *testing.T
	srv       *scriptedapi.Server
	workspace string
	runDir    string
	events    []supervisor.Event
	mu        sync.Mutex
}

func (f *flowerRun) onEvent(ev supervisor.Event) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.events = append(f.events, ev)
}

func (f *flowerRun) handoffEvents(phase string) []supervisor.Event {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []supervisor.Event
	for _, ev := range f.events {
		if ev.Kind == supervisor.KindHandoff && ev.Phase == phase {
			out = append(out, ev)
		}
	}
	return out
}

// harnessEnv is the environment of a harness under test: this process's
// minus anything that could reach a real API, plus the scripted server and a
// HOME of its own.
func harnessEnv(t *testing.T, srv *scriptedapi.Server, extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "ANTHROPIC_") || strings.HasPrefix(k, "CLAUDE") || k == "HOME" || k == "DISABLE_AUTO_COMPACT" {
			continue
		}
		env = append(env, kv)
	}
	env = append(env, "HOME="+t.TempDir())
	env = append(env, srv.Env()...)
	return append(env, extra...)
}

// runFlower runs one step through the library against the real harness.
func runFlower(t *testing.T, j *job, opts supervisor.Options, task string, env ...string) (*flowerRun, *manifest.StepResult, error) {
	t.Helper()
	srv := startServer(t, j.script)
	f := &flowerRun{t: t, srv: srv, workspace: t.TempDir()}
	f.runDir = filepath.Join(f.workspace, ".flower", "runs", "test")
	opts.Workspace = f.workspace
	opts.RunDir = f.runDir
	opts.HarnessPath = harnessPath(t)
	opts.Env = harnessEnv(t, srv, env...)
	if opts.HarnessArgs == nil {
		opts.HarnessArgs = []string{"--allowedTools", "Bash"}
	}
	opts.OnEvent = f.onEvent
	if opts.Grace == 0 {
		opts.Grace = 3 * time.Second
	}
	if opts.Front == nil {
		opts.Front = flowerharness.Headless{}
	}
	rt, err := supervisor.New(opts)
	if err != nil {
		t.Fatalf("supervisor.New: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	st, err := rt.RunStep(ctx, "干活", task)
	// The manifest on disk must say what RunStep returned.
	m, lerr := manifest.Load(manifest.Path(f.runDir))
	if lerr != nil {
		t.Fatalf("load manifest: %v", lerr)
	}
	if disk := m.Step("干活"); disk == nil || disk.Status != st.Status || disk.SessionID != st.SessionID || len(disk.Generations) != len(st.Generations) {
		t.Fatalf("manifest on disk differs from the returned step")
	}
	return f, st, err
}

func window200k(headroom int) *policy.HandoffPolicy {
	return &policy.HandoffPolicy{Enabled: true, Window: 200_000, Headroom: headroom, MaxGenerations: 8}
}

// Case 1 and 2: three generations, two handoffs at >= 150k, files, successor
// prompt, manifest bookkeeping; the writing turn (reported at 156k, above the
// threshold) is not cut, so neither handoff is degraded.
func TestThreeGenerations(t *testing.T) {
	t.Parallel()
	work := []scriptedapi.Reply{bash(100_000, "echo one >> work.txt"), bash(140_000, "echo two >> work.txt"), bash(155_000, "echo three >> work.txt")}
	j := &job{plans: [][]scriptedapi.Reply{work, work, {bash(30_000, "echo final >> work.txt"), done(40_000)}}, handoff: goodHandoff}
	var afterFreeze []string
	f, st, err := runFlower(t, j, supervisor.Options{Handoff: window200k(0), Workbench: true,
		AfterFreeze: func(p string) { afterFreeze = append(afterFreeze, p) }}, "Build the shim. TASK-MARK")
	if err != nil {
		t.Fatalf("RunStep: %v\nerrors: %q", err, st.Errors)
	}
	if st.Status != manifest.StatusSucceeded || len(st.Generations) != 3 {
		t.Fatalf("status %s with %d generations, want succeeded with 3; errors %q", st.Status, len(st.Generations), st.Errors)
	}
	// Two handoffs, each at >= 150k, none degraded (case 2: DESIGN.md «Writing turn»).
	for i, g := range st.Generations[:2] {
		h := g.Handoff
		if h == nil {
			t.Fatalf("generation %d has no handoff record", i+1)
		}
		if h.Context < 150_000 || h.Reason != manifest.ReasonThreshold || h.Degraded {
			t.Errorf("generation %d handoff: %+v", i+1, h)
		}
		if h.SHA256Written == "" || h.SHA256Written != h.SHA256Launched {
			t.Errorf("generation %d: hashes %q / %q should match (no edit)", i+1, h.SHA256Written, h.SHA256Launched)
		}
	}
	if st.Generations[2].Handoff != nil {
		t.Errorf("the last generation must not have handed off")
	}
	for _, e := range st.Errors {
		if strings.Contains(e, "交接降级") {
			t.Errorf("degraded entry in errors: %q", e)
		}
	}
	if len(j.writingSeq) != 2 {
		t.Errorf("%d writing turns reached the server, want 2", len(j.writingSeq))
	}
	// The writing turns were not interrupted: each was answered once and
	// its text parsed complete (above), and flower sent no interrupt then.

	// Files: the notes file holds generation 2, the archive generation 1.
	notes := filepath.Join(f.workspace, ".flower", "notes", "交接-干活.md")
	b, err := os.ReadFile(notes)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "DOING-MARK-2") || strings.Contains(string(b), "DOING-MARK-1") {
		t.Errorf("notes file should hold generation 2's handoff:\n%s", b)
	}
	archived, _ := filepath.Glob(filepath.Join(f.workspace, ".flower", "notes", "archive", "交接", "干活-*.md"))
	if len(archived) != 1 {
		t.Fatalf("archive holds %d files, want 1", len(archived))
	}
	if a, _ := os.ReadFile(archived[0]); !strings.Contains(string(a), "DOING-MARK-1") {
		t.Errorf("archive should hold generation 1's handoff:\n%s", a)
	}
	if len(afterFreeze) != 2 || afterFreeze[0] != notes {
		t.Errorf("AfterFreeze paths %q", afterFreeze)
	}

	// The successor's first request carries the handoff's doing and next.
	reqs := f.srv.Requests()
	bySeq := map[int]scriptedapi.Request{}
	for _, r := range reqs {
		bySeq[r.Seq] = r
	}
	if len(j.firstSeq) != 3 {
		t.Fatalf("first requests %v", j.firstSeq)
	}
	for g := 1; g <= 2; g++ {
		first := bySeq[j.firstSeq[g]]
		for _, mark := range []string{fmt.Sprintf("DOING-MARK-%d", g), fmt.Sprintf("NEXT-MARK-%d", g), fmt.Sprintf("DEADEND-MARK-%d", g), "taking over"} {
			if !strings.Contains(first.AllText, mark) {
				t.Errorf("generation %d's first request lacks %q", g+1, mark)
			}
		}
		if strings.Contains(first.AllText, "TASK-MARK") && g == 1 && strings.Contains(first.AllText, "running echo one") {
			t.Errorf("generation 2 is not a fresh session: it carries generation 1's history")
		}
	}

	// Manifest: retired both burned ids in order, session_id the live one.
	ids := []string{st.Generations[0].SessionID, st.Generations[1].SessionID, st.Generations[2].SessionID}
	if ids[0] == "" || ids[0] == ids[1] || ids[1] == ids[2] {
		t.Fatalf("generation session ids %q must be distinct and set", ids)
	}
	if len(st.Retired) != 2 || st.Retired[0] != ids[0] || st.Retired[1] != ids[1] {
		t.Errorf("retired %q, want %q", st.Retired, ids[:2])
	}
	if st.SessionID != ids[2] {
		t.Errorf("session_id %q, want the live successor %q", st.SessionID, ids[2])
	}
	if st.Attempts != 0 {
		t.Errorf("attempts %d, want 0: handoffs are not failures", st.Attempts)
	}
	var cost float64
	turns := 0
	for _, g := range st.Generations {
		if g.CostUSD <= 0 || g.NumTurns <= 0 {
			t.Errorf("generation %d: cost %v turns %d", g.N, g.CostUSD, g.NumTurns)
		}
		cost += g.CostUSD
		turns += g.NumTurns
	}
	if diff := cost - st.CostUSD; diff > 1e-9 || diff < -1e-9 || turns != st.NumTurns {
		t.Errorf("step cost %v turns %d, generations sum to %v and %d", st.CostUSD, st.NumTurns, cost, turns)
	}
	if st.Context != 40_000 {
		t.Errorf("context %d, want the last round's 40000", st.Context)
	}
	// Events: one near per generation that passed 130k, writing and done per handoff.
	if n := len(f.handoffEvents(supervisor.PhaseNear)); n != 2 {
		t.Errorf("%d near events, want 2 (one per generation)", n)
	}
	if n := len(f.handoffEvents(supervisor.PhaseWriting)); n != 2 {
		t.Errorf("%d writing events, want 2", n)
	}
	dones := f.handoffEvents(supervisor.PhaseDone)
	if len(dones) != 2 || dones[1].Path != notes || len(dones[1].Sections) != 5 || dones[1].Window != 200_000 {
		t.Errorf("done events: %+v", dones)
	}
	// Work really happened in the workspace.
	if w, _ := os.ReadFile(filepath.Join(f.workspace, "work.txt")); !strings.Contains(string(w), "final") {
		t.Errorf("work.txt = %q", w)
	}
	// Auto-compact was off (DESIGN.md «Auto-compact off»), as the harness
	// says: asked once per run, by the first generation, and the answer is
	// the run's (DESIGN.md «Window from the harness»).
	m, err := manifest.Load(manifest.Path(f.runDir))
	if err != nil {
		t.Fatal(err)
	}
	if p := m.Probe; p == nil || p.AutoCompactEnabled == nil || *p.AutoCompactEnabled || p.SessionID != st.Generations[0].SessionID {
		t.Errorf("the run's probe %+v: want auto-compact off, answered by generation 1", m.Probe)
	}
	if g := st.Generations[0]; g.AutoCompactEnabled == nil || *g.AutoCompactEnabled {
		t.Errorf("generation 1: harness auto-compact %v", g.AutoCompactEnabled)
	}
	for _, g := range st.Generations[1:] {
		if g.AutoCompactEnabled != nil || g.HarnessWindow != 0 {
			t.Errorf("generation %d was asked again: auto-compact %v window %d", g.N, g.AutoCompactEnabled, g.HarnessWindow)
		}
	}
}

// Case 3b: the harness refuses locally (blocking_limit) near the window.
func TestBlockingLimitDegradesAndContinues(t *testing.T) {
	t.Parallel()
	j := &job{plans: [][]scriptedapi.Reply{{bash(188_000, "echo a"), done(189_000)}, {done(20_000)}}, handoff: goodHandoff}
	// The window flower believes (1M) is far too big: its threshold is never
	// reached, and the harness hits its own limit first.
	pol := &policy.HandoffPolicy{Enabled: true, Window: 1_000_000}
	f, st, err := runFlower(t, j, supervisor.Options{Handoff: pol, Workbench: true}, "Overflowing task OVERFLOW-TASK", "ANTHROPIC_MODEL=claude-haiku-4-5")
	assertDegradedThenDone(t, f, st, err, j, "overflow")
}

func assertDegradedThenDone(t *testing.T, f *flowerRun, st *manifest.StepResult, err error, j *job, reason string) {
	t.Helper()
	if err != nil {
		t.Fatalf("RunStep: %v (errors %q)", err, st.Errors)
	}
	if st.Status != manifest.StatusSucceeded || len(st.Generations) != 2 {
		t.Fatalf("status %s, %d generations; errors %q", st.Status, len(st.Generations), st.Errors)
	}
	h := st.Generations[0].Handoff
	if h == nil || !h.Degraded || h.Reason != reason || h.Why == "" {
		t.Fatalf("handoff record %+v, want degraded with reason %s", h, reason)
	}
	found := false
	for _, e := range st.Errors {
		if strings.HasPrefix(e, "交接降级(") && strings.HasSuffix(e, ")") {
			found = true
		}
	}
	if !found {
		t.Errorf("errors %q lack a 交接降级(…) entry", st.Errors)
	}
	b, _ := os.ReadFile(filepath.Join(f.workspace, ".flower", "notes", "交接-干活.md"))
	if !strings.Contains(string(b), handoffwriter.DegradedMarker) || !strings.Contains(string(b), "OVERFLOW-TASK") {
		t.Errorf("the degraded handoff file lacks the marker or the task:\n%s", b)
	}
	if st.Attempts != 0 || len(st.Retired) != 1 || st.SessionID == st.Retired[0] || st.SessionID == "" {
		t.Errorf("attempts %d retired %q session %q", st.Attempts, st.Retired, st.SessionID)
	}
	first := requestBySeq(f.srv, j.firstSeq[len(j.firstSeq)-1])
	if !strings.Contains(first.AllText, handoffwriter.DegradedMarker) || !strings.Contains(first.AllText, "OVERFLOW-TASK") {
		t.Errorf("the successor's first request lacks the degraded handoff")
	}
}

func requestBySeq(srv *scriptedapi.Server, seq int) scriptedapi.Request {
	for _, r := range srv.Requests() {
		if r.Seq == seq {
			return r
		}
	}
	return scriptedapi.Request{}
}

// Case 5: a subagent's context above the threshold while the main thread is
// below it does not hand off (DESIGN.md «Context meter»).
func TestSubagentUsageDoesNotHandOff(t *testing.T) {
	t.Parallel()
	agent := scriptedapi.Reply{Usage: usage(50_000), ToolUses: []scriptedapi.ToolUse{{Name: "Agent", Input: map[string]any{
		"description": "Look around", "prompt": "look around", "subagent_type": "general-purpose", "run_in_background": false}}}}
	j := &job{plans: [][]scriptedapi.Reply{{agent, done(60_000)}}, handoff: goodHandoff}
	j.sub = func(r *scriptedapi.Request) scriptedapi.Reply {
		return scriptedapi.Reply{Text: "sub report", Usage: usage(190_000)}
	}
	f, st, err := runFlower(t, j, supervisor.Options{Handoff: window200k(0), Workbench: true,
		HarnessArgs: []string{"--allowedTools", "Agent", "Bash"}}, "Delegate the look-around")
	if err != nil {
		t.Fatalf("RunStep: %v", err)
	}
	nSub := 0
	for _, r := range f.srv.Requests() {
		if r.Kind == scriptedapi.KindSubagent {
			nSub++
		}
	}
	if nSub == 0 {
		t.Fatal("the subagent never ran: the test proves nothing")
	}
	if len(st.Generations) != 1 || st.Generations[0].Handoff != nil || len(j.writingSeq) != 0 {
		t.Errorf("a subagent's 190k caused a handoff: %d generations", len(st.Generations))
	}
	if st.Context != 60_000 {
		t.Errorf("context %d, want the main thread's 60000", st.Context)
	}
	if n := len(f.handoffEvents(supervisor.PhaseNear)); n != 0 {
		t.Errorf("%d near events from subagent usage", n)
	}
}

// Case 6: the cut lands while a Bash tool runs for 30 seconds: the harness
// is interrupted within seconds, not after the tool. (The harness's Bash
// refuses a bare `sleep 30`, so the tool waits with timeout+tail.)
func TestCutInterruptsRunningTool(t *testing.T) {
	t.Parallel()
	j := &job{plans: [][]scriptedapi.Reply{{bash(100_000, "echo start"), bash(155_000, "timeout 30 tail -f /dev/null")}, {done(20_000)}}, handoff: goodHandoff}
	f, st, err := runFlower(t, j, supervisor.Options{Handoff: window200k(0), Workbench: true}, "Sleepy task")
	if err != nil {
		t.Fatalf("RunStep: %v", err)
	}
	if len(j.writingSeq) != 1 || len(st.Generations) != 2 || st.Generations[0].Handoff.Degraded {
		t.Fatalf("writing turns %v, generations %d", j.writingSeq, len(st.Generations))
	}
	cut := requestBySeq(f.srv, j.firstSeq[0]+1)
	writing := requestBySeq(f.srv, j.writingSeq[0])
	d := writing.Time.Sub(cut.Time)
	t.Logf("from the 30 s tool call to the writing turn: %v", d)
	if d > 15*time.Second {
		t.Errorf("the cut took %v: the running tool was not interrupted", d)
	}
	if !strings.Contains(writing.AllText, "[Request interrupted by user") {
		t.Errorf("the writing turn does not follow an interrupt")
	}
}

// The queued cut on the real harness (DESIGN.md «Queued cut»): the reply
// over the threshold calls an instant tool; the tool runs, and the next
// request of the same turn carries its result and the writing prompt, with
// no interrupt between. The crossing reply → writing request is then one
// tool round trip.
func TestCutQueuesWritingPrompt(t *testing.T) {
	t.Parallel()
	j := &job{plans: [][]scriptedapi.Reply{{bash(100_000, "echo one >> work.txt"), bash(155_000, "echo two >> work.txt")}, {done(20_000)}}, handoff: goodHandoff}
	f, st, err := runFlower(t, j, supervisor.Options{Handoff: window200k(0), Workbench: true}, "Append two lines")
	if err != nil {
		t.Fatalf("RunStep: %v", err)
	}
	if len(j.writingSeq) != 1 || len(st.Generations) != 2 || st.Generations[0].Handoff == nil || st.Generations[0].Handoff.Degraded {
		t.Fatalf("writing turns %v, generations %d: want one whole handoff", j.writingSeq, len(st.Generations))
	}
	crossing := requestBySeq(f.srv, j.firstSeq[0]+1)
	writing := requestBySeq(f.srv, j.writingSeq[0])
	if writing.Seq != crossing.Seq+1 || writing.SessionID != crossing.SessionID {
		t.Errorf("the writing request is #%d, the crossing one #%d: want the next request of the same session", writing.Seq, crossing.Seq)
	}
	if len(writing.LastToolResults) != 1 || !strings.Contains(writing.MidTurn, handoffwriter.PromptTag) {
		t.Errorf("the writing request carries %d tool results and mid-turn text %q: want the crossing tool's result and the prompt beside it",
			len(writing.LastToolResults), clip(writing.MidTurn, 200))
	}
	if strings.Contains(writing.AllText, "[Request interrupted") {
		t.Error("the writing request follows an interrupt")
	}
	if w, _ := os.ReadFile(filepath.Join(f.workspace, "work.txt")); string(w) != "one\ntwo\n" {
		t.Errorf("work.txt %q: want the crossing reply's tool to have run", w)
	}
	t.Logf("crossing reply answered → writing request: %v", writing.Time.Sub(crossing.Answered))
}

// Case 8: the child's auto-compact as the harness itself reports it.
func TestAutoCompactAsHarnessReports(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		handoff *policy.HandoffPolicy
		want    bool
	}{{"handoff on", policy.Switch(true), false}, {"no-handoff", policy.Switch(false), true}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			j := &job{plans: [][]scriptedapi.Reply{{done(20_000)}}, handoff: goodHandoff}
			_, st, err := runFlower(t, j, supervisor.Options{Handoff: tc.handoff}, "Quick task",
				"DISABLE_AUTO_COMPACT=1") // inherited; with handoff off flower must not add it, but the user's own stays
			if err != nil {
				t.Fatal(err)
			}
			got := st.Generations[0].AutoCompactEnabled
			if tc.name == "no-handoff" {
				// DESIGN.md «Auto-compact off»: no injection. The inherited variable is the user's own
				// and stays; run again without it to see auto-compact on.
				if got == nil || *got {
					t.Errorf("with the user's own DISABLE_AUTO_COMPACT=1 the harness should report off, got %v", got)
				}
				_, st, err = runFlower(t, j, supervisor.Options{Handoff: tc.handoff}, "Quick task")
				if err != nil {
					t.Fatal(err)
				}
				got = st.Generations[0].AutoCompactEnabled
			}
			if got == nil || *got != tc.want {
				t.Errorf("isAutoCompactEnabled = %v, want %v", got, tc.want)
			}
		})
	}
}

// No workbench (DESIGN.md «No workbench»): no file, the handoff still reaches the successor.
func TestNoWorkbenchStillHandsOff(t *testing.T) {
	t.Parallel()
	j := &job{plans: [][]scriptedapi.Reply{{bash(100_000, "echo start"), bash(155_000, "echo a")}, {done(20_000)}}, handoff: goodHandoff}
	f, st, err := runFlower(t, j, supervisor.Options{Handoff: window200k(0)}, "No bench")
	if err != nil {
		t.Fatal(err)
	}
	if h := st.Generations[0].Handoff; h == nil || h.Path != "" || h.Degraded {
		t.Fatalf("handoff %+v, want a complete one with no path", h)
	}
	if _, err := os.Stat(filepath.Join(f.workspace, ".flower", "notes")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("notes/ exists without a workbench: %v", err)
	}
	if first := requestBySeq(f.srv, j.firstSeq[1]); !strings.Contains(first.AllText, "NEXT-MARK-1") {
		t.Errorf("the successor did not get the handoff through its prompt")
	}
}
