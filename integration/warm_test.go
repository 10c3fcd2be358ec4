package integration_test

// The warm successor (DESIGN.md «Warm successor») and the one context-usage
// request per run (DESIGN.md «Window from the harness»), on the real
// harness: what the successor's first request carries, what an unneeded
// early successor leaves behind, a SIGKILL while it is up, and how many
// count_tokens calls a run causes.

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/flowerhq/flower/handoffwriter"
	flowerharness "github.com/flowerhq/flower/harness"
	"github.com/flowerhq/flower/manifest"
	"github.com/flowerhq/flower/scriptedapi"
	"github.com/flowerhq/flower/supervisor"
)

// syncBuffer is a log sink the harness's goroutines and the test share.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// logOrder reports whether each of msgs appears in log, in that order.
func logOrder(log string, msgs ...string) bool {
	at := 0
	for _, m := range msgs {
		i := strings.Index(log[at:], m)
		if i < 0 {
			return false
		}
		at += i + len(m)
	}
	return true
}

// The successor, started before the writing turn, gets the files as they
// are on disk when its prompt is sent: an edit of the task file made during
// the writing turn, and an edit of the handoff file made after freeze, both
// reach its first request.
func TestWarmSuccessorGetsFilesAsOnDiskWhenSent(t *testing.T) {
	t.Parallel()
	var taskFile string
	var taskEdited bool
	handoff := func(gen int) scriptedapi.Reply {
		// The writing turn is running: a person edits the task file now.
		b, err := os.ReadFile(taskFile)
		if err != nil {
			t.Errorf("read the task file during the writing turn: %v", err)
		} else if err := os.WriteFile(taskFile, append(b, []byte("\nTASK-EDIT-DURING-WRITING: keep the vendored zlib.\n")...), 0o644); err != nil {
			t.Errorf("edit the task file: %v", err)
		} else {
			taskEdited = true
		}
		// A writing turn of a real length: the successor starts, and is
		// readied with its blank prompt, while it runs.
		r := goodHandoff(gen)
		r.Delay = 1500 * time.Millisecond
		return r
	}
	j := &job{plans: [][]scriptedapi.Reply{{bash(100_000, "echo start"), bash(155_000, "echo a")}, {done(20_000)}}, handoff: handoff}
	afterFreeze := func(path string) {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Errorf("read for edit: %v", err)
			return
		}
		s := strings.Replace(string(b), "NEXT-MARK-1", "NEXT-MARK-1 and HANDOFF-EDIT-AFTER-FREEZE", 1)
		if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
			t.Errorf("edit: %v", err)
		}
	}
	var log syncBuffer
	opts := supervisor.Options{Handoff: window200k(0), Workbench: true, AfterFreeze: afterFreeze,
		Logger: slog.New(slog.NewTextHandler(&log, nil))}
	f, st, err := runFlowerWith(t, func(ws string) { taskFile = filepath.Join(ws, ".flower", "notes", "任务-干活.md") }, j.script, opts, "TASK-MARK: build the shim")
	if err != nil {
		t.Fatalf("RunStep: %v\nerrors: %q", err, st.Errors)
	}
	if !taskEdited {
		t.Fatal("premise: the task file was not edited during the writing turn")
	}
	if len(st.Generations) != 2 || st.Status != manifest.StatusSucceeded {
		t.Fatalf("%d generations, status %s", len(st.Generations), st.Status)
	}
	// The successor was started early: with the writing turn, and given
	// its prompt only after the freeze.
	if !logOrder(log.String(), "successor harness started early", "handoff written", "first prompt sent to the successor started early") {
		t.Errorf("the log does not show a successor started during the writing turn and given its prompt after the freeze:\n%s", log.String())
	}
	first := requestBySeq(f.srv, j.firstSeq[1])
	for _, want := range []string{"TASK-EDIT-DURING-WRITING", "HANDOFF-EDIT-AFTER-FREEZE", "DOING-MARK-1"} {
		if !strings.Contains(first.AllText, want) {
			t.Errorf("the successor's first request lacks %q", want)
		}
	}
	if first.SessionID == "" || first.SessionID == st.Generations[0].SessionID {
		t.Errorf("the successor's first request came from session %q, not a fresh one", first.SessionID)
	}
	// The blank prompt that readied the successor left nothing in its
	// conversation: its first request has as many messages as the first
	// session's first one, and no trace of it.
	if gen1 := requestBySeq(f.srv, j.firstSeq[0]); first.NumMessages != gen1.NumMessages || strings.Contains(first.AllText, "Blank prompt") {
		t.Errorf("the successor's first request has %d messages (the first session's had %d), or mentions the blank prompt", first.NumMessages, gen1.NumMessages)
	}
	if !strings.Contains(log.String(), "successor harness started early") || !logOrder(log.String(), "successor harness started early", "handoff written") {
		t.Errorf("the successor did not start during the writing turn")
	}
	h := st.Generations[0].Handoff
	if h.SHA256Written == h.SHA256Launched || h.TaskSHA256 == st.TaskSHA256 {
		t.Errorf("the receipt does not see the edits: handoff %s → %s, task %s → %s", h.SHA256Written, h.SHA256Launched, st.TaskSHA256, h.TaskSHA256)
	}
}

