package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
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
