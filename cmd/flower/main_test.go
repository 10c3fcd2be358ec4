package main

import (
	"os"
	"testing"

	"github.com/flowerhq/flower/harness/harnesstest"
)

// TestMain lets the test binary be the fake harness: started with
// harnesstest's environment it runs the fake and exits before any test.
func TestMain(m *testing.M) {
	harnesstest.Main()
	os.Exit(m.Run())
}
