package gemini_test

import (
	"os"
	"testing"

	"github.com/flowerhq/flower/harness/harnesstest"
)

// TestMain keeps every trust store apart.
func TestMain(m *testing.M) {
	harnesstest.Main()
	removeState := harnesstest.PrivateState()
	code := m.Run()
	removeState()
	os.Exit(code)
}
