package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/flowerhq/flower/front"
	"github.com/flowerhq/flower/harness"
)

// PinnedHarnessVersion is the harness version flower is tested against; the
// Makefile installs it into the cache below.
const PinnedHarnessVersion = harness.PinnedVersion

// cachedHarness is where scripts/install-harness.sh puts the pinned harness.
func cachedHarness() string {
	return filepath.Join(cacheDir(), "flower", "harness", PinnedHarnessVersion, "node_modules", "@anthropic-ai", "claude-code-linux-x64", "claude")
}

// harnessChoice is the harness a command runs and why that one (doctor
// says both; a run says the why when it passed PATH's claude over).
type harnessChoice struct {
	Path string
	Why  string
	// Note, when not empty, is the one line a run prints before it starts:
	// PATH's claude was passed over for the pinned copy.
	Note string
}

// findHarness resolves the harness (chooseHarness) and returns its path.
func findHarness(flag string) (string, error) {
	ch, err := chooseHarness(flag)
	return ch.Path, err
}

// chooseHarness resolves the harness: the flag (or FLOWER_HARNESS), else
// claude on PATH, else the cached pinned copy. PATH's claude is passed
// over for the pinned copy when both are there and PATH's is a release
// flower was not tested on: a self-update, or another install, must not
// change what every later run starts (DESIGN.md «Held harness»).
func chooseHarness(flag string) (harnessChoice, error) {
	if flag != "" {
		p, err := exec.LookPath(flag)
		if err != nil {
			return harnessChoice{}, usagef("harness %s: %v", flag, err)
		}
		return harnessChoice{Path: p, Why: "named by --harness or FLOWER_HARNESS"}, nil
	}
	pinned := cachedHarness()
	havePinned := isExecutable(pinned)
	if p, err := exec.LookPath("claude"); err == nil {
		if !havePinned {
			return harnessChoice{Path: p, Why: "claude on PATH"}, nil
		}
		v := pathHarnessVersion(p)
		if harness.TestedVersions.Has(v) {
			return harnessChoice{Path: p, Why: "claude on PATH, release " + v + ", one flower was tested on"}, nil
		}
		said := v
		if _, ok := front.ParseVersion(v); !ok {
			said = "of an unknown release"
		}
		why := fmt.Sprintf("flower's pinned %s, over claude on PATH (%s, %s), which is not a release flower was tested on (%s)",
			PinnedHarnessVersion, p, said, strings.Join(harness.TestedVersions, ", "))
		return harnessChoice{Path: pinned, Why: why,
			Note: "flower: running " + why + "; pass --harness " + p + " to run that one anyway"}, nil
	}
	if havePinned {
		return harnessChoice{Path: pinned, Why: "flower's pinned " + PinnedHarnessVersion + " (no claude on PATH)"}, nil
	}
	return harnessChoice{}, usageError{fmt.Errorf("%w: looked for claude on PATH and %s; pass --harness, set FLOWER_HARNESS, put claude on PATH, or run `make harness`", errNoHarness, pinned)}
}

// pathHarnessVersion is the release of the claude at p: from the package
// its binary came in when one lies beside it (no process started), else
// from its --version.
func pathHarnessVersion(p string) string {
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		real = p
	}
	dir := filepath.Dir(real)
	for range 4 {
		if b, err := os.ReadFile(filepath.Join(dir, "package.json")); err == nil && len(b) < 1<<20 {
			var pkg struct{ Name, Version string }
			if json.Unmarshal(b, &pkg) == nil && strings.HasPrefix(pkg.Name, "@anthropic-ai/claude-code") && pkg.Version != "" {
				return pkg.Version
			}
		}
		up := filepath.Dir(dir)
		if up == dir {
			break
		}
		dir = up
	}
	v, _, _ := strings.Cut(askVersion(context.Background(), p), " ")
	return v
}

func isExecutable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0
}
