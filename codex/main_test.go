package codex_test

import (
	"os"
	"testing"

	"github.com/flowerhq/flower/harness/harnesstest"
)

// TestMain lets the test binary be flower's PreCompact hook (`flower hook
// precompact --inbox DIR --codex`, which the engine names through
// Options.HookBinary), and keeps every trust store apart.
func TestMain(m *testing.M) {
	harnesstest.Main()
	removeState := harnesstest.PrivateState()
	code := m.Run()
	removeState()
	os.Exit(code)
}