// runFlowerWith is runFlower with the workspace made first and handed to
// prepare, and the server's script given directly.
func runFlowerWith(t *testing.T, prepare func(ws string), script scriptedapi.Script, opts supervisor.Options, task string) (*flowerRun, *manifest.StepResult, error) {
	t.Helper()
	srv := startServer(t, script)
	f := &flowerRun{t: t, srv: srv, workspace: t.TempDir()}
	prepare(f.workspace)
	f.runDir = filepath.Join(f.workspace, ".flower", "runs", "test")
	opts.Workspace, opts.RunDir = f.workspace, f.runDir
	opts.HarnessPath = harnessPath(t)
	opts.Env = harnessEnv(t, srv)
	opts.HarnessArgs = []string{"--allowedTools", "Bash"}
	opts.OnEvent = f.onEvent
	opts.Grace = 3 * time.Second
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
	return f, st, err
}

// withHome lists the running processes whose environment sets HOME=home:
// flower and every harness it started for one test (each test has a HOME
// of its own), wherever they were reparented to.
func withHome(home string) []int {
	mark := []byte("HOME=" + home + "\x00")
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		env, err := os.ReadFile("/proc/" + e.Name() + "/environ")
		if err != nil || !bytes.Contains(append([]byte{0}, env...), append([]byte{0}, mark...)) {
			continue
		}
		if stat, err := os.ReadFile("/proc/" + e.Name() + "/stat"); err == nil {
			if i := bytes.LastIndexByte(stat, ')'); i > 0 && len(stat) > i+2 && stat[i+2] == 'Z' {
				continue // a zombie runs nothing
			}
		}
		pids = append(pids, pid)
	}
	return pids
}

// harnesses counts the harness processes among pids.
func harnesses(pids []int) int {
	n := 0
	for _, pid := range pids {
		if b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm"); strings.TrimSpace(string(b)) == "claude" {
			n++
		}
	}
	return n
}

// earlySuccessorUp: flower's log says the successor started early, and two
// harnesses run among pids. The log, because a fork of the cut harness
// about to run a tool is also a "claude" for a moment.
func earlySuccessorUp(runDir string, pids []int) bool {
	b, _ := os.ReadFile(filepath.Join(runDir, "flower.log"))
	return bytes.Contains(b, []byte("successor harness started early")) && harnesses(pids) == 2
}

