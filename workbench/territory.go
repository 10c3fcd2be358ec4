package workbench

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/flowerhq/flower/diskfile"
	"github.com/flowerhq/flower/safefile"
)

// Input caps (DESIGN.md «Input caps»): what flower reads from its
// territory, and the task it is given, is bounded, so a planted /dev/zero,
// a 50 MB "handoff" or a runaway task file cannot exhaust memory or be sent
// to the model whole. Past a cap the input is refused with a message that
// names the file; from WarnFraction of it on, flower warns.
const (
	// MaxTask bounds the task: it lives in manifest.json, which is
	// rewritten at every save, and every successor's prompt carries it.
	MaxTask = 1 << 20
	// MaxHandoff bounds a handoff file read at a launch: a document a
	// session writes is a few KiB; this leaves a person's edits plenty.
	MaxHandoff = 256 << 10
)

// NearCap reports whether an input of n bytes is near its cap: at three
// quarters of it or more.
func NearCap(n, limit int) bool { return n >= limit/4*3 }

// Territory is flower's own part of a workspace (DESIGN.md «Territory»):
// the workbench <Workspace>/.flower and RunDir, the run dir of this run.
type Territory struct {
	// Workspace is the folder the person named (absolute): it and its
	// parents are theirs, everything flower keeps below it is checked.
	Workspace string
	// Dir is the workbench, <Workspace>/.flower unless set.
	Dir string
	// RunDir is the run dir ("" for none yet).
	RunDir string
	// Step names the step whose notes files are checked ("" for none).
	Step string
}

func (t Territory) dir() string {
	if t.Dir != "" {
		return t.Dir
	}
	return DirOf(t.Workspace)
}

// anchor is the trusted folder above path: the workspace when path lies in
// the workbench, else path's own parent (a run dir the person named
// elsewhere: the folders above it are theirs).
func (t Territory) anchor(path string) string {
	if t.Workspace != "" && within(t.dir(), path) {
		return filepath.Dir(t.dir())
	}
	return filepath.Dir(path)
}

// Check checks every path of flower's territory that a run, continue,
// rerun, show or logs may read or write, before anything does: the
// workbench and its folders (notes, notes/archive and its 交接 and 任务
// folders, runs), the step's handoff and task files, the runs/latest link,
// every other folder flower keeps in the workbench, and the run dir with
// the files in it. Anything missing is fine (flower makes it); anything
// that is not what flower makes gives a *safefile.Error naming it.
func (t Territory) Check() error {
	seen := &safefile.Seen{} // one look at each folder, however many paths lie under it
	if t.Workspace != "" || t.Dir != "" {
		if err := t.checkWorkbench(seen); err != nil {
			return err
		}
	}
	if t.RunDir != "" {
		if err := seen.Check(t.anchor(t.RunDir), t.RunDir, safefile.Dir); err != nil {
			return err
		}
		if err := seen.CheckEntries(t.RunDir); err != nil {
			return err
		}
	}
	return nil
}

func (t Territory) checkWorkbench(seen *safefile.Seen) error {
	wb := t.dir()
	anchor := t.anchor(wb)
	dirs := []string{
		filepath.Join(wb, notesDir, "archive", handoffLabel),
		filepath.Join(wb, notesDir, "archive", taskLabel),
		RunsDir(wb),
	}
	for _, d := range dirs {
		if err := seen.Check(anchor, d, safefile.Dir); err != nil {
			return err
		}
	}
	if t.Step != "" {
		w := &Workbench{Dir: wb}
		for _, f := range []string{w.HandoffPath(t.Step), w.TaskPath(t.Step)} {
			if err := seen.Check(anchor, f, safefile.File); err != nil {
				return err
			}
		}
	}
	// No FIFO, socket or device where flower or the harness's tools read:
	// git opens the workbench's .gitignore, a person's file flower passes
	// over otherwise, and would block on a FIFO.
	for _, d := range append(dirs, wb, NotesDir(wb), filepath.Join(wb, notesDir, "archive")) {
		if err := seen.CheckSpecial(d); err != nil {
			return err
		}
	}
	// Other folders of the workbench (a lock folder, say): not links, and
	// nothing in them a link or a special file.
	if entries, err := seen.Entries(wb); err == nil {
		for _, e := range entries {
			p := filepath.Join(wb, e.Name())
			if err := seen.Check(anchor, p, kindOf(e)); err != nil && e.Name() != GitignoreName {
				return err
			}
			if e.IsDir() && e.Name() != notesDir && e.Name() != RunsName {
				if err := seen.CheckEntries(p); err != nil {
					return err
				}
			}
		}
	}
	if _, err := LatestTarget(RunsDir(wb)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		var se *safefile.Error
		if errors.As(err, &se) {
			return err
		}
		// A link to a run dir since removed: the next run replaces it.
	}
	return nil
}

