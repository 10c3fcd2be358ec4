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

	"github.com/flowerhq/flower/runlog"

	"github.com/flowerhq/flower/workbench"
)

// ErrStepBusy is wrapped by the *BusyError of a step another process is
// running in the same run directory.
var ErrStepBusy = errors.New("step is being run by another flower")

// BusyError refuses a second run of a step: one run directory and step
// belong to one process at a time.
type BusyError struct {
	Step   string
	RunDir string
	PID    int // the holder's pid; 0 if it could not be read
}

// Error describes the failure; it is what a person sees.
func (e *BusyError) Error() string {
	holder := "another flower"
	if e.PID > 0 {
		holder = fmt.Sprintf("flower pid %d", e.PID)
	}
	return fmt.Sprintf("step %s in %s is being run by %s: wait for it to finish, or stop it (Ctrl-C, or kill %s) and use flower continue",
		e.Step, e.RunDir, holder, pidOr(e.PID))
}

// Unwrap makes errors.Is(err, ErrStepBusy) true.
func (e *BusyError) Unwrap() error { return ErrStepBusy }

func pidOr(pid int) string {
	if pid > 0 {
		return strconv.Itoa(pid)
	}
	return "it"
}

// stepLock is an exclusive flock(2) on <run dir>/step-<safe name>.lock,
// which holds the holder's pid. The kernel drops the lock when its holder
// dies, however it dies, so a lock left behind by a killed flower is simply
// taken by the next one; the pid in the file only names the holder.
type stepLock struct {
	f *os.File
}

func lockPath(runDir, step string) string {
	return filepath.Join(runDir, "step-"+workbench.SafeStepName(step)+".lock")
}

// lockStep takes the step's lock and returns the stepRun that holds it.
func (rt *Runtime) lockStep(name string) (*stepRun, error) {
	l, prev, err := acquireLock(rt.opts.RunDir, name)
	if err != nil {
		return nil, err
	}
	ls := runlog.NewState()
	s := &stepRun{rt: rt, log: runlog.New(rt.log, ls, name), lock: l, logState: ls}
	s.openInbox(name)
	if prev > 0 && prev != os.Getpid() {
		msg := fmt.Sprintf("took over the lock of step %s left by pid %d, which no longer runs it", name, prev)
		s.log.Warn(msg)
		rt.emit(Event{Kind: KindNotice, Step: name, Text: msg})
	}
	return s, nil
}

// acquireLock takes the lock without waiting. prev is the pid the file
// named before (a holder that died), 0 if none.
func acquireLock(runDir, step string) (l *stepLock, prev int, err error) {
	path := lockPath(runDir, step)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, 0, fmt.Errorf("lock step %s: %w", step, err)
	}
	pid := readPID(f)
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, 0, &BusyError{Step: step, RunDir: runDir, PID: pid}
		}
		return nil, 0, fmt.Errorf("lock step %s: %w", step, err)
	}
	// Ours now: name ourselves for whoever is refused next.
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return &stepLock{f: f}, pid, nil
}

func readPID(f *os.File) int {
	b, _ := io.ReadAll(io.NewSectionReader(f, 0, 32))
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return pid
}

// unlock releases the step. The file stays, emptied (a pid left in it
// means its holder died): removing it would race with a process that opened
// it and is about to lock it.
func (s *stepRun) unlock() {
	if s.lock == nil {
		return
	}
	s.closeInbox()
	_ = s.lock.f.Truncate(0)
	if err := s.lock.f.Close(); err != nil {
		s.log.Warn("unlock step", "err", err, slog.String("path", s.lock.f.Name()))
	}
	s.lock = nil
}

// StepHolder reports whether a flower runs step in runDir now (holds its
// lock), and its pid when the lock file names one. It takes nothing: a
// lock it could take is let go at once.
func StepHolder(runDir, step string) (pid int, running bool) {
	f, err := os.OpenFile(lockPath(runDir, step), os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return 0, false
	}
	defer f.Close()
	pid = readPID(f)
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB); err != nil {
		return pid, errors.Is(err, syscall.EWOULDBLOCK)
	}
	_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	return pid, false
}
