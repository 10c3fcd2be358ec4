package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/flowerhq/flower/harness"
	"github.com/flowerhq/flower/supervisor"
)

// flower never runs itself as the harness: the test binary stands in for
// flower (os.Executable), a symlink named claude to it for a PATH entry
// that resolves to flower.
func TestRelayHarnessIsNeverFlower(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := relayHarness(self, ""); err == nil || !strings.Contains(err.Error(), "flower itself") {
		t.Errorf("FLOWER_HARNESS=flower: err %v, want a refusal", err)
	}
	loop, real := t.TempDir(), t.TempDir()
	if err := os.Symlink(self, filepath.Join(loop, "claude")); err != nil {
		t.Fatal(err)
	}
	claude := filepath.Join(real, "claude")
	if err := os.WriteFile(claude, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	got, err := relayHarness("", loop+string(os.PathListSeparator)+real)
	if err != nil || got != claude {
		t.Errorf("PATH with flower named claude first: %s %v, want %s", got, err, claude)
	}
}

// The relay's FLOWER_* numbers have the flags' ranges: zero and negative
// are refused with the variable's name, before anything is made on disk.
func TestRelayRefusesNumbersOutOfRange(t *testing.T) {
	for _, kv := range []string{"FLOWER_WINDOW=0", "FLOWER_WINDOW=-5", "FLOWER_HEADROOM=0", "FLOWER_MAX_GENERATIONS=0", "FLOWER_HEADROOM=lots"} {
		ws := t.TempDir()
		t.Chdir(ws)
		err := runRelay(context.Background(), []string{"--output-format", "stream-json"}, proc{env: []string{kv}, stdin: strings.NewReader(""), stdout: io.Discard, stderr: io.Discard})
		key, _, _ := strings.Cut(kv, "=")
		if exitCode(err) != exitUsage || !strings.Contains(err.Error(), key) || !strings.Contains(err.Error(), "at least 1") {
			t.Errorf("%s: %v, want a usage error naming it", kv, err)
		}
		if _, err := os.Stat(filepath.Join(ws, ".flower")); err == nil {
			t.Errorf("%s: a workbench was made", kv)
		}
	}
}

// A relay whose step another run of the workspace owns is refused before
// any harness starts, names the holder, and leaves neither a run dir of its
// own nor a moved runs/latest (DESIGN.md «One step, one owner»).
func TestRelayRefusedWhenTheStepIsOwned(t *testing.T) {
	ws := t.TempDir()
	t.Chdir(ws)
	holderDir := filepath.Join(ws, ".flower", "runs", "holder")
	holder, err := supervisor.New(supervisor.Options{Front: harness.Headless{}, Workspace: ws, RunDir: holderDir, Workbench: true, HarnessPath: "/bin/true"})
	if err != nil {
		t.Fatal(err)
	}
	if err := holder.Hold("shared"); err != nil {
		t.Fatal(err)
	}
	// The lock's file is the holder's: unreferenced, its finalizer would
	// close it (and let the lock go) before the relay asks.
	defer runtime.KeepAlive(holder)
	if err := linkLatest(holderDir, filepath.Join(ws, ".flower")); err != nil {
		t.Fatal(err)
	}
	env := []string{"FLOWER_STEP=shared", "FLOWER_HARNESS=/bin/true", "PATH=" + os.Getenv("PATH")}
	err = runRelay(context.Background(), []string{"--output-format", "stream-json"}, proc{env: env, stdin: strings.NewReader(""), stdout: io.Discard, stderr: io.Discard})
	if err == nil || !strings.Contains(err.Error(), holderDir) {
		t.Fatalf("relay: %v, want a refusal naming the holder's run dir %s", err, holderDir)
	}
	runs, _ := os.ReadDir(filepath.Join(ws, ".flower", "runs"))
	for _, e := range runs {
		if e.IsDir() && e.Name() != "holder" {
			t.Errorf("the refused relay left run dir %s", e.Name())
		}
	}
	if target, err := os.Readlink(filepath.Join(ws, ".flower", "runs", "latest")); err != nil || target != "holder" {
		t.Errorf("runs/latest is %q (%v), want the holder's", target, err)
	}
}
