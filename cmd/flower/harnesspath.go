package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/flowerhq/flower/harness"
)

// PinnedHarnessVersion is the harness version flower is tested against; the
// Makefile installs it into the cache below.
const PinnedHarnessVersion = harness.PinnedVersion

// cachedHarness is where scripts/install-harness.sh puts the pinned harness.
func cachedHarness() string {
	return filepath.Join(cacheDir(), "flower", "harness", PinnedHarnessVersion, "node_modules", "@anthropic-ai", "claude-code-linux-x64", "claude")
}

// findHarness resolves the harness: the flag (or FLOWER_HARNESS), else claude
// on PATH, else the cached pinned copy.
func findHarness(flag string) (string, error) {
	if flag != "" {
		p, err := exec.LookPath(flag)
		if err != nil {
			return "", usagef("harness %s: %v", flag, err)
		}
		return p, nil
	}
	if p, err := exec.LookPath("claude"); err == nil {
		return p, nil
	}
	if p := cachedHarness(); isExecutable(p) {
		return p, nil
	}
	return "", usageError{fmt.Errorf("%w (looked for claude on PATH and %s)", errNoHarness, cachedHarness())}
}

func isExecutable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0
}
