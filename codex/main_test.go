package codex_test

import (
	"flag"
	"os"
	"testing"

	"github.com/flowerhq/flower/levers"
)

// TestMain lets the test binary be flower's PreCompact hook (`flower hook
// precompact --inbox DIR --codex`, which the engine names through
// Options.HookBinary), and keeps every trust store in a temporary state
// dir, never the person's.
func TestMain(m *testing.M) {
	if len(os.Args) > 2 && os.Args[1] == "hook" && os.Args[2] == "precompact" {
		fs := flag.NewFlagSet("hook", flag.ExitOnError)
		inbox := fs.String("inbox", "", "")
		codex := fs.Bool("codex", false, "")
		_ = fs.Parse(os.Args[3:])
		answer := levers.BlockDecision()
		if *codex {
			answer = levers.StopDecision()
		}
		if err := levers.RunHookAnswering(os.Stdin, os.Stdout, *inbox, answer); err != nil {
			os.Exit(1)
		}
		os.Exit(0)
	}
	state, err := os.MkdirTemp("", "flower-state-")
	if err != nil {
		panic(err)
	}
	os.Setenv("XDG_STATE_HOME", state)
	code := m.Run()
	os.RemoveAll(state)
	os.Exit(code)
}
