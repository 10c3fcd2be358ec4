package integration_test

// Every guarantee of a handoff, one table, run against both fronts on the
// real harness: headless (flower TASK, stream-json) and interactive
// (flower -i TASK, the harness's own screen in a tmux pane). The engine
// holds every rule (DESIGN.md «Fronts»), so each row must hold on either
// front. A front here starts the flower binary and gives back its exit
// code, its output, the manifest and the requests the scripted API saw.

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/flowerhq/flower/handoffwriter"
	flowerharness "github.com/flowerhq/flower/harness"
	"github.com/flowerhq/flower/harness/harnesstest"
	"github.com/flowerhq/flower/manifest"
	"github.com/flowerhq/flower/scriptedapi"
	"github.com/flowerhq/flower/supervisor"
)

// guarFront starts flower one way.
type guarFront interface {
	name() string
	// start runs `flower ARGS TASK` (or, with task "", `flower ARGS`, for
	// continue) in g's workspace.
	start(g *guarRun, args []string, task string) flowerHandle
}

// guarRun is one row of the table on one front: the scripted API, the
// workspace and the harness's HOME.
type guarRun struct {
	t       *testing.T
	front   guarFront
	srv     *scriptedapi.Server
	flower  string
	harness string // the harness, symlinks resolved (as /proc shows it)
	ws      string
	runDir  string
	home    string
	env     []string

	mu sync.Mutex
	// doneSessions: sessions the model told the job is done; lastSession:
	// the session of the latest main-thread request.
	doneSessions map[string]bool
	lastSession  string
	hold         bool // the person types nothing
}

const guarStep = "main"

func newGuarRun(t *testing.T, fr guarFront, script scriptedapi.Script, env ...string) *guarRun {
	harness := harnessPath(t) // skips under -short, before anything is built
	g := &guarRun{t: t, front: fr, flower: flowerBinary(t), harness: harness, ws: t.TempDir(), doneSessions: map[string]bool{}}
	if real, err := filepath.EvalSymlinks(g.harness); err == nil {
		g.harness = real
	}
	g.runDir = filepath.Join(g.ws, ".flower", "runs", "guar")
	g.srv = startServer(t, func(r *scriptedapi.Request) scriptedapi.Reply {
		rep := script(r)
		if r.Kind == scriptedapi.KindMain {
			g.mu.Lock()
			g.lastSession = r.SessionID
			if rep.Text == done(0).Text && len(rep.ToolUses) == 0 {
				g.doneSessions[r.SessionID] = true
			}
			g.mu.Unlock()
		}
		return rep
	})
	g.env = harnessEnv(t, g.srv, append([]string{"FLOWER_HARNESS=" + g.harness}, env...)...)
	g.home = homeOf(g.env)
	seedHarnessHome(t, g.home, g.ws, scriptedapi.APIKey)
	return g
}

// finished: the latest session was told the job is done, so the person at
// an interactive screen ends it.
func (g *guarRun) finished() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.doneSessions[g.lastSession]
}

// quiet: the test types the person's next message itself.
func (g *guarRun) quiet() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.hold
}

func (g *guarRun) note(format string, args ...any) { g.t.Logf(format, args...) }

// run starts flower on task with the run's flags and flags.
func (g *guarRun) run(task string, flags ...string) flowerHandle {
	return g.front.start(g, append([]string{"-C", g.ws, "--run-dir", g.runDir}, flags...), task)
}

// wait returns flower's exit code once it exited (a hang guard fails the
// test).
func (g *guarRun) wait(h flowerHandle) int {
	g.t.Helper()
	select {
	case <-h.exited():
		return h.exitCode()
	case <-time.After(4 * time.Minute):
		g.t.Fatalf("flower (pid %d) still running after 4 minutes:\n%s", h.pid(), h.output())
		return 0
	}
}

func (g *guarRun) step() *manifest.StepResult {
	g.t.Helper()
	return loadStep(g.t, g.runDir, guarStep)
}

// sessions lists the sessions the API saw in main-thread requests, in
// order of their first one; first maps each to that request.
func (g *guarRun) sessions() (order []string, first map[string]scriptedapi.Request) {
	first = map[string]scriptedapi.Request{}
	for _, r := range g.srv.Requests() {
		if r.SessionID == "" || r.Kind != scriptedapi.KindMain {
			continue
		}
		if _, ok := first[r.SessionID]; !ok {
			order = append(order, r.SessionID)
			first[r.SessionID] = r
		}
	}
	return order, first
}

