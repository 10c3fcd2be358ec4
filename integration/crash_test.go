package integration_test

// Flower as a process of its own meets SIGKILL, Ctrl-C and a second
// flower, and `flower continue` picks up after each. These tests build
// cmd/flower and run it against the real harness and the scripted API (or,
// where the real harness cannot show the fault, against this test binary
// re-executed as the fake harness).

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/flowerhq/flower/handoffwriter"
	"github.com/flowerhq/flower/harness/harnesstest"
	"github.com/flowerhq/flower/integration/itest"
	flowerinteractive "github.com/flowerhq/flower/interactive"
	"github.com/flowerhq/flower/manifest"
	"github.com/flowerhq/flower/scriptedapi"
	"github.com/flowerhq/flower/supervisor"
	"github.com/flowerhq/flower/trust"
)

// TestMain lets this test binary be the fake harness too.
func TestMain(m *testing.M) {
	harnesstest.Main()
	removeState := harnesstest.PrivateState()
	code := m.Run()
	removeState()
	flower.Remove()
	os.Exit(code)
}

// flower is the binary these tests run, built once.
var flower itest.Flower

func flowerBinary(t *testing.T) string { return flower.Path(t) }

// flowerProc is a flower process started in the background.
type flowerProc struct {
	t      *testing.T
	cmd    *exec.Cmd
	out    *bytes.Buffer // stdout and stderr
	mu     *sync.Mutex
	exited chan struct{}
	err    error
}

// startFlower starts flower with args in its own process group (so that a
// signal reaches flower alone, as a kill by pid does).
func startFlower(t *testing.T, env []string, args ...string) *flowerProc {
	t.Helper()
	f := &flowerProc{t: t, out: &bytes.Buffer{}, mu: &sync.Mutex{}, exited: make(chan struct{})}
	f.cmd = exec.Command(flowerBinary(t), args...)
	f.cmd.Env = env
	w := lockedWriter{f.mu, f.out}
	f.cmd.Stdout, f.cmd.Stderr = w, w
	f.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := f.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		f.err = f.cmd.Wait()
		close(f.exited)
	}()
	t.Cleanup(func() {
		_ = f.cmd.Process.Kill()
		<-f.exited
		if t.Failed() {
			t.Logf("flower %v output:\n%s", args, f.output())
		}
	})
	return f
}

func (f *flowerProc) output() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.out.String()
}

// wait returns flower's exit code, failing after d.
func (f *flowerProc) wait(d time.Duration) int {
	f.t.Helper()
	select {
	case <-f.exited:
		return exitCode(f.err)
	case <-time.After(d):
		f.t.Fatalf("flower still running after %v:\n%s", d, f.output())
		return -1
	}
}

// descendants returns flower's running descendants: the harness, its
// guard, and the tools it runs (in sessions of their own).
func (f *flowerProc) descendants() []int {
	return harnesstest.Descendants(f.cmd.Process.Pid)
}

// runFlowerCLI runs flower to its end and returns its exit code and output.
func runFlowerCLI(t *testing.T, env []string, args ...string) (int, string) {
	t.Helper()
	f := startFlower(t, env, args...)
	code := f.wait(3 * time.Minute)
	return code, f.output()
}