// noneLeft fails unless every process of the test's HOME is gone within a
// hang guard of 10 s after flower exited.
func noneLeft(t *testing.T, home string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		left := withHome(home)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("processes %v outlived flower", left)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// sessionsOf lists the distinct sessions that sent main-thread requests.
func sessionsOf(srv *scriptedapi.Server) []string {
	var out []string
	for _, r := range srv.Requests() {
		if r.Kind == scriptedapi.KindMain && !slices.Contains(out, r.SessionID) {
			out = append(out, r.SessionID)
		}
	}
	return out
}

// A successor that is not needed leaves nothing: no process, and no trace
// in the manifest (no generation, no session, no request to the API).
//   - the step ended instead: the round over the threshold was the agent's
//     last reply, so the turn ends on its own at the cut, before any
//     successor starts;
//   - flower was interrupted during the writing turn: the successor
//     started early is stopped;
//   - the generation limit was reached: no successor starts at all.
func TestUnneededEarlySuccessorLeavesNothing(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		plans    [][]scriptedapi.Reply
		handoff  func(int) scriptedapi.Reply
		args     []string
		signalAt func(srv *scriptedapi.Server) bool // SIGINT to flower once true
		code     int
		status   string
		early    bool // a successor was started early (and then stopped)
		writing  bool // a writing turn reached the API
		// raceable: the cut's interrupt can reach the harness before it
		// has ended the turn on its own (a loaded machine); the turn then
		// ends interrupted and the step rightly hands off. That run is
		// checked for what any run must hold (exit 0, nothing left, the
		// lineage), not for the path under test.
		raceable bool
	}{
		{
			name:     "the step ended instead",
			plans:    [][]scriptedapi.Reply{{bash(100_000, "echo one"), done(155_000)}, {done(20_000)}},
			handoff:  goodHandoff,
			code:     0,
			status:   manifest.StatusSucceeded,
			raceable: true,
		},
		{
			name:  "flower interrupted",
			plans: [][]scriptedapi.Reply{{bash(100_000, "echo one"), bash(155_000, "echo two")}, {done(20_000)}},
			handoff: func(int) scriptedapi.Reply {
				return scriptedapi.Reply{Usage: usage(156_000), Text: "## doing\nnever sent", Delay: time.Minute}
			},
			signalAt: writingArrived,
			code:     130,
			status:   manifest.StatusInterrupted,
			early:    true,
			writing:  true,
		},
		{
			name:    "the generation limit reached",
			plans:   [][]scriptedapi.Reply{{bash(100_000, "echo one"), bash(155_000, "echo two")}, {done(20_000)}},
			handoff: goodHandoff,
			args:    []string{"--max-generations", "1"},
			code:    3,
			status:  manifest.StatusGenerationLimit,
			writing: true,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			j := &job{plans: tc.plans, handoff: tc.handoff}
			srv := startServer(t, j.script)
			ws := t.TempDir()
			runDir := filepath.Join(ws, ".flower", "runs", "warm")
			env := harnessEnv(t, srv, "FLOWER_HARNESS="+harnessPath(t))
			home := homeOf(env)
			args := append([]string{"-C", ws, "--run-dir", runDir, "--window", "200000"}, tc.args...)
			f := startFlower(t, env, append(args, "TASK-MARK: work", "--", "--allowedTools", "Bash")...)
			if tc.signalAt != nil {
				until(t, "the signal point", func() bool { return tc.signalAt(srv) })
				// Both harnesses are up: the cut one writing, the early one idle.
				until(t, "the early successor", func() bool { return earlySuccessorUp(runDir, withHome(home)) })
				if err := f.cmd.Process.Signal(syscall.SIGINT); err != nil {
					t.Fatal(err)
				}
			}
			if code := f.wait(2 * time.Minute); code != tc.code {
				t.Fatalf("flower exited %d, want %d:\n%s", code, tc.code, f.output())
			}
			noneLeft(t, home)
			if tc.raceable && writingArrived(srv) {
				st := loadStep(t, runDir, "main")
				if st.Status != tc.status || len(st.Generations) != 2 || len(sessionsOf(srv)) != 2 {
					t.Fatalf("the interrupt beat the turn's end: status %s, %d generations, sessions %q; want %s, 2, 2",
						st.Status, len(st.Generations), sessionsOf(srv), tc.status)
				}
				t.Logf("the interrupt beat the turn's end; the step handed off instead (checked: exit, leftovers, lineage)")
				return
			}

			logb, _ := os.ReadFile(filepath.Join(runDir, "flower.log"))
			log := string(logb)
			if got := strings.Contains(log, "successor harness started early"); got != tc.early {
				t.Errorf("successor started early: %v, want %v", got, tc.early)
			}
			if tc.early && !strings.Contains(log, "was not needed; stopped") {
				t.Errorf("the log does not say the early successor was stopped")
			}
			if got := writingArrived(srv); got != tc.writing {
				t.Errorf("writing turn reached the API: %v, want %v", got, tc.writing)
			}
			st := loadStep(t, runDir, "main")
			if st.Status != tc.status || len(st.Generations) != 1 {
				t.Fatalf("status %s, %d generations; want %s, 1", st.Status, len(st.Generations), tc.status)
			}
			// The early successor never reached the manifest or the API.
			sessions := sessionsOf(srv)
			if len(sessions) != 1 || sessions[0] != st.Generations[0].SessionID {
				t.Errorf("sessions that asked the API %q, generation 1's %s", sessions, st.Generations[0].SessionID)
			}
			for _, id := range append(slices.Clone(st.Retired), st.SessionID) {
				if id != "" && id != sessions[0] {
					t.Errorf("the manifest names session %s, which is not generation 1's", id)
				}
			}
		})
	}
}

