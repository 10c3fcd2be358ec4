package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/flowerhq/flower/manifest"
	"github.com/flowerhq/flower/scriptedapi"
	"github.com/flowerhq/flower/supervisor"
	"github.com/flowerhq/flower/workbench"
)

// flower stop stops a step the real harness is running (a tool call in
// flight): its flower exits 130 at the message boundary, the step is
// recorded interrupted with its session live, stop prints the continue
// line, and a second stop finds nothing to stop.
func TestStopRunningStep(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	started := filepath.Join(ws, "started")
	srv, err := scriptedapi.Start(func(r *scriptedapi.Request) scriptedapi.Reply {
		if r.Kind != scriptedapi.KindMain {
			return scriptedapi.Harmless(r)
		}
		if !strings.Contains(r.LastUserText, "long job") {
			return scriptedapi.Reply{Usage: scriptedapi.Usage{InputTokens: 1000}, Text: "Done."}
		}
		return scriptedapi.Reply{Usage: scriptedapi.Usage{InputTokens: 1000}, Text: "Running it.", ToolUses: []scriptedapi.ToolUse{{Name: "Bash",
			Input: map[string]any{"command": "touch " + started + " && sleep 120", "description": "the long job"}}}}
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	cmd := exec.Command(flowerBinary(t), "-q", "-C", ws, "run the long job", "--", "--allowedTools", "Bash")
	cmd.Env = cliEnv(t, srv, "FLOWER_PS_DIR="+t.TempDir())
	var flowerErr strings.Builder
	cmd.Stderr = &flowerErr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if _, err := os.Stat(started); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the tool call never started\n%s", flowerErr.String())
		}
	}
	owner, running := supervisor.StepOwner(ws, "", "main")
	if !running || owner.PID != cmd.Process.Pid {
		t.Fatalf("step owner %+v (running %v), want pid %d", owner, running, cmd.Process.Pid)
	}
	var stdout, stderr strings.Builder
	start := time.Now()
	if err := run(context.Background(), []string{"flower", "stop", "-C", ws}, strings.NewReader(""), &stdout, &stderr); err != nil {
		t.Fatalf("flower stop: %v\n%s", err, stderr.String())
	}
	took := time.Since(start)
	err = cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != exitInterrupted {
		t.Errorf("the stopped flower exited %v, want %d\n%s", err, exitInterrupted, flowerErr.String())
	}
	if strings.Contains(flowerErr.String(), "context canceled") || !strings.Contains(flowerErr.String(), "step main interrupted: by SIGTERM (flower stop, or kill)") {
		t.Errorf("the stopped flower said:\n%s", flowerErr.String())
	}
	m, err := manifest.LoadBound(owner.RunDir)
	if err != nil {
		t.Fatal(err)
	}
	st := m.Step("main")
	if st == nil || st.Status != manifest.StatusInterrupted || st.SessionID == "" {
		t.Fatalf("step after stop: %+v", st)
	}
	for _, want := range []string{"stopped (interrupted)", "flower continue --run-dir " + owner.RunDir + " --step main", st.SessionID} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stop said %q, lacking %q", stderr.String(), want)
		}
	}
	t.Logf("flower stop took %v", took)
	for _, args := range [][]string{{"-C", ws}, {"--run-dir", owner.RunDir}} {
		err = run(context.Background(), append([]string{"flower", "stop"}, args...), strings.NewReader(""), &stdout, &stderr)
		if code := exitCode(err); code != exitFailed || !strings.Contains(err.Error(), "not running") {
			t.Errorf("a second stop %v: exit %d (%v), want %d and not running", args, code, err, exitFailed)
		}
	}
}

// A lock file that names a process which does not hold the lock (here a
// sleep, the lock held by this test) gets no signal from flower stop.
func TestStopSignalsOnlyTheLockHolder(t *testing.T) {
	ws := t.TempDir()
	sleeper := exec.Command("sleep", "60")
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sleeper.Process.Kill(); _ = sleeper.Wait() })
	path := (&workbench.Workbench{Dir: workbench.DirOf(ws)}).LockPath("main")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(f, "%d\n%s\n", sleeper.Process.Pid, filepath.Join(ws, "run"))
	var stdout, stderr strings.Builder
	err = run(context.Background(), []string{"flower", "stop", "-C", ws}, strings.NewReader(""), &stdout, &stderr)
	if code := exitCode(err); code != exitFailed || !strings.Contains(err.Error(), "does not hold it") {
		t.Errorf("exit %d (%v), want %d and does not hold it", code, err, exitFailed)
	}
	// A signalled sleep is a zombie until waited for (or stopped); one
	// still starting up is running, not yet sleeping, on a busy machine.
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", sleeper.Process.Pid))
	if _, state, _ := strings.Cut(string(b), ") "); err != nil || !strings.ContainsAny(state[:1], "RSD") {
		t.Errorf("the sleep was signalled: state %q, %v", state, err)
	}
}
