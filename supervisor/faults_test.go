package supervisor

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flowerhq/flower/handoffwriter"
	"github.com/flowerhq/flower/harness/harnesstest"
	"github.com/flowerhq/flower/manifest"
)

// A harness that misbehaves: each fault is recorded in the manifest's
// errors, a failed attempt is retried (resuming the session when it has
// one) and counted up to the limit, nothing panics, and no handoff is lost.
func TestHarnessFaults(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mode   string
		faulty string // starts that misbehave; "" all
		opts   Options
		extra  []string

		status   string
		attempts int
		errs     []string // substrings of the manifest's errors
		resumed  bool     // the retry resumed the first session
		handoff  bool     // a degraded handoff was written and reached the successor
	}{
		{name: "crash mid-line, then recovers", mode: harnesstest.ModeCrashMidLine, faulty: "1",
			status: manifest.StatusSucceeded, attempts: 1, resumed: true,
			errs: []string{"attempt 1: the harness exited before the turn ended (exit status 3)", "not JSON or too long"}},
		{name: "crash mid-line every time", mode: harnesstest.ModeCrashMidLine,
			status: manifest.StatusFailed, attempts: 3,
			errs: []string{"attempt 1: ", "attempt 2: ", "attempt 3: the harness exited before the turn ended (exit status 3)"}},
		{name: "exit before init", mode: harnesstest.ModeExitEarly,
			status: manifest.StatusFailed, attempts: 3,
			errs: []string{"attempt 3: ", "refusing to start"}},
		{name: "exit before init, then recovers", mode: harnesstest.ModeExitEarly, faulty: "1,2",
			status: manifest.StatusSucceeded, attempts: 2, errs: []string{"attempt 2: ", "exit status 1"}},
		{name: "non-JSON lines and stderr noise", mode: harnesstest.ModeGarbage,
			status: manifest.StatusSucceeded, errs: []string{"line(s) that were not JSON or too long; they were skipped"}},
		{name: "50 MB line", mode: harnesstest.ModeHugeLine, status: manifest.StatusSucceeded},
		{name: "turn never ends", mode: harnesstest.ModeHangTurn, faulty: "1", opts: Options{TurnTimeout: 500 * time.Millisecond},
			status: manifest.StatusSucceeded, attempts: 1, resumed: true, errs: []string{"attempt 1: turn exceeded the turn timeout of 500ms"}},
		{name: "turn never ends, every time", mode: harnesstest.ModeHangTurn, opts: Options{TurnTimeout: 300 * time.Millisecond, MaxAttempts: 2},
			status: manifest.StatusFailed, attempts: 2, errs: []string{"attempt 2: turn exceeded the turn timeout"}},
		{name: "interrupt at the cut ignored", mode: harnesstest.ModeHangAfter, faulty: "1", opts: Options{CutTimeout: 500 * time.Millisecond},
			extra: []string{harnesstest.EnvContext + "=155000"}, status: manifest.StatusSucceeded, handoff: true,
			errs: []string{"交接降级(the harness did not end the turn within 500ms of the interrupt)"}},
		{name: "crash in the writing turn", mode: harnesstest.ModeCrashWriting, faulty: "1",
			extra: []string{harnesstest.EnvContext + "=155000"}, status: manifest.StatusSucceeded, handoff: true,
			errs: []string{"交接降级(the harness exited before the turn ended (exit status 3)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			extra := tc.extra
			if tc.faulty != "" {
				extra = append(extra, harnesstest.EnvFaultyStarts+"="+tc.faulty)
			}
			b := newBench(t, tc.mode, extra...)
			st, err := b.runtime(tc.opts).RunStep(context.Background(), "s", "TASK-MARK")
			if (tc.status == manifest.StatusSucceeded) != (err == nil) {
				t.Fatalf("RunStep: %v (errors %q)", err, st.Errors)
			}
			if tc.status == manifest.StatusFailed && !errors.Is(err, ErrStepFailed) {
				t.Errorf("err %v, want ErrStepFailed", err)
			}
			disk := b.onDisk("s")
			if disk.Status != tc.status || disk.Attempts != tc.attempts {
				t.Errorf("status %s attempts %d, want %s %d (errors %q)", disk.Status, disk.Attempts, tc.status, tc.attempts, disk.Errors)
			}
			for _, e := range tc.errs {
				if !hasError(disk, e) {
					t.Errorf("errors lack %q: %q", e, disk.Errors)
				}
			}
			starts := b.starts()
			if want := 1 + tc.attempts; !tc.handoff && tc.status == manifest.StatusSucceeded && len(starts) != want {
				t.Errorf("%d starts, want %d", len(starts), want)
			}
			if tc.resumed {
				first := disk.Generations[0].SessionID
				if len(starts) < 2 || resumeOf(starts[1]) != first || first == "" {
					t.Errorf("the retry did not resume session %q: %+v", first, starts)
				}
			}
			if tc.handoff {
				h := disk.Generations[0].Handoff
				if len(disk.Generations) != 2 || h == nil || !h.Degraded || h.Path == "" {
					t.Fatalf("want a degraded handoff to generation 2: %d generations, %+v", len(disk.Generations), h)
				}
				f, _ := os.ReadFile(h.Path)
				p := b.firstPrompts()[len(starts)-1]
				for _, want := range []string{handoffwriter.DegradedMarker, "TASK-MARK"} {
					if !strings.Contains(string(f), want) || !strings.Contains(p, want) {
						t.Errorf("%q missing from the handoff file or the successor's prompt", want)
					}
				}
			}
			for _, g := range disk.Generations {
				if g.SessionID != "" && !goneWithin(pidOfSession(g.SessionID), time.Second) {
					t.Errorf("the harness of generation %d is still running", g.N)
				}
			}
		})
	}
}