// checkLineage: the manifest's sessions are the ones the API saw, in
// order, the live one last and never a retired one.
func (g *guarRun) checkLineage(st *manifest.StepResult) {
	g.t.Helper()
	api, _ := g.sessions()
	rec := slices.Clone(st.Retired)
	if st.SessionID != "" {
		rec = append(rec, st.SessionID)
	}
	if !slices.Equal(api, rec) {
		g.t.Errorf("the API saw sessions %q; the manifest has retired %q and session_id %q", api, st.Retired, st.SessionID)
	}
	if len(st.Generations) > 0 && st.Generations[len(st.Generations)-1].SessionID != st.SessionID && st.SessionID != "" {
		g.t.Errorf("session_id %q is not the last generation's", st.SessionID)
	}
}

type headlessGuar struct{}

func (headlessGuar) name() string { return "headless" }

func (headlessGuar) start(g *guarRun, args []string, task string) flowerHandle {
	if task != "" {
		args = append(args, task)
	}
	return procHandle{startFlower(g.t, g.env, append(args, "--", "--allowedTools", "Bash")...)}
}

// procHandle is a flowerProc as a flowerHandle.
type procHandle struct{ *flowerProc }

func (p procHandle) pid() int                { return p.cmd.Process.Pid }
func (p procHandle) exited() <-chan struct{} { return p.flowerProc.exited }
func (p procHandle) exitCode() int           { return exitCode(p.err) }

type interactiveGuar struct{}

func (interactiveGuar) name() string { return "interactive" }

func (interactiveGuar) start(g *guarRun, args []string, task string) flowerHandle {
	if task == "" || args[0] == "continue" {
		// flower continue runs headless, whatever the step's front was.
		return headlessGuar{}.start(g, args, task)
	}
	argv := append([]string{g.flower, "-i"}, args...)
	argv = append(argv, task, "--", "--permission-mode", "dontAsk", "--allowedTools", "Bash")
	f, err := startTmuxFlower(g.t, g.env, nil, g.ws, argv)
	if err != nil {
		g.t.Fatal(err)
	}
	f.startPerson(g.home, g.harness, g.finished, g.quiet, g.note)
	g.t.Cleanup(func() {
		if g.t.Failed() {
			g.t.Logf("pane of flower pid %d:\n%s", f.pid(), clip(f.output(), 6000))
		}
	})
	return f
}

var guarFronts = []guarFront{headlessGuar{}, interactiveGuar{}}

// guarantee is one row: what flower must do, whichever front runs it.
type guarantee struct {
	name string
	// script is the scripted model; env goes to flower (and so to the
	// harness); flags are flower's.
	script func() scriptedapi.Script
	env    []string
	flags  []string
	// run drives the row and checks it; the default starts flower on the
	// task and passes its exit code to check.
	run   func(t *testing.T, g *guarRun)
	setup func(t *testing.T, g *guarRun) // before flower starts
	check func(t *testing.T, g *guarRun, code int, out string, st *manifest.StepResult)
}

// jobScript is a fresh job's script on each call.
func jobScript(plans [][]scriptedapi.Reply, handoff func(int) scriptedapi.Reply) func() scriptedapi.Script {
	return func() scriptedapi.Script { return (&job{plans: plans, handoff: handoff}).script }
}

const guarTask = "GUAR-TASK-MARK: append lines to work.txt"

// twoGens: a handoff at 155k of a 200k window, then a successor that
// finishes.
var twoGens = [][]scriptedapi.Reply{{bash(100_000, "echo one >> work.txt"), bash(155_000, "echo two >> work.txt")}, {done(20_000)}}

func TestGuarantees(t *testing.T) {
	t.Parallel()
	for _, gu := range guaranteeTable() {
		for _, fr := range guarFronts {
			t.Run(gu.name+"/"+fr.name(), func(t *testing.T) {
				t.Parallel()
				g := newGuarRun(t, fr, gu.script(), gu.env...)
				if gu.setup != nil {
					gu.setup(t, g)
				}
				if gu.run != nil {
					gu.run(t, g)
					return
				}
				h := g.run(guarTask, gu.flags...)
				code := g.wait(h)
				st := g.step()
				gu.check(t, g, code, h.output(), st)
				if t.Failed() {
					t.Logf("exit %d; status %s; errors %q", code, st.Status, st.Errors)
				}
			})
		}
	}
}

