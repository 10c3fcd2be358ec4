package supervisor

// The guarantees table of integration/guarantees_test.go, run in-process on
// the in-memory front (package fronttest) inside a testing/synctest bubble:
// every wait of the engine and of its scripted sessions is on the fake
// clock, so the table runs in milliseconds, with no process and no sleep,
// and cannot flake (DESIGN.md «Deterministic engine tests»). Each row
// asserts what its real-harness row asserts: the step's end, the manifest,
// the lineage of sessions, and what each session's first prompt held.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/flowerhq/flower/front/fronttest"
	"github.com/flowerhq/flower/handoffwriter"
	"github.com/flowerhq/flower/inbox"
	"github.com/flowerhq/flower/manifest"
	"github.com/flowerhq/flower/policy"
	"github.com/flowerhq/flower/trust"
)

const (
	memStep = "main"
	memTask = "GUAR-TASK-MARK: append lines to work.txt"
)

// memJob is the scripted model of a job: plans[g] answers generation g's
// working requests in order (the last one repeats), handoff(g) its writing
// turn. A session's generation is the number of fresh sessions before it;
// a resumed session keeps its own.
type memJob struct {
	plans   [][]fronttest.Round
	handoff func(gen int) fronttest.Round

	mu   sync.Mutex
	gens map[string]int // session → 0-based generation
	n    []int          // working requests answered per generation
}

func (j *memJob) model(r fronttest.Request) fronttest.Round {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.gens == nil {
		j.gens = map[string]int{}
	}
	g, ok := j.gens[r.Session]
	if !ok {
		g = len(j.gens)
		j.gens[r.Session] = g
	}
	if r.Writing {
		return j.handoff(g)
	}
	plan := j.plans[min(g, len(j.plans)-1)]
	for len(j.n) <= g {
		j.n = append(j.n, 0)
	}
	i := j.n[g]
	j.n[g]++
	return plan[min(i, len(plan)-1)]
}

func memTool(ctx int, cmd string) fronttest.Round {
	return fronttest.Round{Context: ctx, Text: "running " + cmd, Tool: &fronttest.Tool{Command: cmd}}
}

func memDone(ctx int) fronttest.Round {
	return fronttest.Round{Context: ctx, Text: "All done: the task is complete."}
}

func memHandoff(gen int) fronttest.Round {
	return fronttest.Round{Context: 156_000, Text: fmt.Sprintf(`## 现在在做 (doing)
Generation %[1]d was adding the shim header DOING-MARK-%[1]d.

## 已定的事 (decided)
- Keep business sources untouched: the user said so.

## 走不通的 (deadends)
- -D_ANSI_SOURCE switched off other macros (DEADEND-MARK-%[1]d).

## 下一步 (next)
Run make on a clean clone NEXT-MARK-%[1]d.

## 现场 (scene)
work.txt has two lines.`, gen+1)}
}

// memTwoGens: a handoff at 155k of a 200k window, then a successor that
// finishes.
var memTwoGens = [][]fronttest.Round{{memTool(100_000, "echo one >> work.txt"), memTool(155_000, "echo two >> work.txt")}, {memDone(20_000)}}

// memRun is one row's workspace, front and runtime options.
type memRun struct {
	t      *testing.T
	ws     string
	runDir string
	front  *fronttest.Launcher
	job    *memJob
	// trust is the row's own trust store, that of every runtime of the
	// row: the store every Runtime opens without one (TestMain's) would
	// hold the records of every row run before, and each row would read
	// and rewrite them all.
	trust *trust.Store

	mu     sync.Mutex
	events []Event
}

func newMemRun(t *testing.T, plans [][]fronttest.Round, handoff func(int) fronttest.Round) *memRun {
	t.Helper()
	dir := memTempDir(t)
	ws := filepath.Join(dir, "ws")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	store, err := trust.Open([]string{"XDG_STATE_HOME=" + filepath.Join(dir, "state")})
	if err != nil {
		t.Fatal(err)
	}
	r := &memRun{t: t, ws: ws, runDir: filepath.Join(ws, ".flower", "runs", "guar"), job: &memJob{plans: plans, handoff: handoff}, trust: store, events: make([]Event, 0, 128)}
	r.front = &fronttest.Launcher{Model: r.job.model, Window: 200_000, Floor: 1_000, ResultWindow: 200_000}
	if on, ok := rowFront.Load(t); ok {
		on.(func(*fronttest.Launcher))(r.front) // the row's front (codexRows, geminiRows)
	}
	return r
}

// runCancelled runs the row's step with ctx, which the row cancels during
// the first generation: the step is interrupted, in that generation.
func (r *memRun) runCancelled(ctx context.Context) *manifest.StepResult {
	r.t.Helper()
	_, err := r.runtime(Options{Handoff: window(200_000)}).RunStep(ctx, memStep, memTask)
	if !errors.Is(err, context.Canceled) {
		r.t.Fatalf("RunStep: %v, want interrupted", err)
	}
	st := r.step()
	if st.Status != manifest.StatusInterrupted || len(st.Generations) != 1 {
		r.t.Fatalf("status %s, %d generations: want interrupted, 1", st.Status, len(st.Generations))
	}
	return st
}

// memTempDir is a row's directory. The rows write their manifest, notes
// and trust store for real, and each write syncs (package atomicfile): on
// a disk those syncs are most of a row's time, so the directory is on the
// file system in memory where the machine has one (/dev/shm), which is a
// file system all the same (its renames, links, modes and locks), only
// with no disk under its syncs. Elsewhere it is t.TempDir.
func memTempDir(t *testing.T) string {
	dir, err := os.MkdirTemp("/dev/shm", "flower-mem-")
	if err != nil {
		return t.TempDir()
	}
	t.Cleanup(func() {
		if err := os.RemoveAll(dir); err != nil {
			t.Error(err)
		}
	})
	return dir
}

// window: the policy flower's --window gives.
func window(w int) *policy.HandoffPolicy { return &policy.HandoffPolicy{Enabled: true, Window: w} }

// runtime builds a Runtime on the row's workspace, as one flower process
// does; opts fills in the rest.
func (r *memRun) runtime(opts Options) *Runtime {
	r.t.Helper()
	opts.Workspace, opts.RunDir, opts.Workbench, opts.Front = r.ws, r.runDir, true, r.front
	opts.HarnessPath = "claude"
	opts.InboxPostsOnly = true // a file watch would keep the bubble's clock from moving
	if opts.Trust == nil {
		opts.Trust = r.trust
	}
	if opts.Env == nil {
		opts.Env = []string{"HOME=" + r.ws}
	}
	opts.OnEvent = func(ev Event) {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.events = append(r.events, ev)
	}
	rt, err := New(opts)
	if err != nil {
		r.t.Fatalf("New: %v", err)
	}
	return rt
}

func (r *memRun) notices() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, ev := range r.events {
		if ev.Kind == KindNotice {
			out = append(out, ev.Text)
		}
	}
	return out
}

// step loads the step from manifest.json on disk.
func (r *memRun) step() *manifest.StepResult {
	r.t.Helper()
	m, err := manifest.Load(manifest.Path(r.runDir))
	if err != nil {
		r.t.Fatalf("manifest on disk: %v", err)
	}
	st := m.Step(memStep)
	if st == nil {
		r.t.Fatalf("manifest on disk has no step %s", memStep)
	}
	return st
}

// checkLineage: the manifest's sessions are the ones the front's model saw,
// in order, the live one last and never a retired one.
func (r *memRun) checkLineage(st *manifest.StepResult) {
	r.t.Helper()
	api := r.front.Sessions()
	rec := slices.Clone(st.Retired)
	if st.SessionID != "" {
		rec = append(rec, st.SessionID)
	}
	if !slices.Equal(api, rec) {
		r.t.Errorf("the model saw sessions %q; the manifest has retired %q and session_id %q", api, st.Retired, st.SessionID)
	}
	if len(st.Generations) > 0 && st.SessionID != "" && st.Generations[len(st.Generations)-1].SessionID != st.SessionID {
		r.t.Errorf("session_id %q is not the last generation's", st.SessionID)
	}
}

