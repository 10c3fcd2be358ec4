package main

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/flowerhq/flower/codexrpc"
	"github.com/flowerhq/flower/harness"
	"github.com/flowerhq/flower/integration/itest"
)

// version speaks of the kind in use: on the real Codex CLI it names the
// Codex CLI and the Codex release flower is tested on, never Claude Code's,
// whether the kind is given before the command, after it, or read from the
// binary; --json says the same as one object.
func TestVersionSpeaksOfTheKind(t *testing.T) {
	codex := itest.CodexPath(t)
	claude := realHarness(t)
	t.Setenv(envHarnessKind, "")
	t.Setenv("FLOWER_HARNESS", "")
	out := func(args ...string) string {
		t.Helper()
		var stdout, stderr strings.Builder
		if err := run(context.Background(), append([]string{"flower"}, args...), strings.NewReader(""), &stdout, &stderr); err != nil {
			t.Fatalf("flower %v: %v\n%s", args, err, stderr.String())
		}
		return stdout.String()
	}
	for _, args := range [][]string{
		{"--harness-kind", "codex", "--harness", codex, "version"},
		{"version", "--harness-kind", "codex", "--harness", codex},
		{"version", "--harness", codex},
		{"--harness-kind", "codex", "--harness", codex, "--version"},
	} {
		got := out(args...)
		want := "harness: codex-cli " + codexrpc.PinnedVersion + " " + codex + " (the Codex CLI, "
		if !strings.Contains(got, want) || !strings.Contains(got, "tested: "+codexrpc.PinnedVersion+")") || strings.Contains(got, "Claude") {
			t.Errorf("flower %v:\n%s\nwant %q and Codex's tested release alone", args, got, want)
		}
	}
	for _, tc := range []struct {
		args    []string
		kind    harnessKind
		version string
		tested  []string
	}{
		{[]string{"version", "--json", "--harness", codex}, kindCodex, "codex-cli " + codexrpc.PinnedVersion, []string{codexrpc.PinnedVersion}},
		{[]string{"version", "--json", "--harness", claude}, kindClaude, harness.PinnedVersion + " (Claude Code)", harness.TestedVersions},
	} {
		var v versionReport
		if err := json.Unmarshal([]byte(out(tc.args...)), &v); err != nil {
			t.Fatalf("flower %v: %v", tc.args, err)
		}
		h := v.Harness
		if v.Flower == "" || !strings.HasPrefix(v.Build.Go, "go1.") || !h.Found || h.Kind != tc.kind || h.Version != tc.version ||
			!slices.Equal(h.Tested, tc.tested) || h.Why == "" || h.Product != tc.kind.product() {
			t.Errorf("flower %v: %+v", tc.args, v)
		}
	}
}

// With no Codex CLI anywhere, the run's error and version's line name
// codex and make codex, not claude and make harness.
func TestNoCodexFound(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	t.Setenv("FLOWER_HARNESS", "")
	t.Setenv(envHarnessKind, "codex")
	var stdout, stderr strings.Builder
	err := run(context.Background(), []string{"flower", "-C", t.TempDir(), "a task of words"}, strings.NewReader(""), &stdout, &stderr)
	if code := exitCode(err); code != exitUsage || !strings.Contains(err.Error(), "make codex") || strings.Contains(err.Error(), "claude") {
		t.Errorf("exit %d (%v), want %d and make codex, no claude", code, err, exitUsage)
	}
	for _, args := range [][]string{{"version"}, {"version", "--json"}} {
		stdout.Reset()
		if err := run(context.Background(), append([]string{"flower"}, args...), strings.NewReader(""), &stdout, &stderr); err != nil {
			t.Fatal(err)
		}
		if got := stdout.String(); !strings.Contains(got, "codex on PATH") || !strings.Contains(got, "make codex") || strings.Contains(got, "claude") {
			t.Errorf("flower %v without a Codex CLI:\n%s", args, got)
		}
	}
}
