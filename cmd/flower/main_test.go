package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/flowerhq/flower/harness/harnesstest"
)

// TestMain lets the test binary be the fake harness: started with
// harnesstest's environment it runs the fake and exits before any test.
func TestMain(m *testing.M) {
	harnesstest.Main()
	if os.Getenv(envWatchParentHelper) != "" {
		watchParentHelper()
	}
	// Every flower these tests run, in process or built, keeps its trust
	// store here, never in the person's ~/.local/state (DESIGN.md «Trust
	// store»); a test that needs a store of its own sets XDG_STATE_HOME.
	state, err := os.MkdirTemp("", "flower-state-")
	if err != nil {
		panic(err)
	}
	os.Setenv("XDG_STATE_HOME", state)
	code := m.Run()
	os.RemoveAll(state)
	if builtBin != "" {
		os.RemoveAll(filepath.Dir(builtBin)) // the binary built once for the CLI tests
	}
	os.Exit(code)
}