// firstPrompt is generation n's (0-based) session's first prompt.
func (r *memRun) firstPrompt(st *manifest.StepResult, n int) string {
	r.t.Helper()
	if n >= len(st.Generations) {
		r.t.Fatalf("no generation %d", n+1)
	}
	q, ok := r.front.FirstRequest(st.Generations[n].SessionID)
	if !ok {
		r.t.Fatalf("generation %d's session %q made no request", n+1, st.Generations[n].SessionID)
	}
	return q.Prompt
}

// checkEnds: the turn ends the front told the engine of, in order, each
// as "<harness> <how>" (fronttest's Log).
func (r *memRun) checkEnds(want ...string) {
	r.t.Helper()
	var got []string
	for _, e := range r.front.Log() {
		if end, ok := strings.CutPrefix(e, "ended "); ok {
			got = append(got, end)
		}
	}
	if !slices.Equal(got, want) {
		r.t.Errorf("the front told of the turn ends %q, want %q", got, want)
	}
}

// writings counts the writing asks: the first writing request of each
// turn (a writing prompt the cut queued is taken into the cut turn, after
// its work requests).
func (r *memRun) writings() int {
	n := 0
	type turn struct{ proc, n int }
	writing := map[turn]bool{}
	for _, q := range r.front.Requests() {
		k := turn{q.Proc, q.Turn}
		if q.Writing && !writing[k] {
			n++
		}
		writing[k] = q.Writing
	}
	return n
}

// memGuarantee is one row: it runs inside the bubble.
type memGuarantee struct {
	name string
	run  func(t *testing.T)
}

// rowFront is, by a running row's *testing.T, how its launcher reads the
// row's sessions, when not by the headless front's loop (onFront).
var rowFront sync.Map

// onFront is run with its sessions read as on sets the launcher to
// (fronttest.Launcher.Codex, .Gemini): newMemRun asks rowFront.
func onFront(run func(*testing.T), on func(*fronttest.Launcher)) func(*testing.T) {
	return func(t *testing.T) {
		rowFront.Store(t, on)
		defer rowFront.Delete(t)
		run(t)
	}
}

// TestMemGuarantees is the guarantees table under the fake clock. It walks
// the engine's transition table too (DESIGN.md «Engine states»): a move
// the table lacks panics in enter, and, when every row ran, each row of
// the transition table was taken by some row here. The rows run in
// parallel, each in a bubble of its own, with nothing shared but the
// walk.
func TestMemGuarantees(t *testing.T) {
	walk := listenTransitions(t)
	rows := append(append(memGuaranteeTable(), codexRows()...), geminiRows()...)
	ran := 0
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			ran++
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				defer memWatchdog().Stop()
				row.run(t)
			})
		})
	}
	if ran < len(rows) {
		return // a -run filter: the walk is of the whole table
	}
	t.Cleanup(func() { // once every row ran
		for _, tr := range transitions {
			if walk.seen(tr) == 0 {
				t.Errorf("no row takes the transition from %q on %q to %q", tr.from, tr.cause, tr.to)
			}
		}
	})
}

// transitionWalk counts the transition table's rows taken.
type transitionWalk struct {
	mu sync.Mutex
	n  map[transition]int
}

func (w *transitionWalk) seen(tr transition) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.n[tr]
}

// listenTransitions counts every row enter takes until t ends.
func listenTransitions(t *testing.T) *transitionWalk {
	w := &transitionWalk{n: map[transition]int{}}
	sawTransition = func(tr transition) {
		w.mu.Lock()
		defer w.mu.Unlock()
		w.n[tr]++
	}
	t.Cleanup(func() { sawTransition = nil })
	return w
}

// memWatchdog turns a stuck engine into a failure with every goroutine's
// stack (a timer of the fake clock, no wait of real time). An engine that
// waits for something that never comes and holds no timer of its own
// leaves the bubble idle, which synctest reports; one whose state holds a
// long timer lets the fake clock run on to it. Two hours on it is far past
// any row (the longest, the turn timeout, takes a minute and a half) and
// about a second of real time.
func memWatchdog() *time.Timer {
	return time.AfterFunc(2*time.Hour, func() {
		buf := make([]byte, 1<<20)
		panic(fmt.Sprintf("the row is still running after 2h on the fake clock: the engine is stuck\n%s", buf[:runtime.Stack(buf, true)]))
	})
}

func memGuaranteeTable() []memGuarantee {
	return append([]memGuarantee{
		{"lock", memLock},
		{"retry after a harness crash", memCrash},
		{"a front that cannot resume retries from the task", memCrashNoResume},
		{"futile guard", memFutile},
		{"window adopted from the harness", memWindow},
		{"compaction hands off", memBackstop},
		{"compact asked for hands off", memCompactAsked},
		{"one automatic compaction blocked: recorded only", func(t *testing.T) { memAutoBlocked(t, 1, 0) }},
		{"a second automatic compaction blocked hands off", func(t *testing.T) { memAutoBlocked(t, 2, 0) }},
		{"a blocked compaction is judged at the round before the hook, the front's reader behind", func(t *testing.T) { memAutoBlocked(t, 1, memBehind) }},
		{"a second blocked compaction hands off at the round before the hook, the front's reader behind", func(t *testing.T) { memAutoBlocked(t, 2, memBehind) }},
		{"overflow degrades", func(t *testing.T) {
			r := newMemRun(t, [][]fronttest.Round{{memTool(100_000, "echo a >> work.txt"), {Overflow: true}}, {memDone(20_000)}}, memHandoff)
			st, err := r.runtime(Options{Handoff: window(200_000)}).RunStep(t.Context(), memStep, memTask)
			r.checkDegraded(st, err, manifest.ReasonOverflow, "overflow")
		}},
		{"malformed writing turn degrades", func(t *testing.T) {
			r := newMemRun(t, memTwoGens, func(int) fronttest.Round {
				return fronttest.Round{Context: 156_000, Text: "## 现在在做 (doing)\nSomething.\n\n## 已定的事 (decided)\nNothing."}
			})
			st, err := r.runtime(Options{Handoff: window(200_000)}).RunStep(t.Context(), memStep, memTask)
			r.checkDegraded(st, err, manifest.ReasonThreshold, "next")
		}},
		{"writing turn overflows: degrades", func(t *testing.T) {
			r := newMemRun(t, memTwoGens, func(int) fronttest.Round { return fronttest.Round{Overflow: true} })
			st, err := r.runtime(Options{Handoff: window(200_000)}).RunStep(t.Context(), memStep, memTask)
			r.checkDegraded(st, err, manifest.ReasonThreshold, "the writing turn overflowed")
		}},
		{"harness dies in the writing turn: degrades", func(t *testing.T) {
			r := newMemRun(t, memTwoGens, func(int) fronttest.Round { return fronttest.Round{Crash: true} })
			st, err := r.runtime(Options{Handoff: window(200_000)}).RunStep(t.Context(), memStep, memTask)
			r.checkDegraded(st, err, manifest.ReasonThreshold, "exit status 3")
		}},
		{"writing turn calls a tool: stopped, asked again", memWritingTool},
		{"malformed lines are skipped and counted", memMalformedLines},
		{"a person's edit reaches the successor", memEdit},
		{"generation limit", memGenerationLimit},
		{"warm successor", memWarm},
		{"warm successor: the handoff it replaces is archived during the writing turn", memWarmKeeps},
		{"warm successor cancelled", memWarmCancelled},
		{"one generation run starts no successor early", memGenerationNotEarly},
		{"turn timeout", memTurnTimeout},
		{"handoff now", memHandoffNow},
		{"a person types the turns (the harness's own screen)", func(t *testing.T) { memPersonDriven(t, personTypes) }},
		{"the harness's screen marks no turn's end: its idle ends them", func(t *testing.T) { memPersonDriven(t, unmarked) }},
		{"window moved under an idle session: writes at once", func(t *testing.T) { memIdleWindow(t, personTypes) }},
		{"a burned harness's cost at its exit is its own generation's", memExitCost},
		{"stopped before the harness's first line is read: its session is on record", memStoppedUnread},
		{"application-driven front (the relay's)", func(t *testing.T) { memPersonDriven(t, applicationSends) }},
		{"application-driven: window moved under an idle session", func(t *testing.T) { memIdleWindow(t, applicationSends) }},
	}, slices.Concat(memCutRows(), memUnattendedRows(), memAdmitRows(), memRefusedRows())...)
}