// goneWithin reports whether the process group is gone within d: the
// SIGKILL that ends it is sent before Done, dying takes a moment, and the
// end of a group is no event anyone can wait on: it is polled.
func goneWithin(pgid int, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for harnesstest.GroupAlive(pgid) {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
	return true
}

// pidOfSession reads the fake's pid from its session id ("fake-PID").
func pidOfSession(id string) int {
	var pid int
	if _, err := fmt.Sscanf(id, "fake-%d", &pid); err != nil {
		return -1
	}
	return pid
}

// A cancelled step whose harness ignores the interrupt and SIGINT still
// ends, interrupted, with the harness's whole group (a grandchild that
// ignores SIGINT too) gone, within the bound.
func TestInterruptIgnoredIsBounded(t *testing.T) {
	b := newBench(t, harnesstest.ModeHangTurn, harnesstest.EnvGrandchild+"=1")
	rt := b.runtime(Options{Grace: 500 * time.Millisecond})
	start := time.Now()
	st, err := b.runUntilHung(rt, "s", "task", 1)
	took := time.Since(start)
	if !errors.Is(err, context.Canceled) || st.Status != manifest.StatusInterrupted {
		t.Fatalf("RunStep: %v, status %s", err, st.Status)
	}
	pid := pidOfSession(st.SessionID)
	if pid <= 0 {
		t.Fatalf("session %q", st.SessionID)
	}
	if !goneWithin(pid, time.Second) {
		t.Errorf("group %d alive after RunStep returned: %v", pid, harnesstest.GroupMembers(pid))
	}
	t.Logf("cancel to return, with the run: %v", took)
	if !hasError(b.onDisk("s"), "interrupted: context canceled") {
		t.Errorf("errors %q", st.Errors)
	}
}

// One run per step: a second Runtime on the same run dir and step is
// refused with the holder's pid, before any harness starts; another step
// is not held up.
func TestSecondRunOfStepRefused(t *testing.T) {
	b := newBench(t, harnesstest.ModeHangTurn, harnesstest.EnvFaultyStarts+"=1")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := b.runtime(Options{}).RunStep(ctx, "s", "task")
		done <- err
	}()
	waitFor(t, "the first run to start its harness and record its step", func() bool {
		// The harness starts before the step's first save (DESIGN.md «Warm successor»).
		m, err := manifest.Load(manifest.Path(b.runDir))
		return len(b.starts()) == 1 && err == nil && m.Step("s") != nil
	})
	_, err := b.runtime(Options{}).RunStep(context.Background(), "s", "task")
	var busy *BusyError
	if !errors.As(err, &busy) || !errors.Is(err, ErrStepBusy) || busy.PID != os.Getpid() ||
		!strings.Contains(err.Error(), fmt.Sprintf("pid %d", os.Getpid())) {
		t.Fatalf("second run: %v, want a BusyError naming pid %d", err, os.Getpid())
	}
	if _, err := b.runtime(Options{}).Continue(context.Background(), "s", ""); !errors.As(err, &busy) {
		t.Errorf("continue while running: %v", err)
	}
	if n := len(b.starts()); n != 1 {
		t.Errorf("%d harness starts, want 1", n)
	}
	if _, err := b.runtime(Options{}).RunStep(context.Background(), "other", "task"); err != nil {
		t.Errorf("another step in the same run dir: %v", err)
	}
	cancel()
	<-done
	// Released: the step runs again.
	if _, err := b.runtime(Options{}).Continue(context.Background(), "s", ""); err != nil {
		t.Errorf("continue after the first run ended: %v", err)
	}
}

