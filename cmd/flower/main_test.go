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
	// store apart.
	removeState := harnesstest.PrivateState()
	code := m.Run()
	removeState()
	if builtBin != "" {
		os.RemoveAll(filepath.Dir(builtBin)) // the binary built once for the CLI tests
	}
	os.Exit(code)
}
