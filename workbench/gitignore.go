package workbench

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/flowerhq/flower/diskfile"
	"github.com/flowerhq/flower/safefile"
)

// GitignoreName is the file that keeps a folder of flower's out of git.
const GitignoreName = ".gitignore"

// People run flower in a git working tree, and agents often finish with
// `git add -A`: without these files every generation would commit run logs
// (flower.log carries tool output), manifests, locks and handoffs into the
// person's history. As tool caches do (.pytest_cache, .mypy_cache), the
// folder ignores itself, so nothing outside it has to change. "/*" rather
// than "*" so that one line, "!/notes/", brings back a whole subtree.
const (
	workbenchGitignore = `# Written by flower, which never overwrites this file: edit it as you like.
# Everything here is flower's own: run logs (flower.log carries tool output),
# manifests, locks, handoffs and their archive. It is ignored so that an
# agent's "git add -A" does not commit it into your history.
# To keep the handoffs (notes/) under version control, add the line
#   !/notes/
# below (and "!/.gitignore" to share that choice with every clone).
/*
`
	runDirGitignore = `# Written by flower, which never overwrites this file: edit it as you like.
# This is a flower run dir: its log (flower.log carries tool output), manifest
# and locks. It is ignored so that an agent's "git add -A" does not commit it
# into your history.
/*
`
)

// Ignore makes git ignore the workbench rooted at dir by creating
// dir/.gitignore, unless something of that name is there already: a file the
// person wrote (or deleted and replaced) is theirs and is never touched. The
// file appears whole or not at all.
func Ignore(dir string) error {
	return writeGitignore(dir, workbenchGitignore)
}

// MkdirRun creates the run directory runDir if need be. A run dir inside
// the workbench (workbenchDir, "" for none) is covered by the workbench's own
// .gitignore, which it then makes sure of; one elsewhere that flower creates
// here gets a .gitignore of its own. A folder that existed before is the
// person's, and gets nothing.
func MkdirRun(runDir, workbenchDir string) error {
	runDir, err := filepath.Abs(runDir)
	if err != nil {
		return fmt.Errorf("run dir: %w", err)
	}
	_, err = os.Lstat(runDir)
	created := errors.Is(err, fs.ErrNotExist)
	wb := ""
	if workbenchDir != "" {
		if wb, err = filepath.Abs(workbenchDir); err != nil {
			return fmt.Errorf("run dir: %w", err)
		}
	}
	// Below the workspace nothing is followed (DESIGN.md «Territory»); a run
	// dir elsewhere is the person's choice of folder.
	anchor := filepath.Dir(runDir)
	if wb != "" && within(wb, runDir) {
		anchor = filepath.Dir(wb)
	}
	if err := safefile.MkdirAll(anchor, runDir, 0o755); err != nil {
		return fmt.Errorf("run dir: %w", err)
	}
	if wb != "" && within(wb, runDir) {
		return Ignore(wb)
	}
	if !created {
		return nil
	}
	return writeGitignore(runDir, runDirGitignore)
}

// RunDirLayout is how a new run dir is named: its start time, to the
// second, in UTC.
const RunDirLayout = "20060102-150405"

// maxRunDirTries bounds the -2, -3 … search for a free run dir name.
const maxRunDirTries = 1000

// NewRunDir creates a run dir of its own under runsDir (creating runsDir if
// need be) and returns its absolute path: named after now
// (RunDirLayout), or, when another run started in the same second, after
// now with -2, -3 … appended. Each name is created exclusively (mkdir), so
// two runs never share one, however close they start (DESIGN.md «One
// step, one owner»).
func NewRunDir(runsDir string, now time.Time) (string, error) {
	runsDir, err := filepath.Abs(runsDir)
	if err != nil {
		return "", fmt.Errorf("run dir: %w", err)
	}
	if err := os.MkdirAll(runsDir, 0o755); err != nil {
		return "", fmt.Errorf("run dir: %w", err)
	}
	stamp := now.UTC().Format(RunDirLayout)
	for n := 1; n <= maxRunDirTries; n++ {
		dir := filepath.Join(runsDir, stamp)
		if n > 1 {
			dir += "-" + strconv.Itoa(n)
		}
		err := os.Mkdir(dir, 0o755)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return "", fmt.Errorf("run dir: %w", err)
		}
		return dir, nil
	}
	return "", fmt.Errorf("run dir: no free name for %s in %s after %d tries", stamp, runsDir, maxRunDirTries)
}

// within reports whether path is dir or lies under it (both absolute).
func within(dir, path string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

func writeGitignore(dir, content string) error {
	path := filepath.Join(dir, GitignoreName)
	if _, err := os.Lstat(path); err == nil {
		return nil // there already: flower checks before every run
	}
	// Created, never replaced, and not synced: losing it to a crash loses
	// nothing the next run does not write again, and a sync here would
	// delay the first harness of a run in a new workspace (DESIGN.md
	// «Warm successor»).
	f, err := diskfile.Open(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, fs.ErrExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", GitignoreName, err)
	}
	if _, err := f.WriteString(content); err != nil {
		f.Close()
		os.Remove(path)
		return fmt.Errorf("write %s: %w", GitignoreName, err)
	}
	return f.Close()
}