// personTypes gives the in-memory front the capabilities of the harness's
// own screen (package interactive): a person types the turns, and a
// successor starts early, beside the writing turn.
func personTypes(l *fronttest.Launcher) { l.PersonTypes = true }

// unmarked is personTypes where the harness's transcript marks no end of
// a turn that ends on its own (no turn_duration line, as while background
// work it started runs): the interactive front reads each end from the
// state file's idle (DESIGN.md «Screen turns»).
func unmarked(l *fronttest.Launcher) {
	personTypes(l)
	model := l.Model
	l.Model = func(r fronttest.Request) fronttest.Round {
		round := model(r)
		round.Unmarked = true
		return round
	}
}

// applicationSends gives it the relay's (package relay): an application
// sends the turns, and no harness starts before its first prompt.
func applicationSends(l *fronttest.Launcher) { l.Outside, l.Late = true, true }

// memIdleWindow: on a front whose turns someone else starts (caps: a
// person at the harness's own screen, or an application through the
// relay), the harness's window comes back only after their turn ended,
// and puts its last round past the
// threshold. No turn runs to be cut: the engine's idle state has the
// session write its handoff at once, and no interrupt is sent (DESIGN.md
// «Engine states»).
func memIdleWindow(t *testing.T, caps func(*fronttest.Launcher)) {
	env := []string{"ANTHROPIC_MODEL=claude-sonnet-4-5"}
	last := memDone(20_000)
	last.PersonExits = true
	r := newMemRun(t, [][]fronttest.Round{{memTool(100_000, "echo one >> work.txt"), memDone(160_000)}, {last}}, memHandoff)
	r.front.ModelName = "claude-sonnet-4-5"
	caps(r.front)
	// The answer comes long after the turn (two rounds and a 1 s tool),
	// and no turn's result reports a window.
	r.front.ProbeTook, r.front.ResultWindow = 5*time.Second, 0
	if _, err := r.runtime(Options{Env: env}).RunStep(t.Context(), memStep, memTask); err != nil {
		t.Fatalf("RunStep: %v", err)
	}
	st := r.step()
	if st.Status != manifest.StatusSucceeded || len(st.Generations) != 2 || st.Generations[0].Handoff == nil || st.Generations[0].Handoff.Degraded {
		t.Fatalf("status %s, %d generations: want a complete handoff, then done", st.Status, len(st.Generations))
	}
	if h := st.Generations[0].Handoff; h.Reason != manifest.ReasonThreshold || h.Context != 160_000 || h.Window != 200_000 {
		t.Errorf("receipt %+v: want the threshold at 160K of the harness's 200K", h)
	}
	for _, e := range r.front.Log() {
		if strings.HasPrefix(e, "cut ") {
			t.Errorf("the front was told to cut (%q) with no turn running", e)
		}
	}
	if p := r.front.Procs()[0].Prompts(); len(p) != 2 || !strings.Contains(p[1], handoffwriter.PromptTag) {
		t.Errorf("the first harness's turns %q: want the task, then the writing prompt", p)
	}
	r.checkEnds("1 on its own", "1 on its own", "2 on its own")
	r.checkLineage(st)
}

func memLock(t *testing.T) {
	release, started := make(chan struct{}), make(chan struct{})
	tool := memTool(100_000, "timeout 120 tail -f /dev/null")
	tool.Tool.Until = release
	tool.Tool.Started = func(*fronttest.Proc) { close(started) }
	r := newMemRun(t, [][]fronttest.Round{{tool, memDone(110_000)}}, memHandoff)
	type res struct {
		st  *manifest.StepResult
		err error
	}
	done := make(chan res, 1)
	go func() {
		st, err := r.runtime(Options{Handoff: window(200_000)}).RunStep(t.Context(), memStep, memTask)
		done <- res{st, err}
	}()
	<-started
	synctest.Wait() // the holder's engine has taken the round in
	pid := fmt.Sprintf("pid %d", os.Getpid())
	_, err := r.runtime(Options{Handoff: window(200_000)}).RunStep(t.Context(), memStep, "SECOND-FLOWER-MARK")
	var busy *BusyError
	if !errors.As(err, &busy) || !errors.Is(err, ErrStepBusy) || !strings.Contains(err.Error(), "is being run by") || !strings.Contains(err.Error(), pid) {
		t.Errorf("second run: %v, want a *BusyError naming %s", err, pid)
	}
	_, err = r.runtime(Options{Handoff: window(200_000)}).Continue(t.Context(), memStep, "")
	if !errors.As(err, &busy) || !strings.Contains(err.Error(), "is being run by") || !strings.Contains(err.Error(), pid) {
		t.Errorf("continue: %v, want a *BusyError naming %s", err, pid)
	}
	close(release)
	if h := <-done; h.err != nil {
		t.Fatalf("the holder: %v", h.err)
	}
	st := r.step()
	if st.Status != manifest.StatusSucceeded || len(st.Generations) != 1 {
		t.Errorf("status %s, %d generations", st.Status, len(st.Generations))
	}
	if n := len(r.front.Procs()); n != 1 {
		t.Errorf("%d harnesses launched: the refused runs started one", n)
	}
	for _, q := range r.front.Requests() {
		if h := strings.Join(q.History, "\n"); strings.Contains(h, "SECOND-FLOWER-MARK") || strings.Contains(h, ContinueMessage) {
			t.Errorf("request %d carries the refused run's prompt", q.Seq)
		}
	}
	r.checkLineage(st)
}

func memCrash(t *testing.T) {
	tool := memTool(100_000, "timeout 120 tail -f /dev/null")
	tool.Tool.Took = time.Hour
	tool.Tool.Started = func(p *fronttest.Proc) {
		if p.N == 1 {
			p.Kill()
		}
	}
	r := newMemRun(t, [][]fronttest.Round{{tool, memDone(110_000)}}, memHandoff)
	st, err := r.runtime(Options{Handoff: window(200_000)}).RunStep(t.Context(), memStep, memTask)
	if err != nil {
		t.Fatalf("RunStep after the harness crash: %v", err)
	}
	st = r.step()
	if st.Status != manifest.StatusSucceeded || st.Attempts != 1 || len(st.Generations) != 1 || len(st.Retired) != 0 {
		t.Errorf("status %s, attempts %d, %d generations, retired %q: want succeeded after one failed attempt, the session resumed",
			st.Status, st.Attempts, len(st.Generations), st.Retired)
	}
	if !slices.ContainsFunc(st.Errors, func(e string) bool { return strings.Contains(e, "attempt 1:") && strings.Contains(e, "killed") }) {
		t.Errorf("errors %q do not record the failed attempt", st.Errors)
	}
	procs := r.front.Procs()
	if len(procs) != 2 || procs[1].Spec.Resume != procs[0].Session() {
		t.Fatalf("%d harnesses; the second must resume the first's session", len(procs))
	}
	// The retry resumed the session: its history is there.
	reqs := r.front.Requests()
	last := strings.Join(reqs[len(reqs)-1].History, "\n")
	if api := r.front.Sessions(); len(api) != 1 || !strings.Contains(last, "timeout 120 tail") || !strings.Contains(last, "GUAR-TASK-MARK") {
		t.Errorf("sessions %q; the last request does not carry the crashed turn's history:\n%s", api, last)
	}
	r.checkLineage(st)
}

