package main

import (
	"context"
	"os"
	"path/filepath"
	"testing"
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
		{script("h4", "codex-cli 0.171.0"), "claude", kindClaude}, // given wins
		{script("h5", "2.1.328 (Claude Code)"), "Codex", kindCodex},
		{script("codex", "no version at all"), "", kindCodex}, // the name says it
	} {
		_, k, err := harnessOf(ctx, c.path, c.kind)
		if err != nil {
			t.Fatalf("%s %q: %v", c.path, c.kind, err)
		}
		if k != c.want {
			t.Errorf("%s (kind %q): %s, want %s", filepath.Base(c.path), c.kind, k, c.want)
		}
	}
	if _, _, err := harnessOf(ctx, "", "gemini"); err == nil {
		t.Error("--harness-kind gemini was taken")
	}
}