// until polls cond every 20ms for up to waitLimit.
func until(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// allGone waits until none of pids runs; it returns how long that took,
// failing after limit.
func allGone(t *testing.T, pids []int, limit time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	for {
		alive := harnesstest.Alive(pids)
		if len(alive) == 0 {
			return time.Since(start)
		}
		if time.Since(start) > limit {
			t.Fatalf("processes %v (of %v) outlived flower by %v", alive, pids, limit)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// hasProcess reports whether one of pids is named comm.
func hasProcess(pids []int, comm string) bool {
	for _, pid := range pids {
		if b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm"); strings.TrimSpace(string(b)) == comm {
			return true
		}
	}
	return false
}

func loadStep(t *testing.T, runDir, step string) *manifest.StepResult {
	t.Helper()
	m, err := manifest.Load(manifest.Path(runDir))
	if err != nil {
		t.Fatalf("manifest after the kill: %v", err)
	}
	st := m.Step(step)
	if st == nil {
		t.Fatalf("manifest has no step %s", step)
	}
	return st
}

// SIGKILL at each kill point of a handoff's life; the manifest stays valid
// JSON, the handoff file whole or absent, the harness (with its tools) goes
// with flower, and `flower continue` recovers:
//   - during a turn (a Bash tool running): the session is resumed;
//   - during the writing turn: no file yet, so the successor starts from a
//     degraded handoff built from the recorded task;
//   - after the file is frozen, before the successor starts: the
//     successor starts from the file.
func TestKillFlowerAtEachPoint(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name       string
		plans      [][]scriptedapi.Reply
		handoff    func(int) scriptedapi.Reply
		env        []string
		killWhen   func(home string, f *flowerProc, runDir string, srv *scriptedapi.Server) bool
		fileAtKill bool // the notes file exists (whole) at the kill
		check      func(t *testing.T, srv *scriptedapi.Server, st *manifest.StepResult, seqBefore int)
	}{
		{
			name:  "during a turn",
			plans: [][]scriptedapi.Reply{{bash(100_000, "timeout 60 tail -f /dev/null"), done(110_000)}},
			killWhen: func(home string, f *flowerProc, _ string, _ *scriptedapi.Server) bool {
				// The harness writes its transcript a moment after the
				// fact; killed before that, the session cannot be resumed
				// (TestContinueOnRealHarness covers that path).
				return hasProcess(f.descendants(), "tail") && transcriptHas(home, "timeout 60 tail")
			},
			check: func(t *testing.T, srv *scriptedapi.Server, st *manifest.StepResult, seqBefore int) {
				resumed := firstMainAfter(srv, seqBefore)
				for _, want := range []string{"TASK-MARK", "timeout 60 tail -f /dev/null", supervisor.ContinueMessage} {
					if !strings.Contains(resumed.AllText, want) {
						t.Errorf("the resumed session's request lacks %q: not the same session", want)
					}
				}
				if len(st.Generations) != 1 || len(st.Retired) != 0 || st.Generations[0].SessionID != st.SessionID {
					t.Errorf("%d generations, retired %q: continue did not resume the session", len(st.Generations), st.Retired)
				}
			},
		},
		{
			name:  "during the writing turn",
			plans: [][]scriptedapi.Reply{{bash(100_000, "echo one"), bash(155_000, "echo two")}, {done(20_000)}},
			handoff: func(int) scriptedapi.Reply {
				return scriptedapi.Reply{Usage: usage(156_000), Text: "## doing\nnever sent", Delay: time.Minute}
			},
			killWhen: func(_ string, _ *flowerProc, _ string, srv *scriptedapi.Server) bool { return writingArrived(srv) },
			check: func(t *testing.T, srv *scriptedapi.Server, st *manifest.StepResult, seqBefore int) {
				h := st.Generations[0].Handoff
				if len(st.Generations) != 2 || h == nil || !h.Degraded || !strings.Contains(h.Why, "flower stopped during generation 1's handoff") {
					t.Fatalf("%d generations, handoff %+v: want a degraded handoff", len(st.Generations), h)
				}
				first := firstMainAfter(srv, seqBefore)
				for _, want := range []string{handoffwriter.DegradedMarker, "TASK-MARK", "taking over"} {
					if !strings.Contains(first.AllText, want) {
						t.Errorf("the successor's first request lacks %q", want)
					}
				}
				if strings.Contains(first.AllText, "echo one") {
					t.Errorf("the successor is not a fresh session")
				}
			},
		},
		{
			name:       "after the file, before the successor",
			plans:      [][]scriptedapi.Reply{{bash(100_000, "echo one"), bash(155_000, "echo two")}, {done(20_000)}},
			handoff:    goodHandoff,
			env:        []string{"FLOWER_TEST_PAUSE_AFTER_FREEZE=2m"},
			fileAtKill: true,
			killWhen: func(home string, _ *flowerProc, runDir string, _ *scriptedapi.Server) bool {
				m, err := manifest.Load(manifest.Path(runDir))
				if err != nil || m.Step("main") == nil || len(m.Step("main").Generations) == 0 || m.Step("main").Generations[0].Handoff == nil {
					return false
				}
				// The freeze is on disk; the pause begins once the file's
				// receipt is in the trust store (a flower killed before
				// that leaves a file a person must vouch for, by design).
				return handoffVouched(home, m.Step("main").Generations[0].Handoff.Path)
			},
			check: func(t *testing.T, srv *scriptedapi.Server, st *manifest.StepResult, seqBefore int) {
				h := st.Generations[0].Handoff
				if len(st.Generations) != 2 || h == nil || h.Degraded {
					t.Fatalf("%d generations, handoff %+v", len(st.Generations), h)
				}
				first := firstMainAfter(srv, seqBefore)
				if !strings.Contains(first.AllText, "DOING-MARK-1") || !strings.Contains(first.AllText, "NEXT-MARK-1") {
					t.Errorf("the successor did not start from the file")
				}
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			j := &job{plans: tc.plans, handoff: tc.handoff}
			srv := startServer(t, j.script)
			ws := t.TempDir()
			runDir := filepath.Join(ws, ".flower", "runs", "crash")
			env := append(harnessEnv(t, srv, "FLOWER_HARNESS="+harnessPath(t)), tc.env...)
			args := []string{"-C", ws, "--run-dir", runDir, "--window", "200000"}

			f := startFlower(t, env, append(args, "TASK-MARK: keep working", "--", "--allowedTools", "Bash")...)
			until(t, "the kill point", func() bool { return tc.killWhen(homeOf(env), f, runDir, srv) })
			left := f.descendants() // none between two harnesses
			if err := f.cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			f.wait(10 * time.Second)
			took := allGone(t, left, 5*time.Second)
			t.Logf("flower's descendants %v gone %v after its SIGKILL", left, took)

			st := loadStep(t, runDir, "main") // valid JSON, a manifest
			if st.Status != manifest.StatusRunning {
				t.Errorf("status at the kill %s, want running", st.Status)
			}
			notes := filepath.Join(ws, ".flower", "notes", "交接-main.md")
			b, err := os.ReadFile(notes)
			switch {
			case tc.fileAtKill && err != nil:
				t.Fatalf("the handoff file is missing at the kill: %v", err)
			case tc.fileAtKill && (!handoffwriter.Parse(string(b)).Complete() || !strings.Contains(string(b), "DOING-MARK-1")):
				t.Fatalf("the handoff file is not whole:\n%s", b)
			case !tc.fileAtKill && err == nil:
				t.Fatalf("a handoff file exists at the kill:\n%s", b)
			}

			seq := len(srv.Requests())
			code, out := runFlowerCLI(t, env, append([]string{"continue"}, append(args, "--", "--allowedTools", "Bash")...)...)
			if code != 0 {
				t.Fatalf("flower continue exited %d:\n%s", code, out)
			}
			st = loadStep(t, runDir, "main")
			if st.Status != manifest.StatusSucceeded || st.Attempts != 0 {
				t.Errorf("after continue: status %s attempts %d, errors %q", st.Status, st.Attempts, st.Errors)
			}
			if !hasErrorText(st, "flower stopped while this step was running") {
				t.Errorf("the crash is not explained in errors: %q", st.Errors)
			}
			logb, _ := os.ReadFile(filepath.Join(runDir, "flower.log"))
			if want := fmt.Sprintf("left by pid %d", f.cmd.Process.Pid); !strings.Contains(string(logb), want) {
				t.Errorf("the log does not say the dead flower's lock was taken over (%q)", want)
			}
			tc.check(t, srv, st, seq)
			if t.Failed() {
				t.Logf("errors after continue: %q", st.Errors)
			}
		})
	}
}

// homeOf returns HOME in env.
// handoffVouched: the trust store under home holds flower's receipt of the
// handoff file at path as it is now.
func handoffVouched(home, path string) bool {
	b, err := os.ReadFile(path)
	if err != nil {
		return false
	}
	// flower's environment is this one's, HOME aside (harnessEnv).
	st, err := trust.Open([]string{"HOME=" + home, "XDG_STATE_HOME=" + os.Getenv("XDG_STATE_HOME")})
	return err == nil && st.Check(path, b) == trust.Known
}

func homeOf(env []string) string {
	home := ""
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "HOME="); ok {
			home = v
		}
	}
	return home
}