// A lock left by a dead process is taken over, and said so.
func TestDeadHoldersLockTakenOver(t *testing.T) {
	b := newBench(t, harnesstest.ModeStream)
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	pid := dead.Process.Pid
	if err := os.MkdirAll(b.runDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(lockPath(b.runDir, "s"), []byte(fmt.Sprintf("%d\n", pid)), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := b.runtime(Options{}).RunStep(context.Background(), "s", "task"); err != nil {
		t.Fatalf("RunStep over a dead holder's lock: %v", err)
	}
	want := fmt.Sprintf("left by pid %d", pid)
	found := false
	for _, n := range b.notices() {
		found = found || strings.Contains(n, want)
	}
	if !found {
		t.Errorf("no notice %q: %q", want, b.notices())
	}
	if got, _ := os.ReadFile(lockPath(b.runDir, "s")); len(strings.TrimSpace(string(got))) != 0 {
		t.Errorf("a released lock still names %q", got)
	}
}

// The workbench cannot be made (it would be a folder in /proc, where
// nothing can be made, even by root): the handoff still reaches the
// successor through its prompt (DESIGN.md «No workbench»), and the manifest
// records why there is no file. (A file in the notes folder's place is not
// this case: it is refused, DESIGN.md «Territory».)
func TestUnwritableWorkbenchStillHandsOff(t *testing.T) {
	b := newBench(t, harnesstest.ModeStream, harnesstest.EnvContext+"=155000")
	st, err := b.runtime(Options{WorkbenchDir: "/proc/flower-test-no-workbench"}).RunStep(context.Background(), "s", "task")
	if err != nil || len(st.Generations) != 2 {
		t.Fatalf("RunStep: %v, %d generations", err, len(st.Generations))
	}
	if p := b.firstPrompts()[1]; !strings.Contains(p, harnesstest.HandoffMark) {
		t.Errorf("the successor's prompt lacks the handoff:\n%s", p)
	}
	if h := st.Generations[0].Handoff; h.Path != "" || h.Degraded {
		t.Errorf("handoff %+v", h)
	}
	if !hasError(b.onDisk("s"), "workbench unavailable") {
		t.Errorf("errors %q", st.Errors)
	}
}

// Writing the handoff file fails at the handoff (a stand-in for a full
// disk: its path is taken by a directory once the step runs, after the
// start's checks): the successor still gets the handoff through its
// prompt, and the failure is recorded, said as an error notice, and ends
// the step with a *NotSavedError although the work succeeded (DESIGN.md
// «Durable or loud»).
func TestHandoffWriteFailureStillHandsOff(t *testing.T) {
	b := newBench(t, harnesstest.ModeStream, harnesstest.EnvContext+"=155000")
	rt := b.runtime(Options{})
	var once sync.Once
	record := rt.opts.OnEvent
	rt.opts.OnEvent = func(ev Event) {
		once.Do(func() {
			if err := os.MkdirAll(b.handoffPath("s"), 0o755); err != nil {
				t.Error(err)
			}
		})
		record(ev)
	}
	st, err := rt.RunStep(context.Background(), "s", "task")
	var ns *NotSavedError
	if !errors.As(err, &ns) || !errors.Is(err, ErrNotSaved) || ns.Status != manifest.StatusSucceeded ||
		!strings.Contains(err.Error(), "handoff file") || !strings.Contains(err.Error(), b.handoffPath("s")) || len(st.Generations) != 2 {
		t.Fatalf("RunStep: %v, %d generations; want a NotSavedError naming the handoff file", err, len(st.Generations))
	}
	if !slices.ContainsFunc(b.errorNotices(), func(n string) bool { return strings.Contains(n, "cannot write the handoff file") }) {
		t.Errorf("no error notice of the failed write: %q", b.errorNotices())
	}
	if p := b.firstPrompts()[1]; !strings.Contains(p, harnesstest.HandoffMark) {
		t.Errorf("the successor's prompt lacks the handoff:\n%s", p)
	}
	if !hasError(b.onDisk("s"), "write handoff: freeze handoff:") {
		t.Errorf("errors %q", st.Errors)
	}
}

// An unwritable run dir (its path runs through a file) is a clear error
// from New, before any harness starts.
func TestUnwritableRunDirFailsFirst(t *testing.T) {
	b := newBench(t, harnesstest.ModeStream)
	file := filepath.Join(b.workspace, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := b.newRuntime(Options{RunDir: filepath.Join(file, "run")})
	if err == nil || !strings.Contains(err.Error(), filepath.Join(file, "run")) {
		t.Errorf("New: %v, want an error naming the run dir", err)
	}
	if n := len(b.starts()); n != 0 {
		t.Errorf("%d harness starts", n)
	}
}
