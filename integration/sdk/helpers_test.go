package sdk_test

import (
	"os"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/flowerhq/flower/integration/itest"
	"github.com/flowerhq/flower/scriptedapi"
)

// These tests have a package of their own, so that their minutes of real
// SDK, harness and node runs have a test binary and a timeout of their own.

// waitLimit bounds a wait for processes to go (a hang guard, not a timing
// assertion).
const waitLimit = 45 * time.Second

func TestMain(m *testing.M) {
	code := m.Run()
	flower.Remove()
	os.Exit(code)
}

// harnessPath finds the real harness, or skips under -short.
func harnessPath(t *testing.T) string { return itest.HarnessPath(t) }

// flower is the binary these tests run, built once.
var flower itest.Flower

func flowerBinary(t *testing.T) string { return flower.Path(t) }

// startServer starts a scripted API server closed at the end of the test.
func startServer(t *testing.T, script scriptedapi.Script) *scriptedapi.Server {
	t.Helper()
	srv, err := scriptedapi.Start(script)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return srv
}

func usage(ctx int) scriptedapi.Usage {
	return scriptedapi.Usage{InputTokens: 100, CacheReadInputTokens: ctx - 100, OutputTokens: 50}
}

func bash(ctx int, cmd string) scriptedapi.Reply {
	return scriptedapi.Reply{Text: "running " + cmd, Usage: usage(ctx),
		ToolUses: []scriptedapi.ToolUse{{Name: "Bash", Input: map[string]any{"command": cmd, "description": "work"}}}}
}

func stringsOf(rs []gjson.Result) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.String())
	}
	return out
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// exitCode is the process's exit status, -1 if it did not exit normally.
func exitCode(err error) int { return itest.ExitCode(err) }