func guaranteeTable() []guarantee {
	return []guarantee{
		{
			// DESIGN.md «One run per step»: a second flower on the step,
			// and flower continue, are refused while it runs; nothing of
			// theirs reaches the harness.
			name:   "lock",
			script: jobScript([][]scriptedapi.Reply{{bash(100_000, "timeout 120 tail -f /dev/null"), done(110_000)}}, goodHandoff),
			run:    runLock,
		},
		{
			// DESIGN.md «Retries»: the harness SIGKILLed mid-turn is a
			// failed attempt; the same session is resumed and the step
			// succeeds.
			name:   "retry after a harness crash",
			script: jobScript([][]scriptedapi.Reply{{bash(100_000, "timeout 120 tail -f /dev/null"), done(110_000)}}, goodHandoff),
			run:    runHarnessCrash,
		},
		{
			// DESIGN.md «Futile guard»: a fresh session at or above the
			// threshold stops the step at once, with no handoff.
			name:   "futile guard",
			script: jobScript([][]scriptedapi.Reply{{bash(23_456, "echo one"), done(24_000)}}, goodHandoff),
			flags:  []string{"--window", "30000"}, // handoff at 10K
			check: func(t *testing.T, g *guarRun, code int, out string, st *manifest.StepResult) {
				if code != 3 || st.Status != manifest.StatusGenerationLimit || len(st.Generations) != 1 || st.Generations[0].Handoff != nil {
					t.Errorf("exit %d, status %s, %d generations: want 3, generation_limit, 1 without a handoff", code, st.Status, len(st.Generations))
				}
				// The first round's 23.5K, the way out, and what the floor is.
				for _, want := range []string{"23.5K", "already at or above the handoff threshold", "start-up floor", "--window", "--no-handoff"} {
					if !strings.Contains(flat(out), want) {
						t.Errorf("output lacks %q:\n%s", want, clip(out, 3000))
					}
				}
				for _, r := range g.srv.Requests() {
					if strings.Contains(r.LastUserText, handoffwriter.PromptTag) || strings.Contains(r.AllText, "You are taking over") {
						t.Errorf("request %d is a writing turn or a successor's", r.Seq)
					}
				}
				g.checkLineage(st)
			},
		},
		{
			// DESIGN.md «Window from the harness»: with no --window, the
			// harness's 200K for claude-sonnet-4-5 (the name rule says 1M)
			// places the handoff at 150K.
			name: "window adopted from the harness",
			// Without the harness's window the third round ends the
			// step with no handoff.
			script: jobScript([][]scriptedapi.Reply{{bash(100_000, "echo one >> work.txt"), bash(155_000, "echo two >> work.txt"), done(160_000)}, {done(20_000)}},
				goodHandoff),
			env: []string{"ANTHROPIC_MODEL=claude-sonnet-4-5"},
			check: func(t *testing.T, g *guarRun, code int, out string, st *manifest.StepResult) {
				if w := flowerharness.GuessWindow([]string{"ANTHROPIC_MODEL=claude-sonnet-4-5"}); w != 1_000_000 {
					t.Fatalf("premise: the name rule gives %d for claude-sonnet-4-5, want 1000000", w)
				}
				if st.Window != 200_000 || st.WindowSource != manifest.WindowFromHarness {
					t.Errorf("window %d from %q, want 200000 from the harness", st.Window, st.WindowSource)
				}
				if code != 0 || len(st.Generations) != 2 || st.Generations[0].Handoff == nil {
					t.Fatalf("exit %d, %d generations: no handoff at 155K under the harness's 200K window", code, len(st.Generations))
				}
				if h := st.Generations[0].Handoff; h.At != 150_000 || h.Window != 200_000 || h.WindowSource != manifest.WindowFromHarness {
					t.Errorf("receipt %+v, want a handoff at 150K of the harness's 200K", h)
				}
				if w := st.Generations[0].HarnessWindow; w != 200_000 {
					t.Errorf("generation 1's harness window %d", w)
				}
				g.checkLineage(st)
			},
		},
		{
			// DESIGN.md «Compaction asked for»: a settings.json env block
			// would turn compaction back on, and a person asks for one
			// (/compact); flower's levers hold it off, its hook blocks
			// the /compact, and a handoff takes its place (flower's
			// --window keeps its own threshold far off).
			name: "compact asked for hands off",
			// (Below 177.1K: with compaction off the harness refuses a
			// request past its blocking limit.)
			script: jobScript([][]scriptedapi.Reply{{bash(100_000, "echo one >> work.txt"), bash(155_000, "echo two >> work.txt"),
				done(160_000), done(160_500)}, {done(20_000)}}, goodHandoff),
			env:   []string{"ANTHROPIC_MODEL=claude-haiku-4-5"},
			flags: []string{"--window", "1000000"},
			setup: func(t *testing.T, g *guarRun) {
				dir := filepath.Join(g.home, ".claude")
				if err := os.MkdirAll(dir, 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(dir, "settings.json"), []byte(`{"env":{"DISABLE_AUTO_COMPACT":"0"}}`), 0o644); err != nil {
					t.Fatal(err)
				}
			},
			run: runCompaction,
		},
		{
			// DESIGN.md «Overflow path»: the API's "prompt is too long" is
			// a degraded handoff, not a failure.
			name: "overflow degrades",
			script: jobScript([][]scriptedapi.Reply{{bash(100_000, "echo a >> work.txt"), scriptedapi.Overflow(250_123, 200_000)}, {done(20_000)}},
				goodHandoff),
			flags: []string{"--window", "200000"},
			check: func(t *testing.T, g *guarRun, code int, out string, st *manifest.StepResult) {
				checkDegraded(t, g, code, st, manifest.ReasonOverflow, "overflow")
			},
		},
		{
			// DESIGN.md «Degraded handoff»: a writing turn without next.
			name: "malformed writing turn degrades",
			script: jobScript(twoGens, func(int) scriptedapi.Reply {
				return scriptedapi.Reply{Usage: usage(156_000), Text: "## 现在在做 (doing)\nSomething.\n\n## 已定的事 (decided)\nNothing."}
			}),
			flags: []string{"--window", "200000"},
			check: func(t *testing.T, g *guarRun, code int, out string, st *manifest.StepResult) {
				checkDegraded(t, g, code, st, manifest.ReasonThreshold, "next")
			},
		},
		{
			// DESIGN.md «Launch from disk»: the successor starts from the
			// file as it is at launch, a person's edit included.
			name:   "a person's edit reaches the successor",
			script: jobScript(twoGens, goodHandoff),
			env:    []string{"FLOWER_TEST_PAUSE_AFTER_FREEZE=4s"},
			run:    runEdit,
		},
		{
			// DESIGN.md «Runaway guard»: each session crosses the threshold
			// in its second round; the third handoff ends the step.
			name:   "generation limit",
			script: jobScript([][]scriptedapi.Reply{{bash(5_000, "echo start"), bash(20_000, "echo again")}}, goodHandoff),
			flags:  []string{"--window", "30000", "--max-generations", "3"},
			check: func(t *testing.T, g *guarRun, code int, out string, st *manifest.StepResult) {
				if code != 3 || st.Status != manifest.StatusGenerationLimit || len(st.Generations) != 3 {
					t.Fatalf("exit %d, status %s, %d generations: want 3, generation_limit, 3", code, st.Status, len(st.Generations))
				}
				for _, want := range []string{"handoff generation limit reached: 3 handoffs", "start-up floor", "34k", "--window", "--no-handoff"} {
					if !strings.Contains(flat(out), want) {
						t.Errorf("output lacks %q:\n%s", want, clip(out, 3000))
					}
				}
				writings := 0
				for _, r := range g.srv.Requests() {
					if strings.Contains(r.LastUserText, handoffwriter.PromptTag) {
						writings++
					}
				}
				if writings != 3 {
					t.Errorf("%d writing turns, want 3", writings)
				}
				for i, gen := range st.Generations {
					if gen.Handoff == nil || gen.Handoff.Degraded {
						t.Errorf("generation %d: handoff %+v, want a complete one (the last is frozen too)", i+1, gen.Handoff)
					}
				}
				// The last handoff is frozen but launches nothing.
				if n := len(st.Retired); n != 3 || st.SessionID != "" {
					t.Errorf("retired %q, session_id %q: want all three burned and no live session", st.Retired, st.SessionID)
				}
			},
		},
	}
}