// memCrashNoResume: the same crash on a front whose sessions cannot be
// resumed (Capabilities.Resumes false). The engine never asks it to: the
// crashed session is set aside, and a fresh session starts from the task
// in a generation of its own (DESIGN.md «Retries»).
func memCrashNoResume(t *testing.T) {
	tool := memTool(100_000, "timeout 120 tail -f /dev/null")
	tool.Tool.Took = time.Hour
	tool.Tool.Started = func(p *fronttest.Proc) {
		if p.N == 1 {
			p.Kill()
		}
	}
	r := newMemRun(t, [][]fronttest.Round{{tool}, {memDone(20_000)}}, memHandoff)
	r.front.NoResume = true
	st, err := r.runtime(Options{Handoff: window(200_000)}).RunStep(t.Context(), memStep, memTask)
	if err != nil {
		t.Fatalf("RunStep after the harness crash: %v", err)
	}
	st = r.step()
	procs := r.front.Procs()
	if len(procs) != 2 || procs[1].Spec.Resume != "" {
		t.Fatalf("%d harnesses, the second resuming %q: want a fresh second session", len(procs), procs[len(procs)-1].Spec.Resume)
	}
	first := procs[0].Session()
	if st.Status != manifest.StatusSucceeded || len(st.Generations) != 2 || !slices.Contains(st.Retired, first) || st.SessionID == first {
		t.Errorf("status %s, %d generations, retired %q, session %s: want succeeded in a second generation, %s set aside",
			st.Status, len(st.Generations), st.Retired, st.SessionID, first)
	}
	if !slices.ContainsFunc(st.Errors, func(e string) bool { return strings.Contains(e, "this front cannot resume a session") }) {
		t.Errorf("errors %q do not say why the session was not resumed", st.Errors)
	}
	reqs := r.front.Requests()
	if last := strings.Join(reqs[len(reqs)-1].History, "\n"); !strings.Contains(last, "GUAR-TASK-MARK") || strings.Contains(last, "timeout 120 tail") {
		t.Errorf("the fresh session's request does not start from the task alone:\n%s", last)
	}
	r.checkLineage(st)
}

func memFutile(t *testing.T) {
	r := newMemRun(t, [][]fronttest.Round{{memTool(23_456, "echo one"), memDone(24_000)}}, memHandoff)
	st, err := r.runtime(Options{Handoff: window(30_000)}).RunStep(t.Context(), memStep, memTask) // handoff at 10K
	var gl *policy.GenerationLimitError
	if !errors.As(err, &gl) || !gl.Futile {
		t.Fatalf("RunStep: %v, want a futile *GenerationLimitError", err)
	}
	st = r.step()
	if st.Status != manifest.StatusGenerationLimit || len(st.Generations) != 1 || st.Generations[0].Handoff != nil {
		t.Errorf("status %s, %d generations: want generation_limit, 1 without a handoff", st.Status, len(st.Generations))
	}
	for _, want := range []string{"23.5K", "already at or above the handoff threshold", "start-up floor", "--window", "--no-handoff"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q: %v", want, err)
		}
	}
	for _, q := range r.front.Requests() {
		if q.Writing || strings.Contains(q.Prompt, "You are taking over") {
			t.Errorf("request %d is a writing turn or a successor's", q.Seq)
		}
	}
	// The engine ends the futile turn by saying so, not with a cut.
	if log := r.front.Log(); !slices.Contains(log, "cancel 1") || slices.Contains(log, "cut 1") {
		t.Errorf("the futile turn must be cancelled, not cut:\n%s", strings.Join(log, "\n"))
	}
	r.checkLineage(st)
}

// memWritingTool: the writing turn is for text only; a tool it calls is
// stopped (the engine's StopTool, not a cut) and the handoff asked for
// once more (DESIGN.md «Writing turn»).
func memWritingTool(t *testing.T) {
	var calls atomic.Int32
	r := newMemRun(t, memTwoGens, func(g int) fronttest.Round {
		if calls.Add(1) == 1 {
			return memTool(156_000, "cat notes.txt")
		}
		return memHandoff(g)
	})
	st, err := r.runtime(Options{Handoff: window(200_000)}).RunStep(t.Context(), memStep, memTask)
	if err != nil {
		t.Fatalf("RunStep: %v", err)
	}
	if len(st.Generations) != 2 || st.Generations[0].Handoff == nil {
		t.Fatalf("%d generations, first handoff %v: want 2, handed off", len(st.Generations), st.Generations[0].Handoff)
	}
	log := r.front.Log()
	stop, cut := slices.Index(log, "stop-tool 1"), cutIndex(log, 1)
	switch {
	case r.front.Codex || r.front.Gemini:
		// The Codex (and Gemini) front's one interrupt for every purpose: the cut, then
		// the tool stopped as it started.
		if n := count(log, "interrupt 1"); n != 2 {
			t.Errorf("%d interrupts: want the cut and the writing turn's tool stopped:\n%s", n, strings.Join(log, "\n"))
		}
	case cut < 0 || stop < cut || slices.Contains(log, "cancel 1") || slices.Index(log[cut+1:], "cut 1") >= 0:
		t.Errorf("want one cut, then the writing turn's tool stopped, no cancel:\n%s", strings.Join(log, "\n"))
	}
	if n := calls.Load(); n != 2 {
		t.Errorf("%d writing rounds: want the tool's, then the handoff asked again", n)
	}
	r.checkLineage(st)
}

// memGenerationNotEarly: a generation run for a caller that starts the next
// one itself (RunGeneration, perhaps on another machine) starts no successor
// early, on a front that could; RunStep on the same front does (memWarm).
func memGenerationNotEarly(t *testing.T) {
	r := newMemRun(t, memTwoGens, memHandoff)
	r.front.ExitCost = 1.5 // told as the harness exits, after the handoff
	res, err := r.runtime(Options{Handoff: window(200_000)}).RunGeneration(t.Context(), GenerationInput{Step: memStep, Task: memTask})
	if err != nil {
		t.Fatalf("RunGeneration: %v", err)
	}
	if res.End != EndHandoff || res.N != 1 {
		t.Fatalf("result: end %s, generation %d: want a handoff from generation 1", res.End, res.N)
	}
	if procs := r.front.Procs(); len(procs) != 1 {
		t.Errorf("%d harnesses launched: want only the generation's own, no successor", len(procs))
	}
	// Its harness is gone when the call returns, and what it told at its
	// exit is in the result and on disk.
	if st := r.step(); res.CostUSD != 1.5 || st.CostUSD != 1.5 || st.Generations[0].CostUSD != 1.5 {
		t.Errorf("cost $%v in the result, $%v on disk: want the $1.5 the harness told at its exit", res.CostUSD, st.CostUSD)
	}
}

func memWindow(t *testing.T) {
	// The in-memory front guesses no window, so the run starts at
	// policy.FallbackWindow (1M): without the harness's window the third
	// round ends the step with no handoff.
	r := newMemRun(t, [][]fronttest.Round{{memTool(100_000, "echo one >> work.txt"), memTool(155_000, "echo two >> work.txt"), memDone(160_000)}, {memDone(20_000)}}, memHandoff)
	r.front.ModelName = "claude-sonnet-4-5"
	st, err := r.runtime(Options{}).RunStep(t.Context(), memStep, memTask)
	if err != nil {
		t.Fatalf("RunStep: %v", err)
	}
	st = r.step()
	if st.Window != 200_000 || st.WindowSource != manifest.WindowFromHarness {
		t.Errorf("window %d from %q, want 200000 from the harness", st.Window, st.WindowSource)
	}
	if len(st.Generations) != 2 || st.Generations[0].Handoff == nil {
		t.Fatalf("%d generations: no handoff at 155K under the harness's 200K window", len(st.Generations))
	}
	if h := st.Generations[0].Handoff; h.At != 150_000 || h.Window != 200_000 || h.WindowSource != manifest.WindowFromHarness {
		t.Errorf("receipt %+v, want a handoff at 150K of the harness's 200K", h)
	}
	if w := st.Generations[0].HarnessWindow; w != 200_000 {
		t.Errorf("generation 1's harness window %d", w)
	}
	if p := r.firstPrompt(st, 1); !strings.Contains(p, "NEXT-MARK-1") {
		t.Errorf("the successor's first prompt lacks the handoff:\n%s", p)
	}
	r.checkLineage(st)
}

