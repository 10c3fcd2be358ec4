// Package workbench owns the on-disk place where handoff documents are
// frozen (DESIGN.md «Handoff files», «No workbench»):
// <workbench>/notes/交接-<step>.md holds the current generation's handoff,
// and every earlier generation is preserved under
// <workbench>/notes/archive/交接/. Beside it, <workbench>/notes/任务-<step>.md
// holds the step's task as it was given, frozen at the step's start, with
// earlier tasks preserved under notes/archive/任务/. It also owns turning an
// arbitrary step name into a file name that cannot escape that directory,
// and keeping flower's folders (the workbench, a run dir) out of the
// person's git history.
package workbench

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/flowerhq/flower/atomicfile"
	"github.com/flowerhq/flower/diskfile"
	"github.com/flowerhq/flower/safefile"
)

// ErrNoWorkbench is returned by reads on a nil *Workbench: without a
// workbench there is no file (DESIGN.md «No workbench»), the handoff lives
// only in the prompt.
var ErrNoWorkbench = errors.New("no workbench")

const (
	notesDir     = "notes"
	handoffLabel = "交接" // file prefix and archive folder name (DESIGN.md «Handoff files»)
	taskLabel    = "任务" // the task's file prefix and archive folder name
	timeLayout   = "20060102T150405Z"
	// maxArchiveTries bounds the -2, -3 … search for a free archive name so
	// a broken file system cannot loop forever.
	maxArchiveTries = 10000
)

// Workbench is the workbench root, e.g. <workspace>/.flower. A nil
// *Workbench means "no workbench": Freeze and HandoffPath then do nothing.
type Workbench struct {
	Dir string
	// Written, when set, hears of every notes file Freeze and FreezeTask
	// are about to write (or found already holding the task): what
	// ("handoff file", "task file"), its path and its contents. It is
	// called before the file is on disk, so the receipt the engine records
	// of it outside the workspace (DESIGN.md «Known documents») comes
	// first: a flower killed at any moment leaves no file of its own
	// without its receipt.
	Written func(what, path string, data []byte)

	mu   sync.Mutex
	kept map[string][]byte // step → the handoff KeepHandoff archived
}

// Open makes sure dir/notes exists and is writable and that git ignores dir
// (see Ignore), and returns the workbench rooted at dir.
func Open(dir string) (*Workbench, error) {
	if dir == "" {
		return nil, errors.New("open workbench: empty dir")
	}
	notes := filepath.Join(dir, notesDir)
	// Not through a link, and not into a file of the wrong kind (DESIGN.md «Territory»).
	if err := safefile.MkdirAll(filepath.Dir(dir), notes, 0o755); err != nil {
		return nil, fmt.Errorf("open workbench: %w", err)
	}
	// Fail now rather than at the first handoff, tens of minutes in.
	if err := Writable(notes); err != nil {
		return nil, fmt.Errorf("open workbench: notes not writable: %w", err)
	}
	if err := Ignore(dir); err != nil {
		return nil, fmt.Errorf("open workbench: %w", err)
	}
	return &Workbench{Dir: dir}, nil
}

// Writable checks that a file can be made in dir: it creates one and
// removes it, without syncing anything.
func Writable(dir string) error {
	f, err := os.CreateTemp(dir, ".probe-*")
	if err != nil {
		return err
	}
	return errors.Join(f.Close(), os.Remove(f.Name()))
}

// HandoffPath is where step's current handoff lives:
// dir/notes/交接-<SafeStepName(step)>.md. It is "" for a nil *Workbench.
func (w *Workbench) HandoffPath(step string) string {
	if w == nil {
		return ""
	}
	return filepath.Join(w.Dir, notesDir, handoffLabel+"-"+SafeStepName(step)+".md")
}