// transcriptHas reports whether a session transcript the harness keeps
// under home holds text.
func transcriptHas(home, text string) bool {
	files, _ := filepath.Glob(filepath.Join(home, ".claude", "projects", "*", "*.jsonl"))
	for _, f := range files {
		if b, _ := os.ReadFile(f); strings.Contains(string(b), text) {
			return true
		}
	}
	return false
}

func hasErrorText(st *manifest.StepResult, sub string) bool {
	for _, e := range st.Errors {
		if strings.Contains(e, sub) {
			return true
		}
	}
	return false
}

func writingArrived(srv *scriptedapi.Server) bool {
	for _, r := range srv.Requests() {
		if strings.Contains(r.LastUserText, handoffwriter.PromptTag) {
			return true
		}
	}
	return false
}

// firstMainAfter returns the first main-thread request after the first n.
func firstMainAfter(srv *scriptedapi.Server, n int) scriptedapi.Request {
	for _, r := range srv.Requests()[n:] {
		if r.Kind == scriptedapi.KindMain {
			return r
		}
	}
	return scriptedapi.Request{}
}

// The first Ctrl-C (SIGINT to flower) reaches the harness as an interrupt:
// the running tool stops, the turn ends, the manifest says "interrupted",
// flower exits 130 and the harness with its tools is gone within 10
// seconds. flower prints the flower continue line the interactive front
// ends with, and that command, run as printed, resumes the same session.
func TestCtrlCThenContinue(t *testing.T) {
	t.Parallel()
	j := &job{plans: [][]scriptedapi.Reply{{bash(100_000, "timeout 60 tail -f /dev/null"), done(110_000)}}}
	srv := startServer(t, j.script)
	ws := t.TempDir()
	runDir := filepath.Join(ws, ".flower", "runs", "sigint")
	env := harnessEnv(t, srv, "FLOWER_HARNESS="+harnessPath(t))
	args := []string{"-C", ws, "--run-dir", runDir, "--window", "200000"}

	f := startFlower(t, env, append(args, "TASK-MARK: wait for it", "--", "--allowedTools", "Bash")...)
	until(t, "the tool to run", func() bool { return hasProcess(f.descendants(), "tail") })
	left := f.descendants()
	sent := time.Now()
	if err := f.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if code := f.wait(10 * time.Second); code != 130 {
		t.Errorf("flower exited %d after SIGINT, want 130", code)
	}
	took := time.Since(sent)
	allGone(t, left, 10*time.Second-took)
	t.Logf("SIGINT to exit: %v; descendants %v gone", took, left)

	st := loadStep(t, runDir, "main")
	if st.Status != manifest.StatusInterrupted || st.SessionID == "" || !hasErrorText(st, "interrupted: by Ctrl-C") {
		t.Fatalf("after SIGINT: status %s session %q errors %q", st.Status, st.SessionID, st.Errors)
	}
	if st.NumTurns == 0 {
		t.Errorf("the interrupted turn's result was not booked (num_turns 0)")
	}
	session := st.SessionID
	// The way on is printed as the interactive front prints it, and it
	// is what continues the step.
	hint := flowerinteractive.ContinueHint(runDir, st, []string{"--allowedTools", "Bash"})
	if !strings.Contains(f.output(), hint) {
		t.Fatalf("after SIGINT flower did not print\n%s\nit printed:\n%s", hint, f.output())
	}
	line := strings.Fields(strings.Split(hint, "\n")[1])
	if line[0] != "flower" || line[1] != "continue" || strings.ContainsAny(hint, `'"`) {
		t.Fatalf("the continue line is not one to run as it is: %q", line)
	}

	seq := len(srv.Requests())
	code, out := runFlowerCLI(t, env, line[1:]...)
	if code != 0 {
		t.Fatalf("flower continue exited %d:\n%s", code, out)
	}
	st = loadStep(t, runDir, "main")
	if st.Status != manifest.StatusSucceeded || st.SessionID != session || len(st.Generations) != 1 {
		t.Errorf("after continue: status %s session %s (was %s), %d generations", st.Status, st.SessionID, session, len(st.Generations))
	}
	if r := firstMainAfter(srv, seq); !strings.Contains(r.AllText, "timeout 60 tail") || !strings.Contains(r.AllText, supervisor.ContinueMessage) {
		t.Errorf("continue did not resume the interrupted session")
	}
}