// memBackstop: the harness compacted although handoff switched
// auto-compact off (DESIGN.md «Compaction backstop»).
func memBackstop(t *testing.T) {
	compacted := memTool(40_000, "echo two >> work.txt")
	compacted.Compacted = true
	r := newMemRun(t, [][]fronttest.Round{{memTool(100_000, "echo one >> work.txt"), compacted, memDone(45_000)}, {memDone(20_000)}}, memHandoff)
	st, err := r.runtime(Options{Handoff: window(200_000)}).RunStep(t.Context(), memStep, memTask)
	if err != nil {
		t.Fatalf("RunStep: %v", err)
	}
	st = r.step()
	want := "the harness compacted its context although handoff switched that off (a compact_boundary line)"
	if !slices.ContainsFunc(st.Errors, func(e string) bool { return strings.Contains(e, want) }) {
		t.Errorf("errors %q lack %q", st.Errors, want)
	}
	if !slices.ContainsFunc(r.notices(), func(n string) bool { return strings.Contains(n, want) }) {
		t.Errorf("no notice says %q", want)
	}
	if len(st.Generations) != 2 || st.Generations[0].Handoff == nil {
		t.Fatalf("%d generations: want a handoff for the compaction", len(st.Generations))
	}
	if h := st.Generations[0].Handoff; h.Reason != manifest.ReasonCompaction || h.Degraded || h.Context >= 150_000 {
		t.Errorf("receipt %+v: want a complete handoff for the compaction, below the threshold", h)
	}
	if c := st.Generations[0].Compactions; len(c) != 1 || c[0].Trigger != "auto" || c[0].PreTokens != 100_000 || c[0].PostTokens != 40_000 {
		t.Errorf("compactions %+v, want the one auto compaction from 100K to 40K", c)
	}
	if p := r.firstPrompt(st, 1); !strings.Contains(p, "NEXT-MARK-1") {
		t.Errorf("the successor's first prompt lacks the handoff:\n%s", p)
	}
	r.checkLineage(st)
}

// memCompactAsked: a person asks for a compaction (/compact, given to
// flower continue); flower's hook blocks it and a handoff takes its place
// (DESIGN.md «Compaction asked for»).
func memCompactAsked(t *testing.T) {
	r := newMemRun(t, [][]fronttest.Round{{memTool(100_000, "echo one >> work.txt"), memTool(155_000, "echo two >> work.txt"),
		memDone(160_000), memDone(160_500)}, {memDone(20_000)}}, memHandoff)
	r.front.ModelName = "claude-haiku-4-5"
	env := []string{"HOME=" + r.ws, "ANTHROPIC_MODEL=claude-haiku-4-5"}
	if _, err := r.runtime(Options{Env: env, Handoff: window(1_000_000)}).RunStep(t.Context(), memStep, memTask); err != nil {
		t.Fatalf("RunStep: %v", err)
	}
	if _, err := r.runtime(Options{Env: env, Handoff: window(1_000_000)}).Continue(t.Context(), memStep, "/compact"); err != nil {
		t.Fatalf("Continue /compact: %v", err)
	}
	st := r.step()
	if ac := st.Generations[0].AutoCompactEnabled; ac == nil || *ac {
		t.Errorf("the harness reports auto-compact %v under flower's levers, want false", ac)
	}
	if c := slices.Concat(st.Generations[0].Compactions, st.Generations[1].Compactions); len(c) != 0 {
		t.Errorf("compactions %+v: none ran", c)
	}
	if len(st.Generations) != 2 || st.Generations[0].Handoff == nil || st.Generations[0].Handoff.Reason != manifest.ReasonCompactBlocked {
		t.Fatalf("%d generations, generation 1's handoff %+v; errors %q: want a handoff for the /compact", len(st.Generations), st.Generations[0].Handoff, st.Errors)
	}
	if b := st.Generations[0].BlockedCompactions; len(b) != 1 || b[0].Trigger != "manual" || b[0].Context < 160_000 {
		t.Errorf("blocked compactions %+v: want the /compact, at the session's context", b)
	}
	if p := r.firstPrompt(st, 1); !strings.Contains(p, "NEXT-MARK-1") {
		t.Errorf("the successor's first prompt lacks the handoff:\n%s", p)
	}
	r.checkLineage(st)
}

// checkDegraded is the degraded rows' check (DESIGN.md «Degraded handoff»).
func (r *memRun) checkDegraded(st *manifest.StepResult, err error, reason, why string) {
	t := r.t
	t.Helper()
	if err != nil {
		t.Fatalf("RunStep: %v", err)
	}
	st = r.step()
	if st.Status != manifest.StatusSucceeded || len(st.Generations) != 2 {
		t.Fatalf("status %s, %d generations: want succeeded, 2", st.Status, len(st.Generations))
	}
	h := st.Generations[0].Handoff
	if h == nil || !h.Degraded || h.Reason != reason || !strings.Contains(h.Why, why) {
		t.Fatalf("receipt %+v, want degraded with reason %s and a why naming %q", h, reason, why)
	}
	if !slices.Contains(st.Errors, "交接降级("+h.Why+")") {
		t.Errorf("errors %q lack 交接降级(%s)", st.Errors, h.Why)
	}
	if st.Attempts != 0 {
		t.Errorf("attempts %d: a handoff is not a failure", st.Attempts)
	}
	b, _ := os.ReadFile(h.Path)
	if !strings.Contains(string(b), handoffwriter.DegradedMarker) || !strings.Contains(string(b), "GUAR-TASK-MARK") {
		t.Errorf("the handoff file lacks the marker or the task:\n%s", b)
	}
	if p := r.firstPrompt(st, 1); !strings.Contains(p, handoffwriter.DegradedMarker) || !strings.Contains(p, "GUAR-TASK-MARK") {
		t.Errorf("the successor's first prompt lacks the degraded handoff:\n%s", p)
	}
	r.checkLineage(st)
}

// memMalformedLines: lines that are not records are skipped, counted, and
// said in the manifest; they break nothing (DESIGN.md «Result lines»).
func memMalformedLines(t *testing.T) {
	garbled := memTool(155_000, "echo two >> work.txt")
	garbled.Malformed = []string{"this is not json {", `{"type":"assistant","message":{"id":"msg_`}
	r := newMemRun(t, [][]fronttest.Round{{memTool(100_000, "echo one >> work.txt"), garbled}, {memDone(20_000)}}, memHandoff)
	st, err := r.runtime(Options{Handoff: window(200_000)}).RunStep(t.Context(), memStep, memTask)
	if err != nil {
		t.Fatalf("RunStep: %v", err)
	}
	st = r.step()
	if len(st.Generations) != 2 || st.Generations[0].Handoff == nil || st.Generations[0].Handoff.Degraded {
		t.Fatalf("%d generations: want a complete handoff despite the garbage", len(st.Generations))
	}
	if !slices.ContainsFunc(st.Errors, func(e string) bool {
		return strings.Contains(e, "generation 1: the harness wrote 2 line(s) that were not JSON")
	}) {
		t.Errorf("errors %q do not count the skipped lines", st.Errors)
	}
	r.checkLineage(st)
}

// memEdit: the successor starts from the file as it is at launch, a
// person's edit included (DESIGN.md «Launch from disk»).
func memEdit(t *testing.T) {
	r := newMemRun(t, memTwoGens, memHandoff)
	const edit = "PERSON-EDIT: use the vendored zlib"
	var notes string
	rt := r.runtime(Options{Handoff: window(200_000), AfterFreeze: func(path string) {
		notes = path
		b, err := os.ReadFile(path)
		if err != nil || !strings.Contains(string(b), "NEXT-MARK-1") {
			t.Errorf("the frozen handoff %s: %v\n%s", path, err, b)
		}
		// Saved as an editor saves: a new file renamed over the old one.
		tmp := path + ".edit"
		if err := os.WriteFile(tmp, []byte(strings.Replace(string(b), "NEXT-MARK-1", "NEXT-MARK-1 and "+edit, 1)), 0o644); err != nil {
			t.Error(err)
		}
		if err := os.Rename(tmp, path); err != nil {
			t.Error(err)
		}
	}})
	if _, err := rt.RunStep(t.Context(), memStep, memTask); err != nil {
		t.Fatalf("RunStep: %v", err)
	}
	st := r.step()
	if len(st.Generations) != 2 || st.Generations[0].Handoff == nil {
		t.Fatalf("%d generations", len(st.Generations))
	}
	if want := filepath.Join(r.ws, ".flower", "notes", "交接-"+memStep+".md"); notes != want {
		t.Errorf("AfterFreeze saw %q, want %q", notes, want)
	}
	if p := r.firstPrompt(st, 1); !strings.Contains(p, edit) || !strings.Contains(p, "DOING-MARK-1") {
		t.Errorf("the successor's first prompt lacks the person's edit:\n%s", p)
	}
	rec := st.Generations[0].Handoff
	b, _ := os.ReadFile(notes)
	sum := sha256.Sum256(b)
	if rec.SHA256Written == rec.SHA256Launched || rec.SHA256Launched != hex.EncodeToString(sum[:]) {
		t.Errorf("receipt hashes: written %s, launched %s; the file is %x", rec.SHA256Written, rec.SHA256Launched, sum)
	}
	r.checkLineage(st)
}