// LockPath is the file whose flock(2) makes one process the owner of step
// in this workbench, and so of its notes files (DESIGN.md «One step, one
// owner»): dir/runs/.step-<SafeStepName(step)>.lock. It lives with the
// runs, not the notes, which a person may keep under version control. It
// is "" for a nil *Workbench.
func (w *Workbench) LockPath(step string) string {
	if w == nil {
		return ""
	}
	return filepath.Join(RunsDir(w.Dir), ".step-"+SafeStepName(step)+".lock")
}

func (w *Workbench) archiveDir() string { return w.archiveDirOf(handoffLabel) }

// anchor is the folder above the workbench: the person's workspace, which
// is not checked; everything below it is (DESIGN.md «Territory»).
func (w *Workbench) anchor() string { return filepath.Dir(w.Dir) }

// mkdir makes dir, a folder in the workbench, without following links.
func (w *Workbench) mkdir(dir string) error { return safefile.MkdirAll(w.anchor(), dir, 0o755) }

func (w *Workbench) archiveDirOf(label string) string {
	return filepath.Join(w.Dir, notesDir, "archive", label)
}

// Freeze writes doc as step's current handoff and returns its path. An
// existing handoff is first preserved as
// notes/archive/交接/<safe>-<now as 20060102T150405Z>[-N].md, so the current
// path always holds the old or the new document, never half of one and never
// nothing once it existed. For a nil *Workbench it returns "", nil
// (DESIGN.md «No workbench»).
func (w *Workbench) Freeze(step string, doc []byte, now time.Time) (string, error) {
	if w == nil {
		return "", nil
	}
	cur := w.HandoffPath(step)
	if err := safefile.Check(w.anchor(), cur, safefile.File); err != nil {
		return "", fmt.Errorf("freeze handoff: %w", err)
	}
	_, err := os.Lstat(cur)
	switch {
	case err == nil:
		if w.stillKept(step, cur) {
			break
		}
		if _, err := w.preserve(w.archiveDir(), cur, SafeStepName(step), now); err != nil {
			return "", fmt.Errorf("freeze handoff: %w", err)
		}
	case errors.Is(err, fs.ErrNotExist):
		if err := w.mkdir(filepath.Dir(cur)); err != nil {
			return "", fmt.Errorf("freeze handoff: %w", err)
		}
	default:
		return "", fmt.Errorf("freeze handoff: %w", err)
	}
	w.written("handoff file", cur, doc)
	if err := atomicfile.WriteFile(cur, doc, 0o666); err != nil { // less the umask
		return "", fmt.Errorf("freeze handoff: %w", err)
	}
	return cur, nil
}

// KeepHandoff archives step's current handoff now, as Freeze would, so
// that Freeze need not: the copy and its syncs then happen while the
// writing turn runs, not between its end and the successor's prompt
// (DESIGN.md «Warm successor»). Freeze archives the file again if it no
// longer holds what was kept (a person edited it since). No file, or one
// over the cap for a handoff, keeps nothing; Freeze then does as before.
func (w *Workbench) KeepHandoff(step string, now time.Time) error {
	if w == nil {
		return nil
	}
	cur := w.HandoffPath(step)
	data, err := safefile.ReadFile(w.anchor(), cur, MaxHandoff, "a handoff")
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, safefile.ErrTooLarge) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("keep handoff: %w", err)
	}
	if err := w.mkdir(w.archiveDir()); err != nil {
		return fmt.Errorf("keep handoff: %w", err)
	}
	if _, err := w.archive(w.archiveDir(), SafeStepName(step), now, func(dst string) error {
		return atomicfile.CopyNew(dst, bytes.NewReader(data), 0o644)
	}); err != nil {
		return fmt.Errorf("keep handoff: %w", err)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.kept == nil {
		w.kept = map[string][]byte{}
	}
	w.kept[step] = data
	return nil
}

// stillKept reports whether the file at cur holds what KeepHandoff archived
// for step, and forgets it: a kept copy stands for one Freeze.
func (w *Workbench) stillKept(step, cur string) bool {
	w.mu.Lock()
	kept, ok := w.kept[step]
	delete(w.kept, step)
	w.mu.Unlock()
	if !ok {
		return false
	}
	data, err := safefile.ReadFile(w.anchor(), cur, MaxHandoff, "a handoff")
	return err == nil && bytes.Equal(data, kept)
}