// A second Ctrl-C kills the harness's group at once, even a harness that
// ignores interrupts and SIGINT and has a tool in a session of its own; the
// manifest is still finalised as interrupted.
func TestSecondSignalKillsAtOnce(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	runDir := filepath.Join(ws, ".flower", "runs", "twice")
	fakeLog := filepath.Join(t.TempDir(), "fake.log")
	env := harnesstest.Env(harnesstest.ModeHangTurn, harnesstest.EnvGrandchild+"=session", harnesstest.EnvLog+"="+fakeLog)
	f := startFlower(t, env, "-C", ws, "--run-dir", runDir, "--harness", os.Args[0], "task")
	until(t, "the fake to hang", func() bool {
		for _, e := range harnesstest.ReadLog(fakeLog) {
			if e.Event == "user" {
				return true
			}
		}
		return false
	})
	left := f.descendants()
	if len(left) < 3 {
		t.Fatalf("descendants %v: want the fake, its guard and its grandchild", left)
	}
	_ = f.cmd.Process.Signal(syscall.SIGINT)
	time.Sleep(300 * time.Millisecond)
	if harnesstest.Alive(left) == nil {
		t.Fatal("premise: the fake ignores the first signal")
	}
	second := time.Now()
	_ = f.cmd.Process.Signal(syscall.SIGINT)
	code := f.wait(10 * time.Second)
	took := time.Since(second)
	allGone(t, left, time.Second)
	t.Logf("second SIGINT to exit: %v", took)
	if code != 130 || took > 2*time.Second {
		t.Errorf("exit %d %v after the second signal, want 130 at once (the grace period is 5s)", code, took)
	}
	if out := f.output(); !strings.Contains(out, "killed the harness") {
		t.Errorf("flower did not say it killed the harness:\n%s", out)
	}
	if st := loadStep(t, runDir, "main"); st.Status != manifest.StatusInterrupted {
		t.Errorf("status %s after two signals, want interrupted", st.Status)
	}
}

