package integration_test

// One step, one owner, and durable or loud (DESIGN.md «One step, one
// owner», «Durable or loud»), on the real harness and the scripted API:
// two runs of one step in one workspace started in the same second, two
// steps of one workspace side by side, and a run whose disk fills up.

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/flowerhq/flower/handoffwriter"
	"github.com/flowerhq/flower/manifest"
	"github.com/flowerhq/flower/scriptedapi"
	"github.com/flowerhq/flower/supervisor"
)

// runDirsOf lists the run dirs under ws/.flower/runs (not the latest link).
func runDirsOf(t *testing.T, ws string) []string {
	t.Helper()
	runs := filepath.Join(ws, ".flower", "runs")
	entries, err := os.ReadDir(runs)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if e.IsDir() {
			out = append(out, filepath.Join(runs, e.Name()))
		}
	}
	return out
}

// tempFilesUnder lists atomicfile's temp files anywhere under dir.
func tempFilesUnder(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if strings.Contains(d.Name(), ".tmp-") || strings.HasSuffix(d.Name(), ".tmp") {
			out = append(out, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// startOfNextSecond waits for the clock to turn to a new second, so that
// what is started right after starts within one second.
func startOfNextSecond() {
	now := time.Now()
	time.Sleep(now.Truncate(time.Second).Add(time.Second + 10*time.Millisecond).Sub(now))
}

// Two runs of one step in one workspace, started in the same second: one is
// refused with the holder's pid and run dir before it starts a harness,
// leaving no run dir behind, and the workspace's records are the other's
// alone: its own run dir, its manifest with its task, the task file, and
// runs/latest.
func TestSameStepSameSecondOneRefused(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	var once sync.Once
	free := func() { once.Do(func() { close(release) }) }
	t.Cleanup(free)
	// The winner's first turn waits until the loser has been refused, so
	// the two surely overlap.
	srv := startServer(t, func(r *scriptedapi.Request) scriptedapi.Reply {
		if r.Kind != scriptedapi.KindMain {
			return scriptedapi.Harmless(r)
		}
		<-release
		return done(20_000)
	})
	ws := t.TempDir()
	env := harnessEnv(t, srv, "FLOWER_HARNESS="+harnessPath(t))
	tasks := []string{"TASK-SAME-A: port the parser", "TASK-SAME-B: port the lexer"}
	startOfNextSecond()
	procs := []*flowerProc{
		startFlower(t, env, "-C", ws, "--window", "200000", tasks[0], "--", "--allowedTools", "Bash"),
		startFlower(t, env, "-C", ws, "--window", "200000", tasks[1], "--", "--allowedTools", "Bash"),
	}
	loser := -1
	select {
	case <-procs[0].exited:
		loser = 0
	case <-procs[1].exited:
		loser = 1
	case <-time.After(waitLimit):
		t.Fatalf("neither flower was refused within %v", waitLimit)
	}
	winner := 1 - loser
	free()
	if code := procs[winner].wait(3 * time.Minute); code != 0 {
		t.Fatalf("the holder exited %d:\n%s", code, procs[winner].output())
	}
	dirs := runDirsOf(t, ws)
	if len(dirs) != 1 {
		t.Fatalf("run dirs %v, want the holder's alone", dirs)
	}
	out := flat(procs[loser].output())
	for _, want := range []string{"is being run by", fmt.Sprintf("flower pid %d", procs[winner].cmd.Process.Pid), "run dir " + dirs[0]} {
		if !strings.Contains(out, want) {
			t.Errorf("the refused flower's message lacks %q:\n%s", want, out)
		}
	}
	if code := exitCode(procs[loser].err); code != 1 {
		t.Errorf("the refused flower exited %d, want 1", code)
	}
	m, err := manifest.Load(manifest.Path(dirs[0]))
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Steps) != 1 || m.Steps[0].Task != tasks[winner] || m.Steps[0].Status != manifest.StatusSucceeded || len(m.Steps[0].Generations) != 1 {
		t.Errorf("the manifest holds %+v, want the holder's step alone", m.Steps)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, ".flower", "notes", "任务-main.md")); string(b) != tasks[winner] {
		t.Errorf("the task file holds %q, want the holder's task", b)
	}
	if latest, err := filepath.EvalSymlinks(filepath.Join(ws, ".flower", "runs", "latest")); err != nil || latest != dirs[0] {
		t.Errorf("runs/latest is %q (%v), want %s", latest, err, dirs[0])
	}
	for _, r := range srv.Requests() {
		if strings.Contains(r.AllText, tasks[loser]) {
			t.Errorf("request %d carries the refused run's task", r.Seq)
		}
	}
}

// perSession counts each session's working requests: its first gets
// 1.
type perSession struct {
	mu sync.Mutex
	n  map[string]int
}

func (p *perSession) next(r *scriptedapi.Request) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.n == nil {
		p.n = map[string]int{}
	}
	p.n[r.SessionID]++
	return p.n[r.SessionID]
}