// flat is a screen's text with its line breaks dropped, so a message the
// pane wrapped reads as printed.
func flat(s string) string { return strings.ReplaceAll(s, "\n", "") }

func checkDegraded(t *testing.T, g *guarRun, code int, st *manifest.StepResult, reason, why string) {
	t.Helper()
	if code != 0 || st.Status != manifest.StatusSucceeded || len(st.Generations) != 2 {
		t.Fatalf("exit %d, status %s, %d generations: want 0, succeeded, 2", code, st.Status, len(st.Generations))
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
	_, first := g.sessions()
	if q := first[st.Generations[1].SessionID]; !strings.Contains(q.AllText, handoffwriter.DegradedMarker) || !strings.Contains(q.AllText, "GUAR-TASK-MARK") {
		t.Errorf("the successor's first request lacks the degraded handoff")
	}
	g.checkLineage(st)
}

// toolRunning waits until flower's harness runs the tail tool and has
// written its call to the transcript (so the session can be resumed).
func toolRunning(t *testing.T, g *guarRun, h flowerHandle) {
	t.Helper()
	until(t, "the tool to run", func() bool {
		return hasProcess(harnesstest.Descendants(h.pid()), "tail") && transcriptHas(g.home, "timeout 120 tail")
	})
}

// endTool ends the running tool, as a tool that finishes does.
func endTool(h flowerHandle) {
	for _, pid := range harnesstest.Descendants(h.pid()) {
		if b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid)); strings.TrimSpace(string(b)) == "tail" {
			_ = syscall.Kill(pid, syscall.SIGTERM)
		}
	}
}

