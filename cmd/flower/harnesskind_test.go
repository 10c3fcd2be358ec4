package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flowerhq/flower/harness"
)

func TestHarnessKindDetected(t *testing.T) {
	dir := t.TempDir()
	script := func(name, answer string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("#!/bin/sh\necho '"+answer+"'\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	ctx := context.Background()
	for _, c := range []struct {
		path, kind string
		want       harnessKind
	}{
		{script("h1", "codex-cli 0.171.0"), "", kindCodex},
		{script("h2", "2.1.328 (Claude Code)"), "", kindClaude},
		{script("h3", "something else"), "", kindClaude},
		{script("h4", "a wrapper of mine"), "claude", kindClaude}, // given, where nothing says otherwise
		{script("h5", "a wrapper of mine"), "Codex", kindCodex},
		{script("codex", "no version at all"), "", kindCodex}, // the name says it
		{script("gemini.js", "0.61.0"), "", kindGemini},       // the pinned Gemini CLI's name
	} {
		_, k, err := chooseOf(ctx, c.path, c.kind)
		if err != nil {
			t.Fatalf("%s %q: %v", c.path, c.kind, err)
		}
		if k != c.want {
			t.Errorf("%s (kind %q): %s, want %s", filepath.Base(c.path), c.kind, k, c.want)
		}
	}
	if _, _, err := chooseOf(ctx, "", "aider"); err == nil {
		t.Error("--harness-kind aider was taken")
	}
}

// TestPinnedOverUntestedPath: claude on PATH of a release flower was not
// tested on (a self-update's, say) is passed over for the pinned copy, in
// one line that names both; a tested one on PATH is run; the release is
// read from the package beside the binary where there is one.
func TestPinnedOverUntestedPath(t *testing.T) {
	cache := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", cache)
	bin := t.TempDir()
	t.Setenv("PATH", bin)
	onPath := filepath.Join(bin, "claude")
	answer := func(v string) {
		if err := os.WriteFile(onPath, []byte("#!/bin/sh\necho '"+v+" (Claude Code)'\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	answer("2.1.999")
	// No pinned copy: PATH's, whatever its release.
	if ch, err := chooseHarness(""); err != nil || ch.Path != onPath || ch.Note != "" {
		t.Fatalf("no pinned copy: %+v, %v; want PATH's claude and no note", ch, err)
	}
	pinned := cachedHarness()
	if err := os.MkdirAll(filepath.Dir(pinned), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(pinned, []byte("#!/bin/sh\necho '"+PinnedHarnessVersion+" (Claude Code)'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	ch, err := chooseHarness("")
	if err != nil || ch.Path != pinned {
		t.Fatalf("untested on PATH: %+v, %v; want the pinned copy", ch, err)
	}
	for _, want := range []string{onPath, "2.1.999", PinnedHarnessVersion, "--harness"} {
		if !strings.Contains(ch.Note, want) {
			t.Errorf("note %q does not name %q", ch.Note, want)
		}
	}
	if strings.Contains(ch.Note, "\n") {
		t.Errorf("note %q is more than one line", ch.Note)
	}
	answer(harness.TestedVersions.Newest())
	if ch, err := chooseHarness(""); err != nil || ch.Path != onPath || ch.Note != "" {
		t.Errorf("tested on PATH: %+v, %v; want PATH's claude and no note", ch, err)
	}
	// Named: run as named, whatever its release.
	answer("2.1.999")
	if ch, err := chooseHarness(onPath); err != nil || ch.Path != onPath || ch.Note != "" {
		t.Errorf("named: %+v, %v; want it", ch, err)
	}
	// An npm install: a link to the package's binary, whose package.json
	// says the release (its --version is not asked).
	pkg := filepath.Join(t.TempDir(), "node_modules", "@anthropic-ai", "claude-code")
	if err := os.MkdirAll(filepath.Join(pkg, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(pkg, "package.json"), []byte(`{"name":"@anthropic-ai/claude-code","version":"2.1.400"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(pkg, "bin", "claude"), []byte("#!/bin/sh\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(onPath); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(pkg, "bin", "claude"), onPath); err != nil {
		t.Fatal(err)
	}
	if ch, err := chooseHarness(""); err != nil || ch.Path != pinned || !strings.Contains(ch.Note, "2.1.400") {
		t.Errorf("npm install of 2.1.400 on PATH: %+v, %v; want the pinned copy, the note naming 2.1.400", ch, err)
	}
}