// memGenerationLimit: each session crosses the threshold in its second
// round; the third handoff ends the step (DESIGN.md «Runaway guard»).
func memGenerationLimit(t *testing.T) {
	r := newMemRun(t, [][]fronttest.Round{{memTool(5_000, "echo start"), memTool(20_000, "echo again")}}, memHandoff)
	_, err := r.runtime(Options{Handoff: &policy.HandoffPolicy{Enabled: true, Window: 30_000, MaxGenerations: 3}}).RunStep(t.Context(), memStep, memTask)
	var gl *policy.GenerationLimitError
	if !errors.As(err, &gl) || gl.Futile {
		t.Fatalf("RunStep: %v, want a *GenerationLimitError", err)
	}
	st := r.step()
	if st.Status != manifest.StatusGenerationLimit || len(st.Generations) != 3 {
		t.Fatalf("status %s, %d generations: want generation_limit, 3", st.Status, len(st.Generations))
	}
	for _, want := range []string{"handoff generation limit reached: 3 handoffs", "start-up floor", "34k", "--window", "--no-handoff"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q: %v", want, err)
		}
	}
	if n := r.writings(); n != 3 {
		t.Errorf("%d writing turns, want 3", n)
	}
	for i, gen := range st.Generations {
		if gen.Handoff == nil || gen.Handoff.Degraded {
			t.Errorf("generation %d: handoff %+v, want a complete one (the last is frozen too)", i+1, gen.Handoff)
		}
	}
	// The last handoff is frozen but launches nothing, not even early.
	if n := len(st.Retired); n != 3 || st.SessionID != "" {
		t.Errorf("retired %q, session_id %q: want all three burned and no live session", st.Retired, st.SessionID)
	}
	if n := len(r.front.Procs()); n != 3 {
		t.Errorf("%d harnesses launched, want 3: none for a successor the limit forbids", n)
	}
	for i := 1; i < 3; i++ {
		if p := r.firstPrompt(st, i); !strings.Contains(p, fmt.Sprintf("NEXT-MARK-%d", i)) {
			t.Errorf("generation %d's first prompt lacks its predecessor's handoff:\n%s", i+1, p)
		}
	}
	r.checkLineage(st)
}

// memWarm: the successor's harness starts with no prompt beside the
// writing turn, gets its first prompt from the file once the handoff is
// frozen, and the burned harness is stopped only once the successor's
// first round is back (DESIGN.md «Warm successor»).
func memWarm(t *testing.T) {
	r, st := memSlowWriting(t, memTwoGens)
	procs := r.front.Procs()
	if len(procs) != 2 || procs[1].Spec.Prompt != "" || procs[1].Spec.Resume != "" {
		t.Fatalf("%d harnesses; the successor must be started with no prompt", len(procs))
	}
	log := r.front.Log()
	at := func(entry string) int {
		i := slices.Index(log, entry)
		if i < 0 {
			t.Fatalf("the log lacks %q:\n%s", entry, strings.Join(log, "\n"))
		}
		return i
	}
	writingResult := 0
	for i, e := range log {
		if e == "result 1" {
			writingResult = i // the last result of harness 1: the writing turn's
		}
	}
	if at("launch 2") > writingResult {
		t.Errorf("the successor was launched after the writing turn ended:\n%s", strings.Join(log, "\n"))
	}
	firstRound := at(fmt.Sprintf("request 2 %s turn 1 round 1", procs[1].Session()))
	if stop := at("stop 1"); stop < firstRound {
		t.Errorf("the burned harness was stopped before the successor's first request:\n%s", strings.Join(log, "\n"))
	}
	if p := procs[1].Prompts(); len(p) != 1 || !strings.Contains(p[0], "NEXT-MARK-1") {
		t.Errorf("the successor's prompts %q: want one, from the handoff", p)
	}
	if len(st.Generations) != 2 || st.Generations[1].SessionID != procs[1].Session() {
		t.Errorf("generations %+v: the successor started early is generation 2", st.Generations)
	}
	r.checkLineage(st)
}

// memSlowWriting runs a step of plans whose writing turns take 5 s, long
// enough for a successor to start beside them, and returns the step as
// manifest.json has it.
func memSlowWriting(t *testing.T, plans [][]fronttest.Round) (*memRun, *manifest.StepResult) {
	t.Helper()
	r := newMemRun(t, plans, func(g int) fronttest.Round {
		h := memHandoff(g)
		h.Took = 5 * time.Second
		return h
	})
	if _, err := r.runtime(Options{Handoff: window(200_000)}).RunStep(t.Context(), memStep, memTask); err != nil {
		t.Fatalf("RunStep: %v", err)
	}
	return r, r.step()
}

// memWarmKeeps: generation 2's freeze replaces generation 1's handoff,
// which was archived while the writing turn ran, not on the way from its
// end to the successor's prompt (DESIGN.md «Warm successor»).
func memWarmKeeps(t *testing.T) {
	gen := []fronttest.Round{memTool(100_000, "echo one >> work.txt"), memTool(155_000, "echo two >> work.txt")}
	r, st := memSlowWriting(t, [][]fronttest.Round{gen, gen, {memDone(20_000)}})
	arch, _ := filepath.Glob(filepath.Join(r.ws, ".flower", "notes", "archive", "交接", memStep+"-*.md"))
	if len(arch) != 1 {
		t.Fatalf("archive %q: want generation 1's handoff, once", arch)
	}
	if b, _ := os.ReadFile(arch[0]); !strings.Contains(string(b), "NEXT-MARK-1") {
		t.Errorf("archived %q, want generation 1's handoff", b)
	}
	stamp := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(arch[0]), memStep+"-"), ".md")
	kept, err := time.Parse("20060102T150405Z", stamp)
	if len(st.Generations) != 3 {
		t.Fatalf("%d generations, want 3", len(st.Generations))
	}
	if end := st.Generations[1].EndedAt; err != nil || end == nil || end.Sub(kept) < 4*time.Second {
		t.Errorf("archived at %s (%v), generation 2's handoff frozen at %v: want it kept during the 5 s writing turn", stamp, err, end)
	}
}

