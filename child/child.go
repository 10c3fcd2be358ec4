// Package child owns one child process of flower and everything that child
// starts: starting it (with pipes, or in a pty of its own), signalling it,
// stopping it in stages, waiting for it, and the guarantee that nothing it
// started outlives it or flower, whatever it does to its session, its
// environment or its process group. Every front starts its harness here.
//
// How the guarantee is kept depends on the platform (DESIGN.md «Signals and
// orphans»):
//   - on Linux, where a cgroup v2 of its own can be made, the child is
//     born in it (clone3 CLONE_INTO_CGROUP), so are all its descendants, and
//     killing is cgroup.kill; a guard process outside the cgroup kills it
//     when flower's end of a pipe closes, however flower died;
//   - elsewhere on Linux, flower is a child subreaper: orphans of the child
//     reparent to flower, which kills and reaps them with the child's
//     process group; the child has the parent-death signal, and the guard
//     kills its group when flower dies;
//   - on macOS, the process group only: the guard kills it when flower
//     dies.
package child

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"github.com/creack/pty"
)

// DefaultGrace bounds each stage of stopping a child when no grace is given.
const DefaultGrace = 5 * time.Second

// EnvTag is set in the child's environment to a value unique to its
// Process. Every process the child starts inherits it unless it clears its
// environment. Where no cgroup can be made it is one way to find a
// descendant that left the child's process group (the real harness runs
// each Bash command in a session of its own); tests use it to find what a
// harness left.
const EnvTag = "FLOWER_HARNESS_TAG"

// Config says how to start one child.
type Config struct {
	Path string
	Args []string
	Dir  string
	// Env is the complete environment; nil means this program's. The tag
	// (EnvTag) is added.
	Env []string
	// With pipes: the child's standard files (nil: the null device). They
	// are the child's own: the caller closes its copies of the child's ends
	// after Start.
	Stdin, Stdout, Stderr *os.File
	// PTY: the child runs in a new pty of the given Size (nil: the pty's
	// default), leading a session of its own with the pty as its
	// controlling terminal; Stdin, Stdout and Stderr are ignored.
	PTY  bool
	Size *pty.Winsize
	// CancelSignal goes to the child's process group when the context is
	// done (SIGINT when zero); if the child has not exited after Grace, it
	// gets SIGKILL.
	CancelSignal syscall.Signal
	// Grace bounds each stage of Stop (DefaultGrace when zero).
	Grace  time.Duration
	Logger *slog.Logger
}

// Process is one running child. Done is closed once the child has exited
// and nothing it started is left.
type Process struct {
	cmd   *exec.Cmd
	pty   *os.File
	log   *slog.Logger
	grace time.Duration
	tag   string
	box   box
	guard *guard

	exited chan struct{} // closed when Wait has returned
	done   chan struct{} // closed when everything of the child is gone
	err    error         // Wait's result, valid after exited
	left   int           // processes killed after the child exited, valid after done

	stopOnce sync.Once
}

// Start starts the child. The context bounds its life (see
// Config.CancelSignal).
func Start(ctx context.Context, cfg Config) (*Process, error) {
	if cfg.Path == "" {
		return nil, errors.New("no executable given")
	}
	cfg = cfg.withDefaults()
	p := &Process{log: cfg.Logger, grace: cfg.Grace, tag: newTag(), exited: make(chan struct{}), done: make(chan struct{})}
	b, err := newBox(p.log)
	if err != nil {
		return nil, err
	}
	f, startErr := p.spawnIn(ctx, cfg, b)
	if startErr != nil && b.fallible() && refusedBox(startErr) {
		// The kernel may have refused the cgroup (no clone3, no right to
		// move a process there): the way down, if that starts it.
		b.release()
		b = fallbackBox(p.log)
		first := startErr
		if f, startErr = p.spawnIn(ctx, cfg, b); startErr == nil {
			p.log.Info("the child could not be started in a cgroup; process group instead", "err", first)
		}
	}
	if startErr != nil {
		b.release()
		return nil, startErr
	}
	p.box, p.pty = b, f
	pid := p.cmd.Process.Pid
	b.started(pid, p.tag)
	addOurs(pid)
	p.guard = startGuard(b, pid, p.tag, cfg.PTY, p.log)
	go p.reap(b, pid, track(p.Kill))
	return p, nil
}

// withDefaults fills in what cfg left out: no log, the default grace,
// SIGINT to cancel, this process's environment.
func (cfg Config) withDefaults() Config {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Grace <= 0 {
		cfg.Grace = DefaultGrace
	}
	if cfg.CancelSignal == 0 {
		cfg.CancelSignal = syscall.SIGINT
	}
	if cfg.Env == nil {
		cfg.Env = os.Environ()
	}
	return cfg
}