// SIGKILL of flower while the successor started early is up: both
// harnesses go with flower, and `flower continue` recovers.
func TestKillFlowerWithEarlySuccessorUp(t *testing.T) {
	t.Parallel()
	j := &job{plans: [][]scriptedapi.Reply{{bash(100_000, "echo one"), bash(155_000, "echo two")}, {done(20_000)}},
		handoff: func(int) scriptedapi.Reply {
			return scriptedapi.Reply{Usage: usage(156_000), Text: "## doing\nnever sent", Delay: time.Minute}
		}}
	srv := startServer(t, j.script)
	ws := t.TempDir()
	runDir := filepath.Join(ws, ".flower", "runs", "kill")
	env := harnessEnv(t, srv, "FLOWER_HARNESS="+harnessPath(t))
	home := homeOf(env)
	args := []string{"-C", ws, "--run-dir", runDir, "--window", "200000"}
	f := startFlower(t, env, append(args, "TASK-MARK: keep working", "--", "--allowedTools", "Bash")...)
	until(t, "the writing turn", func() bool { return writingArrived(srv) })
	until(t, "the early successor", func() bool { return earlySuccessorUp(runDir, f.descendants()) })
	if err := f.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	f.wait(10 * time.Second)
	noneLeft(t, home)
	if st := loadStep(t, runDir, "main"); st.Status != manifest.StatusRunning || len(st.Generations) != 1 {
		t.Fatalf("at the kill: status %s, %d generations; want running, 1", st.Status, len(st.Generations))
	}

	seq := len(srv.Requests())
	code, out := runFlowerCLI(t, env, append([]string{"continue"}, append(args, "--", "--allowedTools", "Bash")...)...)
	if code != 0 {
		t.Fatalf("flower continue exited %d:\n%s", code, out)
	}
	noneLeft(t, home)
	st := loadStep(t, runDir, "main")
	if st.Status != manifest.StatusSucceeded || len(st.Generations) != 2 || st.Generations[0].Handoff == nil {
		t.Fatalf("after continue: status %s, %d generations", st.Status, len(st.Generations))
	}
	first := firstMainAfter(srv, seq)
	for _, want := range []string{handoffwriter.DegradedMarker, "TASK-MARK", "taking over"} {
		if !strings.Contains(first.AllText, want) {
			t.Errorf("the successor's first request lacks %q", want)
		}
	}
}