// twoStepScript plays a model for several steps at once: each request is
// told apart by its step's task mark in the conversation. The first
// generation works up to the threshold, writes a handoff naming its step,
// and the successor finishes.
func twoStepScript(marks ...string) scriptedapi.Script {
	var count perSession
	return func(r *scriptedapi.Request) scriptedapi.Reply {
		if r.Kind != scriptedapi.KindMain {
			return scriptedapi.Harmless(r)
		}
		mark := "?"
		for _, m := range marks {
			if strings.Contains(r.AllText, "TASK-TWO-"+m) {
				mark = m
			}
		}
		switch {
		case strings.Contains(r.LastUserText, handoffwriter.PromptTag):
			return scriptedapi.Reply{Usage: usage(156_000), Text: fmt.Sprintf(`## 现在在做 (doing)
Step %[1]s was porting its part DOING-MARK-%[1]s.

## 已定的事 (decided)
- Keep business sources untouched.

## 下一步 (next)
Finish step %[1]s NEXT-MARK-%[1]s.
`, mark)}
		case strings.Contains(r.AllText, "You are taking over"):
			return done(20_000)
		case count.next(r) == 1:
			return bash(100_000, "echo one-"+mark)
		default:
			return bash(155_000, "echo two-"+mark)
		}
	}
}

// Two steps of one workspace, started at once: both run side by side and
// succeed, each in a run dir of its own, each handing off once, and each
// successor's first prompt carries its own step's task and handoff, not the
// other's.
func TestTwoStepsAtOnceEachCarriesItsTask(t *testing.T) {
	t.Parallel()
	srv := startServer(t, twoStepScript("A", "B"))
	ws := t.TempDir()
	env := harnessEnv(t, srv, "FLOWER_HARNESS="+harnessPath(t))
	steps := []string{"a", "b"}
	tasks := []string{"TASK-TWO-A: build the shim\nDone when make passes.\n", "TASK-TWO-B: write the docs\nDone when they build.\n"}
	marks := []string{"A", "B"}
	var procs []*flowerProc
	for i := range steps {
		procs = append(procs, startFlower(t, env, "-C", ws, "--step", steps[i], "--window", "200000", tasks[i], "--", "--allowedTools", "Bash"))
	}
	for i, f := range procs {
		if code := f.wait(3 * time.Minute); code != 0 {
			t.Fatalf("step %s exited %d:\n%s", steps[i], code, f.output())
		}
	}
	dirs := runDirsOf(t, ws)
	if len(dirs) != 2 {
		t.Fatalf("run dirs %v, want one per step", dirs)
	}
	seen := map[string]bool{}
	for _, d := range dirs {
		m, err := manifest.Load(manifest.Path(d))
		if err != nil {
			t.Fatal(err)
		}
		if len(m.Steps) != 1 {
			t.Fatalf("%s holds %d steps, want one", d, len(m.Steps))
		}
		st := m.Steps[0]
		seen[st.Name] = true
		if st.Status != manifest.StatusSucceeded || len(st.Generations) != 2 || st.Generations[0].Handoff == nil {
			t.Errorf("step %s: status %s, %d generations", st.Name, st.Status, len(st.Generations))
		}
	}
	if !seen["a"] || !seen["b"] {
		t.Errorf("steps %v, want a and b", seen)
	}
	for i, step := range steps {
		other := 1 - i
		var firsts []scriptedapi.Request
		for _, r := range srv.Requests() {
			if r.Kind == scriptedapi.KindMain && strings.Contains(r.LastUserText, "You are taking over") &&
				strings.Contains(r.LastUserText, "DOING-MARK-"+marks[i]) {
				firsts = append(firsts, r)
			}
		}
		if len(firsts) != 1 {
			t.Errorf("step %s: %d successor first prompts, want 1 (one handoff)", step, len(firsts))
			continue
		}
		text := firsts[0].LastUserText
		if !strings.Contains(text, handoffwriter.TaskBegin+"\n"+tasks[i]+handoffwriter.TaskEnd) {
			t.Errorf("step %s's successor does not carry its own task verbatim:\n%s", step, text)
		}
		if strings.Contains(firsts[0].AllText, "TASK-TWO-"+marks[other]) || strings.Contains(text, "DOING-MARK-"+marks[other]) {
			t.Errorf("step %s's successor carries step %s's task or handoff", step, steps[other])
		}
		notes, err := os.ReadFile(filepath.Join(ws, ".flower", "notes", "交接-"+step+".md"))
		if err != nil || !strings.Contains(string(notes), "DOING-MARK-"+marks[i]) {
			t.Errorf("notes/交接-%s.md: %v\n%s", step, err, notes)
		}
		if b, _ := os.ReadFile(filepath.Join(ws, ".flower", "notes", "任务-"+step+".md")); string(b) != tasks[i] {
			t.Errorf("notes/任务-%s.md holds %q", step, b)
		}
	}
}