// spawnIn starts the child in box b: in a pty leading its own session, or
// in a process group of its own with the given files.
func (p *Process) spawnIn(ctx context.Context, cfg Config, b box) (f *os.File, err error) {
	cmd := exec.CommandContext(ctx, cfg.Path, cfg.Args...)
	cmd.Dir = cfg.Dir
	cmd.Env = append(cfg.Env[:len(cfg.Env):len(cfg.Env)], EnvTag+"="+p.tag)
	cmd.Cancel = func() error { return p.Signal(cfg.CancelSignal) }
	cmd.WaitDelay = cfg.Grace
	attr := &syscall.SysProcAttr{}
	if cfg.PTY {
		attr.Setsid, attr.Setctty = true, true
	} else {
		attr.Setpgid = true
		cmd.Stdin, cmd.Stdout, cmd.Stderr = cfg.Stdin, cfg.Stdout, cfg.Stderr
	}
	b.prepare(attr)
	p.cmd = cmd
	// On the thread that never exits: the parent-death signal is tied to
	// the thread that forks.
	spawn(func() {
		if cfg.PTY {
			f, err = pty.StartWithAttrs(cmd, cfg.Size, attr)
		} else {
			cmd.SysProcAttr = attr
			err = cmd.Start()
		}
	})
	return f, err
}

// reap waits for the child, then clears whatever it left (a tool's
// process, in its group or a session of its own) and releases its box.
func (p *Process) reap(b box, pid int, untrack func()) {
	p.err = p.cmd.Wait()
	dropOurs(pid)
	close(p.exited)
	p.left = b.clear(pid, p.tag, p.grace)
	if p.left > 0 {
		p.log.Info("killed processes the child left behind", "pid", pid, "count", p.left)
	}
	p.guard.release()
	b.release()
	untrack()
	close(p.done)
}

// refusedBox reports whether a failed start may be the box's doing rather
// than the executable's (which is missing, say): an errno that clone3 into
// a cgroup gives. Not executable (EACCES) is among them, and is tried twice.
func refusedBox(err error) bool {
	for _, errno := range []syscall.Errno{syscall.ENOSYS, syscall.EOPNOTSUPP, syscall.EBUSY, syscall.EPERM, syscall.EACCES, syscall.EINVAL} {
		if errors.Is(err, errno) {
			return true
		}
	}
	return false
}

// PID returns the child's process id, which is also its process group id.
func (p *Process) PID() int { return p.cmd.Process.Pid }

// Grace is the grace period of each stage of Stop, as Config gave it or
// the default.
func (p *Process) Grace() time.Duration { return p.grace }

// Logger is the logger Config gave, or one that discards.
func (p *Process) Logger() *slog.Logger { return p.log }

// PTY returns flower's side of the pty, the master (nil for a child with
// pipes). The caller closes it.
func (p *Process) PTY() *os.File { return p.pty }

// Exited is closed when the child itself has exited; what it left may still
// be being killed.
func (p *Process) Exited() <-chan struct{} { return p.exited }

// Done is closed once the child has exited and nothing it started is left.
func (p *Process) Done() <-chan struct{} { return p.done }

// Err returns how the child exited (nil for status 0). Valid after Exited.
func (p *Process) Err() error { return p.err }

// Containment names how the child's descendants are held: "cgroup",
// "subreaper" or "group" (DESIGN.md «Signals and orphans»).
func (p *Process) Containment() string { return p.box.name() }

// Signal sends sig to the child's process group. Once the child has exited
// it does nothing: the group may be gone and its id reused.
func (p *Process) Signal(sig syscall.Signal) error {
	select {
	case <-p.exited:
		return nil
	default:
	}
	err := syscall.Kill(-p.cmd.Process.Pid, sig)
	if errors.Is(err, syscall.ESRCH) {
		return nil
	}
	return err
}

// Kill sends SIGKILL at once to the child and everything it started. Safe to
// call at any time, more than once.
func (p *Process) Kill() {
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.Signal(syscall.SIGKILL)
	p.box.kill()
}

// Stop ends the child in stages: first (closing its input, typing its exit
// keys), then after each grace period the next signal of signals to its
// process group, as long as the child has not exited. It returns once the
// child and everything it started are gone. Safe to call more than once and
// concurrently, and after the child exited on its own.
func (p *Process) Stop(first func() error, signals ...syscall.Signal) {
	p.stopOnce.Do(func() {
		select {
		case <-p.exited:
			return
		default:
		}
		if first != nil {
			if err := first(); err != nil {
				p.log.Debug("first stage of stop", "err", err)
			}
		}
		for _, sig := range signals {
			select {
			case <-p.exited:
				return
			case <-time.After(p.grace):
				p.log.Warn("child did not exit, signalling its group", "pid", p.PID(), "signal", sig.String())
				_ = p.Signal(sig)
			}
		}
	})
	<-p.done
}

// live holds a killer for every child this program started that is still
// running, so that KillAll can reach them all from a signal handler.
var live = struct {
	sync.Mutex
	m map[*func()]struct{}
}{m: map[*func()]struct{}{}}

func track(kill func()) (untrack func()) {
	k := &kill
	live.Lock()
	defer live.Unlock()
	live.m[k] = struct{}{}
	return func() {
		live.Lock()
		defer live.Unlock()
		delete(live.m, k)
	}
}

// Live is how many children this program started are still running.
func Live() int {
	live.Lock()
	defer live.Unlock()
	return len(live.m)
}

// KillAll sends SIGKILL at once to every child this program started that is
// still running, and to all they started, and returns how many children it
// reached. It is what a second Ctrl-C does: each Process then ends as if its
// child had crashed.
func KillAll() int {
	live.Lock()
	defer live.Unlock()
	for kill := range live.m {
		(*kill)()
	}
	return len(live.m)
}