func kindOf(e fs.DirEntry) safefile.Kind {
	if e.IsDir() {
		return safefile.Dir
	}
	return safefile.File
}

// LatestTarget returns the run dir runs/latest points at. flower's link
// is a symbolic link to the name of a folder beside it; anything else (a
// planted directory or file, a link out of the folder or to something not
// a real directory) gives a *safefile.Error naming it. No link gives an
// error wrapping fs.ErrNotExist.
func LatestTarget(runs string) (string, error) {
	latest := filepath.Join(runs, LatestName)
	fi, err := os.Lstat(latest)
	if err != nil {
		return "", err
	}
	bad := func(problem string) error {
		return &safefile.Error{Path: latest, Problem: problem, Err: safefile.ErrUnsafe,
			Fix: "it is not the link flower makes; look at it, then remove it (rm -r " + latest + ") and name the run dir yourself, or start a new run"}
	}
	if fi.Mode()&fs.ModeSymlink == 0 {
		if fi.IsDir() {
			return "", bad("is a directory")
		}
		return "", bad("is not a symbolic link")
	}
	to, err := os.Readlink(latest)
	if err != nil {
		return "", err
	}
	if to == "" || to == "." || to == ".." || strings.ContainsRune(to, filepath.Separator) {
		return "", bad("points at " + to + ", not at a run dir beside it")
	}
	dir := filepath.Join(runs, to)
	dfi, err := os.Lstat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "", fmt.Errorf("%s points at %s, which is gone: %w", latest, to, err)
	case err != nil:
		return "", err
	case !dfi.IsDir():
		return "", bad("points at " + to + ", which is not a real directory")
	}
	return dir, nil
}

// LinkLatest points runs/latest at runDir, a folder in runs. It replaces
// only a link flower made (or none): a planted directory or file in its
// place is refused with the *safefile.Error of LatestTarget. The link is
// made under a fresh temporary name and renamed over latest, so a failure
// leaves nothing behind.
func LinkLatest(runDir string) error {
	runs := filepath.Dir(runDir)
	latest := filepath.Join(runs, LatestName)
	if fi, err := os.Lstat(latest); err == nil && fi.Mode()&fs.ModeSymlink == 0 {
		_, err := LatestTarget(runs)
		return err
	}
	for n := 0; ; n++ {
		tmp := fmt.Sprintf("%s.tmp-%d-%d", latest, os.Getpid(), n)
		err := os.Symlink(filepath.Base(runDir), tmp)
		if errors.Is(err, fs.ErrExist) && n < 100 {
			continue
		}
		if err != nil {
			return fmt.Errorf("link %s: %w", latest, err)
		}
		if err := os.Rename(tmp, latest); err != nil {
			_ = os.Remove(tmp)
			return fmt.Errorf("link %s: %w", latest, err)
		}
		return nil
	}
}

// ReadNote reads a notes file (a handoff or a task file) at path under its
// cap, limit bytes: a regular file, not a link (the folders above it are
// Territory.Check's). what names it in the message past the cap.
func ReadNote(path string, limit int, what string) ([]byte, error) {
	return safefile.ReadFile(filepath.Dir(path), path, int64(limit), what)
}

// SetAsideHandoff moves step's handoff file into the archive (as Freeze
// would before replacing it) and returns the archived name; no file gives
// "", nil. A new run uses it for a file no manifest of the workbench
// recorded (DESIGN.md «Known documents»).
func (w *Workbench) SetAsideHandoff(step string, now time.Time) (string, error) {
	return w.setAside(w.archiveDir(), w.HandoffPath(step), step, now)
}

// SetAsideTask is SetAsideHandoff for step's task file.
func (w *Workbench) SetAsideTask(step string, now time.Time) (string, error) {
	return w.setAside(w.archiveDirOf(taskLabel), w.TaskPath(step), step, now)
}

func (w *Workbench) setAside(dir, cur, step string, now time.Time) (string, error) {
	if w == nil {
		return "", nil
	}
	if _, err := os.Lstat(cur); errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	dst, err := w.preserve(dir, cur, SafeStepName(step), now)
	if err != nil {
		return "", err
	}
	if err := os.Remove(cur); err != nil {
		return dst, fmt.Errorf("set aside %s: %w", cur, err)
	}
	return dst, nil
}

// RunDirs lists the run dirs in the workbench's runs folder: its real
// directories, by name. Links (latest among them, and any planted one)
// and files are passed over, never followed.
func RunDirs(workbenchDir string) []string {
	runs := RunsDir(workbenchDir)
	entries, err := diskfile.ReadDir(runs)
	if err != nil {
		return nil
	}
	var dirs []string
	for _, e := range entries {
		if e.Type().IsDir() {
			dirs = append(dirs, filepath.Join(runs, e.Name()))
		}
	}
	return dirs
}