func (w *Workbench) written(what, path string, data []byte) {
	if w.Written != nil {
		w.Written(what, path, data)
	}
}

// preserve puts a copy of cur into the archive dir under a name nobody used
// before and returns that name. The current file stays in place; the caller
// then replaces it atomically.
func (w *Workbench) preserve(dir, cur, safe string, now time.Time) (string, error) {
	// cur was checked to be a regular file: a link is refused, never
	// archived as the link (DESIGN.md «Territory»).
	if err := safefile.Check(w.anchor(), cur, safefile.File); err != nil {
		return "", fmt.Errorf("archive: %w", err)
	}
	if err := w.mkdir(dir); err != nil {
		return "", fmt.Errorf("archive: %w", err)
	}
	return w.archive(dir, safe, now, func(dst string) error { return copyExcl(cur, dst) })
}

// archive makes a file in dir under a name nobody used before,
// <safe>-<now>[-N].md, with create (which fails with fs.ErrExist when the
// name is taken), and returns that name.
func (w *Workbench) archive(dir, safe string, now time.Time, create func(dst string) error) (string, error) {
	stamp := now.UTC().Format(timeLayout)
	for n := 1; n <= maxArchiveTries; n++ {
		name := safe + "-" + stamp
		if n > 1 {
			name += "-" + strconv.Itoa(n)
		}
		dst := filepath.Join(dir, name+".md")
		// O_EXCL fails if dst exists, so two handoffs in the same second
		// (or two flower processes) never overwrite each other.
		err := create(dst)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return "", fmt.Errorf("archive %s: %w", dst, err)
		}
		return dst, nil
	}
	return "", fmt.Errorf("archive: no free name for %s-%s after %d tries", safe, stamp, maxArchiveTries)
}

// copyExcl makes dst hold src's contents, failing with fs.ErrExist if dst
// exists. It copies rather than links: a second name would give the
// current file two links until it is replaced, and flower refuses a file of
// its own with two (DESIGN.md «Territory»). The copy is whole before it
// has its name (atomicfile.CopyNew): a person or a tool listing the
// archive never reads half of one.
func copyExcl(src, dst string) error {
	in, err := safefile.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	return atomicfile.CopyNew(dst, in, 0o644)
}

// TaskPath is where step's task lives: dir/notes/任务-<SafeStepName(step)>.md.
// It is "" for a nil *Workbench.
func (w *Workbench) TaskPath(step string) string {
	if w == nil {
		return ""
	}
	return filepath.Join(w.Dir, notesDir, taskLabel+"-"+SafeStepName(step)+".md")
}

// FreezeTask writes task, as it was given at the step's start, as step's
// task file and returns its path. A file that already holds exactly task is
// left alone. One that holds anything else (an earlier run's task, or a
// person's edit of it) is first preserved as
// notes/archive/任务/<safe>-<now>[-N].md, so nothing a person wrote is ever
// lost; the write itself is atomic. For a nil *Workbench it returns "", nil:
// the task then lives in the manifest only.
func (w *Workbench) FreezeTask(step string, task []byte, now time.Time) (string, error) {
	if w == nil {
		return "", nil
	}
	cur := w.TaskPath(step)
	old, err := safefile.ReadFile(w.anchor(), cur, MaxTask, "a task")
	switch {
	case err == nil && bytes.Equal(old, task):
		w.written("task file", cur, task)
		return cur, nil
	case err == nil || errors.Is(err, safefile.ErrTooLarge):
		// Over the cap it cannot be this task: it is kept, not read.
		if _, err := w.preserve(w.archiveDirOf(taskLabel), cur, SafeStepName(step), now); err != nil {
			return "", fmt.Errorf("freeze task: %w", err)
		}
	case errors.Is(err, fs.ErrNotExist):
		if err := w.mkdir(filepath.Dir(cur)); err != nil {
			return "", fmt.Errorf("freeze task: %w", err)
		}
	default:
		// A directory in its place lands here too (EISDIR).
		return "", fmt.Errorf("freeze task: %w", err)
	}
	w.written("task file", cur, task)
	if err := atomicfile.WriteFile(cur, task, 0o666); err != nil { // less the umask
		return "", fmt.Errorf("freeze task: %w", err)
	}
	return cur, nil
}

