package supervisor

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/flowerhq/flower/atomicfile"
	"github.com/flowerhq/flower/diskfile"
	"github.com/flowerhq/flower/runlog"
	"github.com/flowerhq/flower/safefile"
	"github.com/flowerhq/flower/workbench"
)

// ErrStepBusy is wrapped by the *BusyError of a step another process is
// running in the same workspace or the same run directory.
var ErrStepBusy = errors.New("step is being run by another flower")

// BusyError refuses a second run of a step (DESIGN.md «One step, one
// owner»): a workspace's step, whose notes files it writes, belongs to one
// process at a time, and so does a run directory's.
type BusyError struct {
	Step string
	// Workspace is set when the step's workbench is what is held; it is
	// empty when the run directory alone is (a run without a workbench).
	Workspace string
	// RunDir is the holder's run directory: where `flower continue` finds
	// the holder's step once it stopped. It is "" when the lock file did
	// not name one (a holder of an older flower).
	RunDir string
	PID    int // the holder's pid; 0 if it could not be read
}

// Error describes the failure; it is what a person sees.
func (e *BusyError) Error() string {
	holder := "another flower"
	if e.PID > 0 {
		holder = fmt.Sprintf("flower pid %d", e.PID)
	}
	var b strings.Builder
	switch {
	case e.Workspace != "" && e.RunDir != "":
		fmt.Fprintf(&b, "step %s of workspace %s is being run by %s (run dir %s)", e.Step, e.Workspace, holder, e.RunDir)
	case e.Workspace != "":
		fmt.Fprintf(&b, "step %s of workspace %s is being run by %s", e.Step, e.Workspace, holder)
	default:
		fmt.Fprintf(&b, "step %s in %s is being run by %s", e.Step, e.RunDir, holder)
	}
	fmt.Fprintf(&b, ": wait for it to finish, or stop it (flower stop, Ctrl-C, or kill %s) and use flower continue", pidOr(e.PID))
	if e.RunDir != "" {
		fmt.Fprintf(&b, " --run-dir %s", e.RunDir)
	}
	if e.Workspace != "" {
		b.WriteString("; another step name (--step) runs beside it")
	}
	return b.String()
}

// Unwrap makes errors.Is(err, ErrStepBusy) true.
func (e *BusyError) Unwrap() error { return ErrStepBusy }

func pidOr(pid int) string {
	if pid > 0 {
		return strconv.Itoa(pid)
	}
	return "it"
}

// stepLock is an exclusive flock(2) on each of the step's lock files: the
// workbench's (runs/.step-<safe name>.lock, which covers the step's notes
// files for every run in the workspace) and the run directory's
// (step-<safe name>.lock, which covers its manifest). Each file holds the
// holder's pid and run dir. The kernel drops a lock when its holder dies,
// however it dies (SIGKILL included), so a lock left behind by a killed
// flower is simply taken by the next one; the file's contents only name
// the holder.
type stepLock struct {
	files []*os.File
}

func lockPath(runDir, step string) string {
	return filepath.Join(runDir, "step-"+workbench.SafeStepName(step)+".lock")
}

// Hold makes the step this Runtime's before anything else is done: it
// takes the step's locks now, and the next RunStep, Continue, Rerun or
// RunGeneration of that step uses them (and releases them as it ends). A
// step another process runs is refused with a *BusyError. The command line
// holds a new run's step before it points runs/latest at the run, so that
// a refused run leaves no trace. The locks go with the process; a Runtime
// that never runs the held step keeps them until it exits.
func (rt *Runtime) Hold(step string) error {
	if rt.held[step] != nil {
		return nil
	}
	l, err := rt.acquire(step)
	if err != nil {
		return err
	}
	if rt.held == nil {
		rt.held = map[string]*stepLock{}
	}
	rt.held[step] = l
	return nil
}

// lockStep is what every call that runs a step does first: it checks the
// step's territory (DESIGN.md «Territory»), takes the step's locks (or
// those Hold took) and returns the stepRun that holds them.
func (rt *Runtime) lockStep(name string) (*stepRun, error) {
	if err := rt.checkStep(name); err != nil {
		return nil, err
	}
	l := rt.held[name]
	delete(rt.held, name)
	if l == nil {
		var err error
		if l, err = rt.acquire(name); err != nil {
			return nil, err
		}
	}
	ls := runlog.NewState()
	s := &stepRun{rt: rt, log: runlog.New(rt.log, ls, name), lock: l, logState: ls}
	s.openInbox(name)
	rt.holdRunDir()
	return s, nil
}

// holdRunDir opens the run dir for the step's saves of the manifest
// (manifest.SaveIn), after its territory was checked: they then go to the
// folder checked, by name, without a walk of its path. A run dir that
// cannot be opened (not made yet) is not held: the saves go by path.
func (rt *Runtime) holdRunDir() {
	if rt.runDir != nil || rt.m == nil || rt.m.RunDir == "" {
		return
	}
	if d, err := atomicfile.OpenDir(rt.m.RunDir); err == nil {
		rt.runDir = d
	}
}

// letRunDirGo closes the run dir holdRunDir opened.
func (rt *Runtime) letRunDirGo() {
	if rt.runDir != nil {
		_ = rt.runDir.Close()
		rt.runDir = nil
	}
}

