package supervisor

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/flowerhq/flower/harness/harnesstest"
	"github.com/flowerhq/flower/manifest"
)

// errorNotices are the notices said as errors.
func (b *bench) errorNotices() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []string
	for _, ev := range b.events {
		if ev.Kind == KindNotice && ev.IsError {
			out = append(out, ev.Text)
		}
	}
	return out
}

// tempFiles lists atomicfile's temp files left in dir.
func tempFiles(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if strings.Contains(e.Name(), ".tmp-") {
			out = append(out, e.Name())
		}
	}
	return out
}

// One step, one owner (DESIGN.md «One step, one owner»): a second run of a
// step in the same workspace, from a run dir of its own, is refused with
// the holder's pid and run dir before any harness starts, since both would
// write the step's notes files; another step of that workspace runs beside
// it, and the step is free again once the holder ends.
func TestStepOwnedAcrossRunDirs(t *testing.T) {
	b := newBench(t, harnesstest.ModeHangTurn, harnesstest.EnvFaultyStarts+"=1")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := b.runtime(Options{}).RunStep(ctx, "s", "task")
		done <- err
	}()
	taskFile := filepath.Join(b.workspace, ".flower", "notes", "任务-s.md")
	waitFor(t, "the first run to start its harness and freeze its task", func() bool {
		task, _ := os.ReadFile(taskFile)
		return len(b.starts()) == 1 && string(task) == "task"
	})
	other := filepath.Join(b.workspace, ".flower", "runs", "other")
	_, err := b.runtime(Options{RunDir: other}).RunStep(context.Background(), "s", "the other task")
	var busy *BusyError
	if !errors.As(err, &busy) || busy.PID != os.Getpid() || busy.RunDir != b.runDir || busy.Workspace != b.workspace {
		t.Fatalf("second run: %v, want a BusyError naming pid %d and run dir %s", err, os.Getpid(), b.runDir)
	}
	for _, want := range []string{fmt.Sprintf("pid %d", os.Getpid()), "run dir " + b.runDir, "of workspace " + b.workspace, "--run-dir " + b.runDir} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("refusal %q lacks %q", err, want)
		}
	}
	if n := len(b.starts()); n != 1 {
		t.Errorf("%d harness starts, want 1", n)
	}
	if task, _ := os.ReadFile(taskFile); string(task) != "task" {
		t.Errorf("the step's task file holds %q: the refused run touched it", task)
	}
	// Hold refuses the same way, and holds nothing after a refusal.
	rt := b.runtime(Options{RunDir: other})
	if err := rt.Hold("s"); !errors.As(err, &busy) {
		t.Errorf("Hold: %v, want a BusyError", err)
	}
	if err := rt.Hold("t"); err != nil {
		t.Fatalf("Hold of another step: %v", err)
	}
	if _, err := rt.RunStep(context.Background(), "t", "task of t"); err != nil {
		t.Errorf("another step of the workspace, beside the first: %v", err)
	}
	cancel()
	<-done
	if _, err := b.runtime(Options{RunDir: other}).RunStep(context.Background(), "s", "the other task"); err != nil {
		t.Errorf("the step once its holder ended: %v", err)
	}
}

// A lock file that is a link is refused with its path, not followed.
func TestLockFileLinkRefused(t *testing.T) {
	b := newBench(t, harnesstest.ModeStream)
	rt := b.runtime(Options{})
	victim := filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(victim, []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	lock := rt.wb.LockPath("s")
	if err := os.Symlink(victim, lock); err != nil {
		t.Fatal(err)
	}
	_, err := rt.RunStep(context.Background(), "s", "task")
	if err == nil || !strings.Contains(err.Error(), lock) {
		t.Errorf("RunStep: %v, want a refusal naming %s", err, lock)
	}
	if got, _ := os.ReadFile(victim); string(got) != "keep" {
		t.Errorf("the link's target now holds %q", got)
	}
	if n := len(b.starts()); n != 0 {
		t.Errorf("%d harness starts", n)
	}
}

// Durable or loud (DESIGN.md «Durable or loud»): a manifest that cannot be
// saved at all (its name is taken by a directory, as good as a full disk
// for atomicfile's rename) does not stop the work, is said once as an error
// notice, leaves no temp file, and ends the step with a *NotSavedError
// although the work succeeded.
func TestManifestSaveFailureEndsStepNonZero(t *testing.T) {
	b := newBench(t, harnesstest.ModeStream, harnesstest.EnvContext+"=155000")
	rt := b.runtime(Options{})
	if err := os.MkdirAll(filepath.Join(manifest.Path(b.runDir), "in-the-way"), 0o755); err != nil {
		t.Fatal(err)
	}
	st, err := rt.RunStep(context.Background(), "s", "task")
	var ns *NotSavedError
	if !errors.As(err, &ns) || ns.Status != manifest.StatusSucceeded || !strings.Contains(err.Error(), manifest.Path(b.runDir)) {
		t.Fatalf("RunStep: %v, want a NotSavedError of a succeeded step naming the manifest", err)
	}
	if len(st.Generations) != 2 {
		t.Errorf("%d generations: the work did not go on", len(st.Generations))
	}
	said := b.errorNotices()
	if n := len(slices.DeleteFunc(said, func(n string) bool { return !strings.Contains(n, "cannot save the manifest") })); n != 1 {
		t.Errorf("the failure was said %d times, want once: %q", n, b.errorNotices())
	}
	if left := tempFiles(t, b.runDir); len(left) > 0 {
		t.Errorf("temp files left: %v", left)
	}
}

// A save that fails and a later one that succeeds: the later one writes
// everything, the failure is in the record, the recovery is said, and the
// step ends as it would have.
func TestManifestSavedAgainEndsStepAsItWas(t *testing.T) {
	b := newBench(t, harnesstest.ModeStream, harnesstest.EnvContext+"=155000")
	inTheWay := manifest.Path(b.runDir)
	rt := b.runtime(Options{AfterFreeze: func(string) {
		if err := os.RemoveAll(inTheWay); err != nil {
			t.Error(err)
		}
	}})
	if err := os.MkdirAll(filepath.Join(inTheWay, "in-the-way"), 0o755); err != nil {
		t.Fatal(err)
	}
	st, err := rt.RunStep(context.Background(), "s", "task")
	if err != nil || st.Status != manifest.StatusSucceeded {
		t.Fatalf("RunStep: %v, status %s", err, st.Status)
	}
	if !slices.ContainsFunc(b.notices(), func(n string) bool { return strings.Contains(n, "saved again") }) {
		t.Errorf("the recovery was not said: %q", b.notices())
	}
	disk := b.onDisk("s")
	if disk.Status != manifest.StatusSucceeded || !hasError(disk, "save manifest:") {
		t.Errorf("on disk: status %s, errors %q", disk.Status, disk.Errors)
	}
	fi, err := os.Stat(manifest.Path(b.runDir))
	if err != nil || fi.Mode().Perm()&0o077 != 0 {
		t.Errorf("manifest mode %v (%v), want private to the user", fi.Mode().Perm(), err)
	}
}