// ReadTask returns step's task file as it is on disk now: a person may have
// edited it since it was frozen, and the edit is what successors get. A
// missing file gives an error wrapping fs.ErrNotExist that names the path; a
// nil *Workbench gives ErrNoWorkbench.
func (w *Workbench) ReadTask(step string) ([]byte, error) {
	if w == nil {
		return nil, ErrNoWorkbench
	}
	data, err := safefile.ReadFile(w.anchor(), w.TaskPath(step), MaxTask, "a task")
	if err != nil {
		return nil, fmt.Errorf("read task: %w", err)
	}
	return data, nil
}

// ReadHandoff returns step's current handoff as it is on disk now: a person
// may have edited it (DESIGN.md «Launch from disk»). A missing file gives an
// error wrapping fs.ErrNotExist that names the path; a nil *Workbench gives
// ErrNoWorkbench.
func (w *Workbench) ReadHandoff(step string) ([]byte, error) {
	if w == nil {
		return nil, ErrNoWorkbench
	}
	data, err := safefile.ReadFile(w.anchor(), w.HandoffPath(step), MaxHandoff, "a handoff")
	if err != nil {
		// *fs.PathError already names the path.
		return nil, fmt.Errorf("read handoff: %w", err)
	}
	return data, nil
}

// Archive lists the archived generations of step's handoff, oldest first
// (by the timestamp in their names, then by the -N suffix). No archive yet
// gives an empty list; a nil *Workbench gives ErrNoWorkbench.
func (w *Workbench) Archive(step string) ([]string, error) {
	if w == nil {
		return nil, ErrNoWorkbench
	}
	dir := w.archiveDir()
	entries, err := diskfile.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return []string{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list archive: %w", err)
	}
	type gen struct {
		name, stamp string
		n           int
	}
	prefix := SafeStepName(step) + "-"
	var gens []gen
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		stamp, n, ok := parseArchiveName(e.Name(), prefix)
		if ok {
			gens = append(gens, gen{e.Name(), stamp, n})
		}
	}
	sort.Slice(gens, func(i, j int) bool {
		if gens[i].stamp != gens[j].stamp {
			return gens[i].stamp < gens[j].stamp
		}
		return gens[i].n < gens[j].n
	})
	paths := make([]string, len(gens))
	for i, g := range gens {
		paths[i] = filepath.Join(dir, g.name)
	}
	return paths, nil
}

// parseArchiveName accepts exactly <prefix><stamp>[-N].md. Being strict is
// what keeps step "a" from claiming the archive of step "a-2" (whose names
// start "a-2-<stamp>").
func parseArchiveName(name, prefix string) (stamp string, n int, ok bool) {
	rest, found := strings.CutPrefix(name, prefix)
	if !found {
		return "", 0, false
	}
	rest, found = strings.CutSuffix(rest, ".md")
	if !found || len(rest) < len(timeLayout) {
		return "", 0, false
	}
	stamp, rest = rest[:len(timeLayout)], rest[len(timeLayout):]
	if _, err := time.Parse(timeLayout, stamp); err != nil {
		return "", 0, false
	}
	if rest == "" {
		return stamp, 1, true
	}
	digits, found := strings.CutPrefix(rest, "-")
	if !found || digits == "" || digits[0] == '0' {
		return "", 0, false
	}
	n, err := strconv.Atoi(digits)
	if err != nil || n < 2 || strconv.Itoa(n) != digits {
		return "", 0, false
	}
	return stamp, n, true
}