// smallDisk mounts a tmpfs of size bytes at a new directory and unmounts it
// in Cleanup. Mounting needs root (CI runs as root); elsewhere the test is
// skipped, and says it did not pass.
func smallDisk(t *testing.T, size string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("SKIPPED, not passed: a full disk needs a tmpfs of its own, and mounting one needs root")
	}
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size, "tmpfs", dir).CombinedOutput(); err != nil {
		t.Fatalf("mount a tmpfs at %s: %v: %s", dir, err, out)
	}
	t.Cleanup(func() {
		// A harness on its way out may still have its cwd there for a
		// moment: wait for the mount to be free, then detach it anyway.
		deadline := time.Now().Add(waitLimit)
		for {
			out, err := exec.Command("umount", dir).CombinedOutput()
			if err == nil {
				return
			}
			if time.Now().After(deadline) {
				t.Logf("umount %s: %v: %s; detaching it", dir, err, out)
				if out, err := exec.Command("umount", "-l", dir).CombinedOutput(); err != nil {
					t.Errorf("umount -l %s: %v: %s", dir, err, out)
				}
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
	})
	return dir
}

// cliResult is a flower run's exit code and its two streams, apart.
type cliResult struct {
	code           int
	stdout, stderr string
}

// runFlowerApart runs flower to its end with stdout and stderr kept apart.
func runFlowerApart(t *testing.T, env []string, args ...string) cliResult {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(flowerBinary(t), args...)
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-time.After(3 * time.Minute):
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
		t.Fatalf("flower %v still running after 3 minutes:\n%s\n%s", args, stdout.String(), stderr.String())
	}
	// Whatever flower left (a harness, its tools) goes too: the tmpfs is
	// unmounted after the test.
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	return cliResult{code: exitCode(err), stdout: stdout.String(), stderr: stderr.String()}
}