// memWarmCancelled: flower is stopped during the writing turn; the
// successor started early is not needed and is stopped without a prompt,
// leaving nothing in the manifest (DESIGN.md «Warm successor»).
func memWarmCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	r := newMemRun(t, memTwoGens, func(g int) fronttest.Round {
		// The person's Ctrl-C a second into the writing turn (on the
		// fake clock): the successor started early is up by then.
		time.AfterFunc(time.Second, cancel)
		h := memHandoff(g)
		h.Took = time.Minute
		return h
	})
	st := r.runCancelled(ctx)
	procs := r.front.Procs()
	if len(procs) != 2 || procs[1].Spec.Prompt != "" {
		t.Fatalf("%d harnesses: want the successor started early beside the writing turn", len(procs))
	}
	if p := procs[1].Prompts(); len(p) != 0 || !procs[1].Stopped() {
		t.Errorf("the unneeded successor got prompts %q, stopped %v: want none, and stopped", p, procs[1].Stopped())
	}
	for _, g := range st.Generations {
		if g.SessionID == procs[1].Session() {
			t.Errorf("the unneeded successor's session reached the manifest")
		}
	}
	// The work turn was cut, the writing turn cancelled.
	log := r.front.Log()
	cut, cancelled := cutIndex(log, 1), slices.Index(log, "cancel 1")
	switch {
	case r.front.Codex || r.front.Gemini:
		// The Codex (and Gemini) front's one interrupt: the cut's, then the cancel's
		// unless the harness's own SIGINT (the context's end) ended the
		// writing turn first, when no turn is left to interrupt.
		if n := count(log, "interrupt 1"); n < 1 || n > 2 {
			t.Errorf("%d interrupts: want the work turn cut, then the writing turn cancelled:\n%s", n, strings.Join(log, "\n"))
		}
	case cut < 0 || cancelled < cut:
		t.Errorf("want the work turn cut, then the writing turn cancelled:\n%s", strings.Join(log, "\n"))
	}
	r.checkLineage(st)
}

// memTurnTimeout: a turn past the turn timeout is a failed attempt
// (DESIGN.md «Retries»); the attempts resume the session until the limit,
// each after exactly the timeout on the clock.
func memTurnTimeout(t *testing.T) {
	hang := memTool(100_000, "sleep infinity")
	hang.Tool.Took = 24 * time.Hour
	r := newMemRun(t, [][]fronttest.Round{{hang}}, memHandoff)
	start := time.Now()
	_, err := r.runtime(Options{Handoff: window(200_000), TurnTimeout: 30 * time.Second}).RunStep(t.Context(), memStep, memTask)
	took := time.Since(start)
	if !errors.Is(err, ErrStepFailed) {
		t.Fatalf("RunStep: %v, want the step failed", err)
	}
	st := r.step()
	if st.Status != manifest.StatusFailed || st.Attempts != DefaultMaxAttempts || len(st.Generations) != 1 {
		t.Errorf("status %s, attempts %d, %d generations: want failed after %d attempts", st.Status, st.Attempts, len(st.Generations), DefaultMaxAttempts)
	}
	if n := len(slices.DeleteFunc(slices.Clone(st.Errors), func(e string) bool { return !strings.Contains(e, "turn exceeded the turn timeout of 30s") })); n != DefaultMaxAttempts {
		t.Errorf("errors %q: want %d turn timeouts", st.Errors, DefaultMaxAttempts)
	}
	// The fake clock makes it exact: each attempt ends at its timeout, and
	// a scripted harness stops at once.
	if want := DefaultMaxAttempts * 30 * time.Second; took != want {
		t.Errorf("the step took %v on the clock, want exactly %v", took, want)
	}
	procs := r.front.Procs()
	for i, p := range procs[1:] {
		if p.Spec.Resume != procs[0].Session() {
			t.Errorf("attempt %d resumed %q, want the session %q", i+2, p.Spec.Resume, procs[0].Session())
		}
	}
	r.checkLineage(st)
}

// memHandoffNow: `flower handoff now` (a request in the step's inbox)
// hands off at the next message boundary (DESIGN.md «Handoff on request»).
func memHandoffNow(t *testing.T) {
	asked := memTool(100_000, "make -j8")
	asked.Tool.Took = 10 * time.Minute
	asked.Tool.Started = func(p *fronttest.Proc) {
		if _, err := inbox.Post(p.Spec.Inbox, inbox.Request{Kind: inbox.KindHandoff, From: "flower handoff now"}); err != nil {
			t.Error(err)
		}
	}
	r := newMemRun(t, [][]fronttest.Round{{asked, memDone(110_000)}, {memDone(20_000)}}, memHandoff)
	start := time.Now()
	if _, err := r.runtime(Options{Handoff: window(200_000)}).RunStep(t.Context(), memStep, memTask); err != nil {
		t.Fatalf("RunStep: %v", err)
	}
	st := r.step()
	if len(st.Generations) != 2 || st.Generations[0].Handoff == nil {
		t.Fatalf("%d generations: want a handoff on request", len(st.Generations))
	}
	if h := st.Generations[0].Handoff; h.Reason != manifest.ReasonRequested || h.Degraded || h.Context != 100_000 {
		t.Errorf("receipt %+v: want a complete handoff, reason requested, at 100K", h)
	}
	// The request is heard as it is posted, and the tool interrupted
	// there: the step takes no time on the clock past the successor's
	// start beside the writing turn, not the tool's ten minutes.
	if took := time.Since(start); took > successorDelay {
		t.Errorf("the step took %v on the clock, want at most the successor's delay (%v): the request was not heard at once", took, successorDelay)
	}
	if !slices.ContainsFunc(r.notices(), func(n string) bool { return strings.Contains(n, "a handoff was asked for (flower handoff now)") }) {
		t.Errorf("notices %q lack the request", r.notices())
	}
	if ents, _ := os.ReadDir(inbox.Dir(r.runDir, memStep)); len(ents) != 0 {
		t.Errorf("the inbox still holds %d entries", len(ents))
	}
	if p := r.firstPrompt(st, 1); !strings.Contains(p, "NEXT-MARK-1") {
		t.Errorf("the successor's first prompt lacks the handoff:\n%s", p)
	}
	r.checkLineage(st)
}

// memPersonDriven: on a front whose turns someone else starts (caps: a
// person at the harness's own screen, or an application through the
// relay), a turn's end is not the step's end: their next turn runs in the
// same generation, the threshold hands off as anywhere, the successor gets
// the handoff as its first prompt (started early where the front can), and
// their orderly end of the harness ends the step (DESIGN.md «Fronts»).
func memPersonDriven(t *testing.T, caps func(*fronttest.Launcher)) {
	first := memDone(100_000)
	first.PersonNext = "PERSON-TURN-MARK: now the second part"
	last := memDone(20_000)
	last.PersonExits = true
	r := newMemRun(t, [][]fronttest.Round{{first, memTool(155_000, "echo two >> work.txt")}, {last}}, memHandoff)
	caps(r.front)
	if _, err := r.runtime(Options{Handoff: window(200_000)}).RunStep(t.Context(), memStep, memTask); err != nil {
		t.Fatalf("RunStep: %v", err)
	}
	st := r.step()
	if st.Status != manifest.StatusSucceeded || len(st.Generations) != 2 || st.Generations[0].Handoff == nil || st.Generations[0].Handoff.Degraded {
		t.Fatalf("status %s, %d generations: want succeeded after a complete handoff", st.Status, len(st.Generations))
	}
	if h := st.Generations[0].Handoff; h.Reason != manifest.ReasonThreshold || h.Context != 155_000 {
		t.Errorf("receipt %+v: want the threshold at 155K, in the person's second turn", h)
	}
	procs := r.front.Procs()
	if len(procs) != 2 || !strings.Contains(r.firstPrompt(st, 1), "NEXT-MARK-1") {
		t.Fatalf("%d harnesses: the successor's first prompt must be the handoff's", len(procs))
	}
	// A front that can start a harness early (the harness's own screen)
	// starts the successor beside the writing turn, with no prompt; one
	// that cannot (the relay) launches it with its prompt.
	if early := r.front.Capabilities().StartEarly; procs[1].Spec.Early != early || (procs[1].Spec.Prompt == "") != early {
		t.Errorf("the successor was launched early %v with prompt %q; the front starts early: %v", procs[1].Spec.Early, procs[1].Spec.Prompt, early)
	}
	if p := procs[0].Prompts(); len(p) != 3 || p[1] != first.PersonNext {
		t.Errorf("the first harness's turns %q: want the task, the person's turn, the writing prompt", p)
	}
	r.checkEnds("1 on its own", "1 interrupted", "1 on its own", "2 on its own")
	r.checkLineage(st)
}