// acquire takes the workbench's lock of the step, then the run dir's,
// without waiting, and says so when a holder that died left one behind.
func (rt *Runtime) acquire(name string) (*stepLock, error) {
	var paths []string
	if rt.wb != nil {
		path := rt.wb.LockPath(name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return nil, fmt.Errorf("lock step %s: %w", name, err)
		}
		paths = append(paths, path)
	}
	paths = append(paths, lockPath(rt.opts.RunDir, name))
	l := &stepLock{}
	said := 0
	for i, path := range paths {
		f, prev, err := acquireLock(path, name, rt.opts.RunDir)
		if err != nil {
			l.release(nil)
			var busy *BusyError
			if errors.As(err, &busy) && rt.wb != nil && i == 0 {
				busy.Workspace = rt.opts.Workspace
			} else if errors.As(err, &busy) && busy.RunDir == "" {
				busy.RunDir = rt.opts.RunDir
			}
			return nil, err
		}
		l.files = append(l.files, f)
		if prev > 0 && prev != os.Getpid() && prev != said {
			said = prev
			msg := fmt.Sprintf("took over the lock of step %s left by pid %d, which no longer runs it", name, prev)
			rt.log.Warn(msg, "step", name, slog.String("path", path))
			rt.emit(Event{Kind: KindNotice, Step: name, Text: msg})
		}
	}
	return l, nil
}

// lockHolder is what a lock file says: "<pid>\n<run dir>\n".
type lockHolder struct {
	pid    int
	runDir string
}

// acquireLock takes the lock at path without waiting. prev is the pid the
// file named before (a holder that died), 0 if none.
func acquireLock(path, step, runDir string) (f *os.File, prev int, err error) {
	// Private to the user, and never through a link of any kind: the file
	// is flower's own (DESIGN.md «One step, one owner», «Territory»), and
	// it is written and emptied.
	f, err = safefile.OpenOwn(path, os.O_RDWR, 0o600)
	if err != nil {
		return nil, 0, fmt.Errorf("lock step %s: %w", step, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		defer f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			h := readHolder(f)
			return nil, 0, &BusyError{Step: step, RunDir: h.runDir, PID: h.pid}
		}
		return nil, 0, fmt.Errorf("lock step %s: %w", step, err)
	}
	prev = parseHolder(f).pid
	// Ours now: name ourselves for whoever is refused next. The new
	// contents go first and the tail is cut after, so a reader never sees
	// an empty file while we hold it (only, for a moment, our lines followed
	// by a dead holder's, which it ignores).
	me := []byte(fmt.Sprintf("%d\n%s\n", os.Getpid(), runDir))
	if _, err := f.WriteAt(me, 0); err == nil {
		_ = f.Truncate(int64(len(me)))
	}
	return f, prev, nil
}

// readHolder reads a held lock's holder. The holder writes its name just
// after it took the lock; a reader that came in between waits for it a
// moment. The holder is another process, and a file tells nobody when it
// is written: this polls, briefly (the one sleep of the engine, for an
// external protocol; it runs before any harness starts).
func readHolder(f *os.File) lockHolder {
	deadline := time.Now().Add(200 * time.Millisecond)
	for {
		h := parseHolder(f)
		if h.pid > 0 || time.Now().After(deadline) {
			return h
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func parseHolder(f *os.File) lockHolder {
	b, _ := io.ReadAll(io.NewSectionReader(f, 0, 8192))
	lines := strings.SplitN(string(b), "\n", 3)
	var h lockHolder
	h.pid, _ = strconv.Atoi(strings.TrimSpace(lines[0]))
	if len(lines) > 1 && h.pid > 0 {
		h.runDir = strings.TrimSpace(lines[1])
	}
	return h
}

// release empties and closes the lock files, the last taken first; log,
// when set, hears of a close that failed.
func (l *stepLock) release(log *slog.Logger) {
	for i := len(l.files) - 1; i >= 0; i-- {
		f := l.files[i]
		_ = f.Truncate(0)
		if err := f.Close(); err != nil && log != nil {
			log.Warn("unlock step", "err", err, slog.String("path", f.Name()))
		}
	}
	l.files = nil
}

// unlock releases the step. The files stay, emptied (a pid left in one
// means its holder died): removing them would race with a process that
// opened one and is about to lock it.
func (s *stepRun) unlock() {
	if s.lock == nil {
		return
	}
	s.closeInbox()
	s.rt.letRunDirGo()
	s.lock.release(s.log)
	s.lock = nil
}

// StepHolder reports whether a flower runs step in runDir now (holds its
// lock), and its pid when the lock file names one. It takes nothing: a
// lock it could take is let go at once.
func StepHolder(runDir, step string) (pid int, running bool) {
	h, running := heldBy(lockPath(runDir, step))
	return h.pid, running
}

// Owner is the flower that holds a step's lock, as its lock file names it.
type Owner struct {
	PID    int
	RunDir string // "" when the file names none
	Path   string // the lock file
}

// StepOwner reports the flower that runs step now: the holder of the
// workspace's lock of the step when runDir is "", else of runDir's.
// running is false when no process holds the lock. Like StepHolder it
// takes nothing.
func StepOwner(workspace, runDir, step string) (o Owner, running bool) {
	path := lockPath(runDir, step)
	if runDir == "" {
		path = (&workbench.Workbench{Dir: workbench.DirOf(workspace)}).LockPath(step)
	}
	h, running := heldBy(path)
	return Owner{PID: h.pid, RunDir: h.runDir, Path: path}, running
}

// heldBy reads the lock file at path and tries a shared lock on it, which
// only a holder's exclusive lock refuses.
func heldBy(path string) (h lockHolder, running bool) {
	f, err := diskfile.Open(path, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return h, false
	}
	defer f.Close()
	h = parseHolder(f)
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB); err != nil {
		return h, errors.Is(err, syscall.EWOULDBLOCK)
	}
	_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	return h, false
}