// One context-usage request per run: a three-session run makes one burst of
// count_tokens calls, from the first session, after its first prompt went
// out; the successors reuse the answer kept in the manifest, and so does
// `flower continue`.
func TestOneProbePerRun(t *testing.T) {
	t.Parallel()
	work := []scriptedapi.Reply{bash(100_000, "echo one >> work.txt"), bash(140_000, "echo two >> work.txt"), bash(155_000, "echo three >> work.txt")}
	j := &job{plans: [][]scriptedapi.Reply{work, work, {bash(30_000, "echo final >> work.txt"), done(40_000)}}, handoff: goodHandoff}
	f, st, err := runFlower(t, j, supervisor.Options{Workbench: true}, "TASK-MARK: three sessions", "ANTHROPIC_MODEL=claude-sonnet-4-5")
	if err != nil {
		t.Fatalf("RunStep: %v\nerrors: %q", err, st.Errors)
	}
	if len(st.Generations) != 3 {
		t.Fatalf("%d generations, want 3", len(st.Generations))
	}
	ct := f.srv.CountTokensRequests()
	if len(ct) == 0 {
		t.Fatal("no count_tokens call: the harness was never asked")
	}
	gen1 := st.Generations[0].SessionID
	firstReq := requestBySeq(f.srv, j.firstSeq[0])
	for _, c := range ct {
		if c.SessionID != gen1 {
			t.Errorf("a count_tokens call from session %q, not generation 1's %s", c.SessionID, gen1)
		}
		if c.Time.Before(firstReq.Time) {
			t.Errorf("a count_tokens call at %v, before the first prompt's request at %v", c.Time, firstReq.Time)
		}
	}
	// One burst: the harness answers one request with 25 to 35 calls.
	if len(ct) > 40 {
		t.Errorf("%d count_tokens calls: more than one burst", len(ct))
	}
	// The window still comes from the harness (claude-sonnet-4-5 is 200k to
	// it, 1M to the name rule): the handoffs came at 150k.
	m, err := manifest.Load(manifest.Path(f.runDir))
	if err != nil {
		t.Fatal(err)
	}
	if p := m.Probe; p == nil || p.Window != 200_000 || p.Floor <= 0 || p.SessionID != gen1 || p.Fallback != "" {
		t.Fatalf("the run's probe %+v", m.Probe)
	}
	if st.WindowSource != manifest.WindowFromHarness || st.Generations[0].Handoff.At != 150_000 {
		t.Errorf("window %d from %s, handoff at %d", st.Window, st.WindowSource, st.Generations[0].Handoff.At)
	}

	// A continuation reuses the run's answer: no count_tokens call more.
	rt, err := supervisor.New(supervisor.Options{Front: flowerharness.Headless{}, Workspace: f.workspace, RunDir: f.runDir, Workbench: true,
		HarnessPath: harnessPath(t), HarnessArgs: []string{"--allowedTools", "Bash"}, Env: harnessEnv(t, f.srv, "ANTHROPIC_MODEL=claude-sonnet-4-5"), Grace: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if rt.Policy().Window != 200_000 || rt.WindowSource() != manifest.WindowFromHarness {
		t.Errorf("a new runtime on the run: window %d from %s, want the run's 200000 from the harness", rt.Policy().Window, rt.WindowSource())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := rt.Continue(ctx, "干活", "Say what you did."); err != nil {
		t.Fatalf("Continue: %v", err)
	}
	if n := f.srv.CountTokensCalls(); n != len(ct) {
		t.Errorf("continue made %d count_tokens calls", n-len(ct))
	}
}

// A gateway without count_tokens (it never answers) does not stall a run:
// the context-usage request is bounded, its failure is recorded as the
// run's fallback, a turn's result gives the window, and the run goes on
// through its handoff without asking again.
func TestProbeWithoutCountTokensDoesNotStall(t *testing.T) {
	t.Parallel()
	slow := bash(155_000, "echo two")
	slow.Delay = 12 * time.Second // outlasts the request's 10 s bound
	j := &job{plans: [][]scriptedapi.Reply{{bash(100_000, "echo one"), slow}, {done(20_000)}}, handoff: goodHandoff}
	srv := startServer(t, j.script)
	srv.SetCountTokensReply(scriptedapi.Reply{Fault: scriptedapi.FaultStall})
	f := &flowerRun{t: t, srv: srv, workspace: t.TempDir()}
	f.runDir = filepath.Join(f.workspace, ".flower", "runs", "test")
	rt, err := supervisor.New(supervisor.Options{Front: flowerharness.Headless{}, Workspace: f.workspace, RunDir: f.runDir, Workbench: true,
		HarnessPath: harnessPath(t), HarnessArgs: []string{"--allowedTools", "Bash"},
		Env: harnessEnv(t, srv, "ANTHROPIC_MODEL=claude-haiku-4-5"), Grace: 3 * time.Second, OnEvent: f.onEvent})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	st, err := rt.RunStep(ctx, "干活", "TASK-MARK: no count_tokens here")
	if err != nil {
		t.Fatalf("RunStep: %v\nerrors: %q", err, st.Errors)
	}
	if len(st.Generations) != 2 || st.Generations[0].Handoff == nil || st.Generations[0].Handoff.Degraded {
		t.Fatalf("%d generations, handoff %+v", len(st.Generations), st.Generations[0].Handoff)
	}
	m, err := manifest.Load(manifest.Path(f.runDir))
	if err != nil {
		t.Fatal(err)
	}
	if p := m.Probe; p == nil || !strings.Contains(p.Fallback, "got no answer") || p.Window != 0 {
		t.Fatalf("the run's probe %+v: want a recorded fallback", m.Probe)
	}
	if !anyContains(st.Errors, "get_context_usage got no answer") {
		t.Errorf("errors %q do not record the fallback", st.Errors)
	}
	if st.Window != 200_000 || st.WindowSource != manifest.WindowFromHarness {
		t.Errorf("window %d from %s: want the result's 200000", st.Window, st.WindowSource)
	}
	gen1 := st.Generations[0].SessionID
	for _, c := range srv.CountTokensRequests() {
		if c.SessionID != gen1 {
			t.Errorf("session %s asked again after the fallback was recorded", c.SessionID)
		}
	}
}