func runLock(t *testing.T, g *guarRun) {
	holder := g.run(guarTask, "--window", "200000")
	toolRunning(t, g, holder)
	pid := fmt.Sprintf("pid %d", holder.pid())

	second := g.run("SECOND-FLOWER-MARK", "--window", "200000")
	if code, out := g.wait(second), flat(second.output()); code != 1 || !strings.Contains(out, "is being run by") || !strings.Contains(out, pid) {
		t.Errorf("second flower: exit %d, want 1 and a refusal naming %s:\n%s", code, pid, clip(out, 3000))
	}
	cont := g.front.start(g, []string{"continue", "-C", g.ws, "--run-dir", g.runDir, "--step", guarStep}, "")
	if code, out := g.wait(cont), cont.output(); code != 1 || !strings.Contains(out, "is being run by") || !strings.Contains(out, pid) {
		t.Errorf("flower continue: exit %d, want 1 and a refusal naming %s:\n%s", code, pid, clip(out, 3000))
	}
	endTool(holder)
	if code := g.wait(holder); code != 0 {
		t.Errorf("the holder exited %d, want 0:\n%s", code, clip(holder.output(), 3000))
	}
	st := g.step()
	if st.Status != manifest.StatusSucceeded || len(st.Generations) != 1 {
		t.Errorf("status %s, %d generations", st.Status, len(st.Generations))
	}
	for _, r := range g.srv.Requests() {
		if strings.Contains(r.AllText, "SECOND-FLOWER-MARK") || strings.Contains(r.AllText, supervisor.ContinueMessage) {
			t.Errorf("request %d carries the refused flower's prompt", r.Seq)
		}
	}
	g.checkLineage(st)
}

