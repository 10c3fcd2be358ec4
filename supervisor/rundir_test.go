package supervisor

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"testing/synctest"
)

// A step holds its run dir open for its manifest's saves while it runs,
// and lets it go when it ends, however it ends: no descriptor of the run
// dir is left behind.
func TestRunDirHeldWhileTheStepRuns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		defer memWatchdog().Stop()
		r := newMemRun(t, memTwoGens, memHandoff)
		held := -1
		rt := r.runtime(Options{Handoff: window(200_000), AfterFreeze: func(string) { held = openDescriptors(t, r.runDir) }})
		if _, err := rt.RunStep(t.Context(), memStep, memTask); err != nil {
			t.Fatalf("RunStep: %v", err)
		}
		if held != 1 {
			t.Errorf("while the step ran, %d descriptors held the run dir, want 1", held)
		}
		if n := openDescriptors(t, r.runDir); n != 0 {
			t.Errorf("after the step, %d descriptors hold the run dir", n)
		}
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		if _, err := rt.RunStep(ctx, memStep, memTask); err == nil {
			t.Fatal("a step on a context cancelled before it began succeeded")
		}
		if n := openDescriptors(t, r.runDir); n != 0 {
			t.Errorf("after a step that failed, %d descriptors hold the run dir", n)
		}
	})
}

// openDescriptors counts this process's descriptors open on dir.
func openDescriptors(t *testing.T, dir string) int {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	n := 0
	for _, fd := range fds {
		if target, err := os.Readlink(filepath.Join("/proc/self/fd", fd.Name())); err == nil && target == dir {
			n++
		}
	}
	return n
}