// The workspace's disk fills up in the middle of a run (the successor's
// tool fills it, on a tmpfs of 4 MB; the harness's HOME is elsewhere): the
// step's work goes on, but flower says on stderr that it cannot save the
// manifest and exits non-zero with the reason instead of "succeeded",
// leaving no temp file. Once space returns, flower continue picks up the
// step from what was saved (the successor that took over from the
// handoff) and finishes it.
func TestFullDiskIsLoudAndContinueRecovers(t *testing.T) {
	t.Parallel()
	ws := smallDisk(t, "4m")
	var mu sync.Mutex
	var count perSession
	filled := false
	srv := startServer(t, func(r *scriptedapi.Request) scriptedapi.Reply {
		if r.Kind != scriptedapi.KindMain {
			return scriptedapi.Harmless(r)
		}
		mu.Lock()
		defer mu.Unlock()
		switch {
		case strings.Contains(r.LastUserText, handoffwriter.PromptTag):
			return goodHandoff(0)
		case strings.Contains(r.LastUserText, supervisor.ContinueMessage):
			return done(62_000)
		case strings.Contains(r.AllText, "You are taking over") && !filled:
			filled = true
			return bash(60_000, "head -c 64M /dev/zero > fill.bin; df -k .")
		case strings.Contains(r.AllText, "You are taking over"):
			return done(61_000)
		case count.next(r) == 1:
			return bash(100_000, "echo one")
		default:
			return bash(155_000, "echo two")
		}
	})
	env := harnessEnv(t, srv, "FLOWER_HARNESS="+harnessPath(t))
	full := runFlowerApart(t, env, "-C", ws, "--window", "200000", "TASK-FULL-MARK: port the parser", "--", "--allowedTools", "Bash")
	if full.code != 1 {
		t.Fatalf("flower exited %d on a full disk, want 1:\nstdout:\n%s\nstderr:\n%s", full.code, full.stdout, full.stderr)
	}
	for _, want := range []string{"cannot save the manifest", "no space left on device", "records are not all saved", `step "main" succeeded (records not saved) ·`} {
		if !strings.Contains(full.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, full.stderr)
		}
	}
	if strings.Contains(full.stderr, `step "main" succeeded ·`) {
		t.Errorf("stderr sums the step up as a plain success:\n%s", full.stderr)
	}
	if !filled {
		t.Fatal("premise: the successor's tool never filled the disk")
	}
	if left := tempFilesUnder(t, filepath.Join(ws, ".flower")); len(left) > 0 {
		t.Errorf("temp files left on the full disk: %v", left)
	}
	runDir, err := filepath.EvalSymlinks(filepath.Join(ws, ".flower", "runs", "latest"))
	if err != nil {
		t.Fatal(err)
	}
	// What was saved before the disk filled is whole: the handoff file and
	// a manifest that records it, still running.
	st := loadStep(t, runDir, "main")
	if st.Status != manifest.StatusRunning || len(st.Generations) < 2 || st.Generations[0].Handoff == nil {
		t.Fatalf("the saved manifest: status %s, %d generations", st.Status, len(st.Generations))
	}
	notes, err := os.ReadFile(filepath.Join(ws, ".flower", "notes", "交接-main.md"))
	if err != nil || sha(string(notes)) != st.Generations[0].Handoff.SHA256Written {
		t.Fatalf("the handoff file (%v) is not the one the manifest recorded", err)
	}

	if err := os.Remove(filepath.Join(ws, "fill.bin")); err != nil {
		t.Fatal(err)
	}
	seq := len(srv.Requests())
	cont := runFlowerApart(t, env, "continue", "-C", ws, "--", "--allowedTools", "Bash")
	if cont.code != 0 {
		t.Fatalf("flower continue exited %d once space returned:\nstdout:\n%s\nstderr:\n%s", cont.code, cont.stdout, cont.stderr)
	}
	first := firstMainAfter(srv, seq)
	if !strings.Contains(first.AllText, "DOING-MARK-1") {
		t.Errorf("the continued step does not go on from the handoff:\n%.2000s", first.AllText)
	}
	st = loadStep(t, runDir, "main")
	if st.Status != manifest.StatusSucceeded || st.Generations[0].Handoff == nil {
		t.Errorf("after continue: status %s, errors %q", st.Status, st.Errors)
	}
	if left := tempFilesUnder(t, filepath.Join(ws, ".flower")); len(left) > 0 {
		t.Errorf("temp files left: %v", left)
	}
	for _, p := range []string{manifest.Path(runDir), filepath.Join(runDir, "flower.log")} {
		if fi, err := os.Stat(p); err != nil || fi.Mode().Perm()&0o077 != 0 {
			t.Errorf("%s: mode %v (%v), want private to the user", p, fi.Mode().Perm(), err)
		}
	}
}