func runHarnessCrash(t *testing.T, g *guarRun) {
	h := g.run(guarTask, "--window", "200000")
	toolRunning(t, g, h)
	victim := harnessChild(h.pid(), g.harness)
	if victim == 0 {
		t.Fatal("no harness child of flower")
	}
	if err := syscall.Kill(victim, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if code := g.wait(h); code != 0 {
		t.Errorf("flower exited %d after the harness crash, want 0", code)
	}
	st := g.step()
	if st.Status != manifest.StatusSucceeded || st.Attempts != 1 || len(st.Generations) != 1 || len(st.Retired) != 0 {
		t.Errorf("status %s, attempts %d, %d generations, retired %q: want succeeded after one failed attempt, the session resumed",
			st.Status, st.Attempts, len(st.Generations), st.Retired)
	}
	if !anyContains(st.Errors, "attempt 1:") {
		t.Errorf("errors %q do not record the failed attempt", st.Errors)
	}
	// The retry resumed the session: its history is there.
	api, _ := g.sessions()
	last := g.srv.Requests()[len(g.srv.Requests())-1]
	if len(api) != 1 || !strings.Contains(last.AllText, "timeout 120 tail") {
		t.Errorf("sessions %q; the last request does not carry the crashed turn's history", api)
	}
	g.checkLineage(st)
}

// runCompaction: with auto-compact turned back on, the harness compacts
// when a person asks it to (/compact, typed at the screen or given to
// flower continue); flower must hand off rather than carry on with the
// compacted context. (On 2.1.328 the harness did not auto-compact against
// the scripted usage: 175K–179.5K of its 200K window, over three more user
// turns, left it at "100% context used".)
func runCompaction(t *testing.T, g *guarRun) {
	g.mu.Lock()
	g.hold = true
	g.mu.Unlock()
	h := g.run(guarTask, "--window", "1000000")
	if tf, ok := h.(*tmuxFlower); ok {
		until(t, "the first turn's end", func() bool { return g.finished() && harnessState(g.home, harnessChild(h.pid(), g.harness)) == "idle" })
		time.Sleep(2 * time.Second)
		tf.typeLine("/compact")
		// The person waits for the successor before anything else.
		until(t, "a second generation", func() bool {
			m, err := manifest.Load(manifest.Path(g.runDir))
			return err == nil && m.Step(guarStep) != nil && len(m.Step(guarStep).Generations) > 1
		})
		g.mu.Lock()
		g.hold = false
		g.mu.Unlock()
	} else {
		if code := g.wait(h); code != 0 {
			t.Fatalf("flower exited %d", code)
		}
		h = g.front.start(g, []string{"continue", "-C", g.ws, "--run-dir", g.runDir, "--window", "1000000", "/compact"}, "")
	}
	code := g.wait(h)
	st := g.step()
	if ac := st.Generations[0].AutoCompactEnabled; ac == nil || *ac {
		t.Errorf("the harness reports auto-compact %v under flower's levers, want false", ac)
	}
	noCompaction(t, g, h.output())
	if code != 0 || len(st.Generations) != 2 || st.Generations[0].Handoff == nil || st.Generations[0].Handoff.Reason != manifest.ReasonCompactBlocked {
		t.Fatalf("exit %d, %d generations, generation 1's handoff %+v; errors %q: want a handoff for the /compact",
			code, len(st.Generations), st.Generations[0].Handoff, st.Errors)
	}
	if b := st.Generations[0].BlockedCompactions; len(b) != 1 || b[0].Trigger != "manual" || b[0].Context < 160_000 {
		t.Errorf("blocked compactions %+v: want the /compact, at the session's context", b)
	}
	_, first := g.sessions()
	if q := first[st.Generations[1].SessionID]; !strings.Contains(q.AllText, "NEXT-MARK-1") {
		t.Errorf("the successor's first request lacks the handoff")
	}
	g.checkLineage(st)
}

func runEdit(t *testing.T, g *guarRun) {
	h := g.run(guarTask, "--window", "200000")
	notes := filepath.Join(g.ws, ".flower", "notes", "交接-"+guarStep+".md")
	const edit = "PERSON-EDIT: use the vendored zlib"
	until(t, "the frozen handoff", func() bool {
		b, err := os.ReadFile(notes)
		return err == nil && strings.Contains(string(b), "NEXT-MARK-1")
	})
	b, err := os.ReadFile(notes)
	if err != nil {
		t.Fatal(err)
	}
	// Saved as an editor saves: a new file renamed over the old one.
	tmp := notes + ".edit"
	if err := os.WriteFile(tmp, []byte(strings.Replace(string(b), "NEXT-MARK-1", "NEXT-MARK-1 and "+edit, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, notes); err != nil {
		t.Fatal(err)
	}
	if code := g.wait(h); code != 0 {
		t.Fatalf("flower exited %d", code)
	}
	st := g.step()
	if len(st.Generations) != 2 || st.Generations[0].Handoff == nil {
		t.Fatalf("%d generations", len(st.Generations))
	}
	_, first := g.sessions()
	if q := first[st.Generations[1].SessionID]; !strings.Contains(q.AllText, edit) || !strings.Contains(q.AllText, "DOING-MARK-1") {
		t.Errorf("the successor's first request lacks the person's edit")
	}
	rec := st.Generations[0].Handoff
	b, _ = os.ReadFile(notes)
	sum := sha256.Sum256(b)
	if rec.SHA256Written == rec.SHA256Launched || rec.SHA256Launched != hex.EncodeToString(sum[:]) {
		t.Errorf("receipt hashes: written %s, launched %s; the file is %x", rec.SHA256Written, rec.SHA256Launched, sum)
	}
	g.checkLineage(st)
}