// One run per step across processes: a second flower on the same run dir
// and step refuses, naming the holder's pid; after the holder is killed,
// its lock is taken over by flower continue.
func TestSecondFlowerRefused(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	runDir := filepath.Join(ws, ".flower", "runs", "one")
	dir := t.TempDir()
	fakeLog := filepath.Join(dir, "fake.log")
	env := harnesstest.Env(harnesstest.ModeHangTurn, harnesstest.EnvLog+"="+fakeLog,
		harnesstest.EnvFaultyStarts+"=1", harnesstest.EnvState+"="+filepath.Join(dir, "starts"))
	args := []string{"-C", ws, "--run-dir", runDir, "--harness", os.Args[0]}
	holder := startFlower(t, env, append(args, "task")...)
	until(t, "the first flower's harness", func() bool { return len(harnesstest.ReadLog(fakeLog)) >= 2 })

	code, out := runFlowerCLI(t, env, append(args, "--step", "main", "task")...)
	if want := fmt.Sprintf("pid %d", holder.cmd.Process.Pid); code != 1 || !strings.Contains(out, want) || !strings.Contains(out, "is being run by") {
		t.Errorf("second flower: exit %d, want 1 and a message naming %s:\n%s", code, want, out)
	}
	starts := 0
	for _, e := range harnesstest.ReadLog(fakeLog) {
		if e.Event == "start" {
			starts++
		}
	}
	if starts != 1 {
		t.Errorf("%d harness starts: the refused flower started one", starts)
	}

	_ = holder.cmd.Process.Kill()
	holder.wait(10 * time.Second)
	code, out = runFlowerCLI(t, env, append([]string{"continue"}, args...)...)
	if code != 0 {
		t.Fatalf("continue after the holder died: exit %d\n%s", code, out)
	}
	if want := fmt.Sprintf("left by pid %d", holder.cmd.Process.Pid); !strings.Contains(out, want) {
		t.Errorf("continue did not say it took the dead holder's lock (%q):\n%s", want, out)
	}
}

// A run dir that cannot be written is a clear error before any harness
// starts.
func TestRunDirNotWritable(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	file := filepath.Join(ws, "a-file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	fakeLog := filepath.Join(t.TempDir(), "fake.log")
	env := harnesstest.Env(harnesstest.ModeStream, harnesstest.EnvLog+"="+fakeLog)
	code, out := runFlowerCLI(t, env, "-C", ws, "--run-dir", filepath.Join(file, "run"), "--harness", os.Args[0], "task")
	if code != 1 || !strings.Contains(out, "flower: run dir") || !strings.Contains(out, file) || !strings.Contains(out, "not a directory") {
		t.Errorf("exit %d, want 1 with an error naming the run dir:\n%s", code, out)
	}
	if _, err := os.Stat(fakeLog); err == nil {
		t.Errorf("a harness was started")
	}
}
