package sdk_test

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/flowerhq/flower/scriptedapi"
)

// These tests have a package of their own, so that their minutes of real
// SDK, harness and node runs have a test binary and a timeout of their own.

// harnessVersion is the pinned Claude Code version scripts/install-harness.sh
// installs.
const harnessVersion = "2.1.328"

// waitLimit bounds a wait for processes to go (a hang guard, not a timing
// assertion).
const waitLimit = 45 * time.Second

func TestMain(m *testing.M) {
	code := m.Run()
	if flowerBin != "" {
		os.RemoveAll(filepath.Dir(flowerBin))
	}
	os.Exit(code)
}

// harnessPath finds the real harness: $FLOWER_HARNESS, else the cache
// scripts/install-harness.sh fills.
func harnessPath(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("needs the real harness: make test runs this, make unit does not")
	}
	if p := os.Getenv("FLOWER_HARNESS"); p != "" {
		return p
	}
	cache := os.Getenv("XDG_CACHE_HOME")
	if cache == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			t.Fatalf("find harness: %v", err)
		}
		cache = filepath.Join(home, ".cache")
	}
	p := filepath.Join(cache, "flower", "harness", harnessVersion, "node_modules", "@anthropic-ai", "claude-code-linux-x64", "claude")
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("no harness at %s: run `make test` (it installs the pinned harness) or set FLOWER_HARNESS", p)
	}
	return p
}

var (
	flowerOnce sync.Once
	flowerBin  string
	flowerErr  error
)

// flowerBinary builds cmd/flower once per test binary.
func flowerBinary(t *testing.T) string {
	t.Helper()
	flowerOnce.Do(func() {
		dir, err := os.MkdirTemp("", "flower-sdk-")
		if err != nil {
			flowerErr = err
			return
		}
		flowerBin = filepath.Join(dir, "flower")
		out, err := exec.Command("go", "build", "-o", flowerBin, "../../cmd/flower").CombinedOutput()
		if err != nil {
			flowerErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if flowerErr != nil {
		t.Fatal(flowerErr)
	}
	return flowerBin
}

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

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
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
func exitCode(err error) int {
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		return ee.ExitCode()
	default:
		return -1
	}
}
