// Package itest is what the test packages that drive the real harness
// share: finding the pinned harness, and building flower once per test
// binary.
package itest

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/flowerhq/flower/harness"
)

// HarnessVersion is the Claude Code version the suites run on: the one the
// Makefile installed ($FLOWER_HARNESS_VERSION: the pinned one for make
// test, any for make compat), else the pinned one. The facts test asserts
// the binary reports it.
var HarnessVersion = func() string {
	if v := os.Getenv("FLOWER_HARNESS_VERSION"); v != "" {
		return v
	}
	return harness.PinnedVersion
}()

// HarnessPath finds the real harness: $FLOWER_HARNESS, else the cache
// scripts/install-harness.sh fills. Under -short the test is skipped: make
// unit runs without the harness.
func HarnessPath(t testing.TB) string {
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
	p := filepath.Join(cache, "flower", "harness", HarnessVersion, "node_modules", "@anthropic-ai", "claude-code-linux-x64", "claude")
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("no harness at %s: run `make test` (it installs the pinned harness) or set FLOWER_HARNESS", p)
	}
	return p
}

// Flower is the flower binary, built once per test binary on first use.
// TestMain calls Remove when the tests are done.
type Flower struct {
	once sync.Once
	path string
	err  error
}

// Path builds cmd/flower (once) and returns the binary's path.
func (f *Flower) Path(t testing.TB) string {
	t.Helper()
	f.once.Do(func() {
		dir, err := os.MkdirTemp("", "flower-bin-")
		if err != nil {
			f.err = err
			return
		}
		f.path = filepath.Join(dir, "flower")
		// flower-temporal beside it, as make build puts it: flower runs
		// it for the many-machines commands.
		for _, b := range [][]string{{"-tags", "urfave_cli_no_docs", "-o", f.path}, {"-tags", "temporal,urfave_cli_no_docs", "-o", f.path + "-temporal"}} {
			args := append(append([]string{"build"}, b...), "github.com/flowerhq/flower/cmd/flower")
			cmd := exec.Command("go", args...)
			cmd.Env = append(os.Environ(), "CGO_ENABLED=0") // as make build builds them
			if out, err := cmd.CombinedOutput(); err != nil {
				f.err = fmt.Errorf("go %s: %v\n%s", strings.Join(args, " "), err, out)
				return
			}
		}
	})
	if f.err != nil {
		t.Fatal(f.err)
	}
	return f.path
}

// Remove deletes the binary, if one was built.
func (f *Flower) Remove() {
	if f.path != "" {
		os.RemoveAll(filepath.Dir(f.path))
	}
}

// ExitCode is the exit status of a process whose Wait returned err, -1 if
// it did not exit normally.
func ExitCode(err error) int {
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

// CodexVersion is the Codex CLI version the suites run on:
// $FLOWER_CODEX_VERSION (the Makefile's CODEX_VERSION), else the pinned one.
var CodexVersion = versionOr("FLOWER_CODEX_VERSION", "0.171.0")

// GeminiVersion is the Gemini CLI version the suites run on:
// $FLOWER_GEMINI_VERSION (the Makefile's GEMINI_VERSION), else the pinned
// one.
var GeminiVersion = versionOr("FLOWER_GEMINI_VERSION", "0.61.0")

func versionOr(key, pinned string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return pinned
}

// CodexPath finds the real Codex CLI: $FLOWER_CODEX, which make test sets
// (scripts/install-codex.sh). Without it, or under -short, the test is
// skipped.
func CodexPath(t testing.TB) string {
	t.Helper()
	return needs(t, "the real Codex CLI", "FLOWER_CODEX", "scripts/install-codex.sh")
}

// GeminiPath finds the real Gemini CLI: $FLOWER_GEMINI, which make test
// sets (scripts/install-gemini.sh). Without it, or under -short, the test
// is skipped.
func GeminiPath(t testing.TB) string {
	t.Helper()
	return needs(t, "the real Gemini CLI", "FLOWER_GEMINI", "scripts/install-gemini.sh")
}

// AimockPath finds aimock, the scripted model server the project did not
// write: $FLOWER_AIMOCK, which make test sets (scripts/install-aimock.sh).
// Without it, or under -short, the test is skipped.
func AimockPath(t testing.TB) string {
	t.Helper()
	return needs(t, "aimock", "FLOWER_AIMOCK", "scripts/install-aimock.sh")
}

// needs is the path $key names, what make test installs with script;
// without it, or under -short, the test is skipped, saying so.
func needs(t testing.TB, what, key, script string) string {
	t.Helper()
	if testing.Short() {
		t.Skip("needs " + what + ": make test runs this, make unit does not")
	}
	p := os.Getenv(key)
	if p == "" {
		t.Skip("needs " + what + ": set " + key + " (make test does, from " + script + ")")
	}
	return p
}