// memExitCost: on a front whose harness tells its cost only as it exits
// (the harness's own screen), the burned generation's harness exits after
// its successor started (Capabilities.Overlap); what it tells then is
// booked to its own generation, not to the successor's.
func memExitCost(t *testing.T) {
	first := memDone(100_000)
	first.PersonNext = "PERSON-TURN-MARK: now the second part"
	last := memDone(20_000)
	last.PersonExits = true
	r := newMemRun(t, [][]fronttest.Round{{first, memTool(155_000, "echo two >> work.txt")}, {last}}, memHandoff)
	personTypes(r.front)
	r.front.ExitCost = 1.5
	if _, err := r.runtime(Options{Handoff: window(200_000)}).RunStep(t.Context(), memStep, memTask); err != nil {
		t.Fatalf("RunStep: %v", err)
	}
	st := r.step()
	if len(st.Generations) != 2 {
		t.Fatalf("%d generations, want 2", len(st.Generations))
	}
	for _, g := range st.Generations {
		if g.CostUSD != 1.5 {
			t.Errorf("generation %d cost $%v, want the $1.5 its harness told at its exit", g.N, g.CostUSD)
		}
	}
	if st.CostUSD != 3 {
		t.Errorf("the step's cost $%v, want $3", st.CostUSD)
	}
	// Each exit's booking is told at once, as the chain's cost so far.
	var told []float64
	for _, ev := range r.events {
		if ev.Kind == KindCost {
			told = append(told, ev.CostUSD)
			if ev.Generation != 0 || ev.Step != memStep {
				t.Errorf("cost event %+v: want the step's, no generation", ev)
			}
		}
	}
	if !slices.Equal(told, []float64{1.5, 3}) {
		t.Errorf("cost events told %v, want [1.5 3]", told)
	}
}

// memStoppedUnread: flower is stopped before it read the line that names
// the session (its reader behind the harness); the line comes while the
// step is stopping, and the session is on record all the same, so that a
// continue resumes it.
func memStoppedUnread(t *testing.T) {
	r := newMemRun(t, [][]fronttest.Round{{memTool(100_000, "echo one >> work.txt"), memDone(110_000)}}, memHandoff)
	r.front.Behind = memBehind
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	time.AfterFunc(memBehind/5, cancel)
	st, err := r.runtime(Options{Handoff: window(200_000)}).RunStep(ctx, memStep, memTask)
	if err == nil || st.Status != manifest.StatusInterrupted {
		t.Fatalf("RunStep: %v, status %s: want interrupted", err, st.Status)
	}
	disk := r.step()
	if disk.SessionID == "" || len(disk.Generations) != 1 || disk.Generations[0].SessionID != disk.SessionID {
		t.Errorf("on disk: session %q, generations %+v: want the session the harness named while the step stopped", disk.SessionID, disk.Generations)
	}
}

// memBehind is how far behind the harness the reader of a row's front is
// (fronttest.Launcher.Behind): well inside the engine's wait for it.
const memBehind = syncWait / 2

// memAutoBlocked: every compaction flower's hook blocked is recorded; one
// automatic attempt is only recorded, a second one in the same session
// hands off, before flower's own threshold (DESIGN.md «Compaction asked
// for»). Each is judged at the round the harness wrote before its hook
// ran, also when the front's reader is behind and the hook's request
// reaches the engine first (DESIGN.md «Inbox»).
func memAutoBlocked(t *testing.T, tries int, behind time.Duration) {
	first := memTool(100_000, "echo one >> work.txt")
	if behind > 0 {
		first.Tool.Took = behind / 5 // the hook runs while the round is unread
	}
	tried := memTool(120_000, "echo two >> work.txt")
	tried.PreCompact = slices.Repeat([]string{"auto"}, tries)
	r := newMemRun(t, [][]fronttest.Round{{first, tried, memDone(130_000)}, {memDone(20_000)}}, memHandoff)
	r.front.Behind = behind
	if _, err := r.runtime(Options{Handoff: window(200_000)}).RunStep(t.Context(), memStep, memTask); err != nil {
		t.Fatalf("RunStep: %v", err)
	}
	st := r.step()
	bc := st.Generations[0].BlockedCompactions
	if len(bc) != tries {
		t.Fatalf("blocked compactions %+v: want %d", bc, tries)
	}
	for _, c := range bc {
		if c.Trigger != "auto" || c.SessionID != st.Generations[0].SessionID || c.Context != 100_000 {
			t.Errorf("blocked compaction %+v: want auto, its session, at the last round's 100K", c)
		}
	}
	if tries < 2 {
		if st.Status != manifest.StatusSucceeded || len(st.Generations) != 1 {
			t.Errorf("status %s, %d generations: one automatic attempt is only recorded", st.Status, len(st.Generations))
		}
		r.checkLineage(st)
		return
	}
	if len(st.Generations) != 2 || st.Generations[0].Handoff == nil {
		t.Fatalf("%d generations: want a handoff for the second attempt", len(st.Generations))
	}
	if h := st.Generations[0].Handoff; h.Reason != manifest.ReasonCompactBlocked || h.Degraded || h.Context != 100_000 {
		t.Errorf("receipt %+v: want a complete handoff, reason compact_blocked, at 100K", h)
	}
	if !slices.ContainsFunc(r.notices(), func(n string) bool { return strings.Contains(n, "tried again to compact on its own") }) {
		t.Errorf("notices %q do not say why", r.notices())
	}
	if p := r.firstPrompt(st, 1); !strings.Contains(p, "NEXT-MARK-1") {
		t.Errorf("the successor's first prompt lacks the handoff:\n%s", p)
	}
	r.checkLineage(st)
}

// codexRows are the table's rows that hold for the Codex front as they
// are, run again on it: its session (package codex), over a scripted
// app-server, reads what the scripted harness writes as the notifications
// Codex sends for it (fronttest.Launcher.Codex). The rest are of what only the Claude Code CLI has (its
// own screen, the relay, a compact boundary line, its PreCompact hook
// going on, a result's cost, malformed lines, a harness that refuses a
// resume it does not know), are the same rows on the same capabilities,
// or wait for what Codex tells later: a handoff asked for during the
// first response's command waits for that response's usage, which Codex
// reports once the command has run (DESIGN.md «Codex front»; the
// integration tests ask during a later one).
func codexRows() []memGuarantee {
	var out []memGuarantee
	for _, row := range memGuaranteeTable() {
		if slices.Contains(codexRowNames, row.name) {
			out = append(out, memGuarantee{"codex: " + row.name, onFront(row.run, func(l *fronttest.Launcher) { l.Codex = true })})
		}
	}
	return out
}

var codexRowNames = []string{
	"lock", "retry after a harness crash", "overflow degrades", "malformed writing turn degrades",
	"writing turn overflows: degrades", "harness dies in the writing turn: degrades",
	"writing turn calls a tool: stopped, asked again", "a person's edit reaches the successor",
	"generation limit", "warm successor", "warm successor cancelled", "turn timeout",
}

// geminiRows are the table's rows that hold for the Gemini front as they
// are, run again on it (its session, package gemini, over a scripted ACP
// agent, reads what the scripted harness writes as the Gemini CLI's
// record lines and ACP messages: fronttest.Launcher.Gemini): the Codex front's rows, as the two fronts have the same
// capabilities (no queued cut, one interrupt for every purpose, a
// session that resumes by its id), and some more.
func geminiRows() []memGuarantee {
	var out []memGuarantee
	for _, row := range memGuaranteeTable() {
		if slices.Contains(geminiRowNames, row.name) {
			out = append(out, memGuarantee{"gemini: " + row.name, onFront(row.run, func(l *fronttest.Launcher) { l.Gemini = true })})
		}
	}
	return out
}

var geminiRowNames = append(slices.Clone(codexRowNames),
	"warm successor: the handoff it replaces is archived during the writing turn", "handoff now")

// count is how many of log's entries are e.
// cutIndex is where harness n's work turn was cut in log: its interrupt
// ("cut n"), or its taking of the writing prompt the cut queued ("taken
// n"); -1 for neither.
func cutIndex(log []string, n int) int {
	return slices.IndexFunc(log, func(e string) bool { return e == fmt.Sprintf("cut %d", n) || e == fmt.Sprintf("taken %d", n) })
}

func count(log []string, e string) int {
	n := 0
	for _, x := range log {
		if x == e {
			n++
		}
	}
	return n
}
