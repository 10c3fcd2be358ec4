package interactive

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"github.com/creack/pty"

	"github.com/flowerhq/flower/harness"
)

// procConfig says how to start one interactive harness.
type procConfig struct {
	Path   string
	Args   []string // flags, before the prompt
	Prompt string   // first prompt, given after "--"; "" for none
	Dir    string
	Env    []string
	Size   *pty.Winsize
	Grace  time.Duration
	Logger *slog.Logger
}

// argv is the harness's command line: its flags, then "--" and the first
// prompt, so a prompt that starts with "-" or follows a variadic flag such as
// --allowedTools is never read as a flag.
func (c procConfig) argv() []string {
	args := append([]string(nil), c.Args...)
	if c.Prompt != "" {
		args = append(args, "--", c.Prompt)
	}
	return args
}

// proc is one harness running in a pty. Its output is copied to a writer
// until it exits, less its goodbye (GoodbyeFilter); its input is the pty,
// written through the Gate.
type proc struct {
	cmd    *exec.Cmd
	pty    *os.File
	out    *GoodbyeFilter
	log    *slog.Logger
	grace  time.Duration
	exited chan struct{} // closed when Wait returned
	copied chan struct{} // closed when the output copy ended
	err    error         // Wait's result, valid after exited
	start  time.Time
	guard  *harness.Guard // nothing of the harness outlives flower, even a SIGKILLed one

	// ptyMu orders Resize (a SIGWINCH, at any moment) after the pty is
	// closed: Setsize reads the descriptor, which Close releases.
	ptyMu     sync.Mutex
	ptyClosed bool
}

// startProc starts the harness in a new pty of the given size, leading its
// own session (so signals to -pid reach its tools too), and copies its
// output to screen.
func startProc(ctx context.Context, cfg procConfig, screen io.Writer) (*proc, error) {
	if cfg.Path == "" {
		return nil, errors.New("start harness: no executable given")
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	grace := cfg.Grace
	if grace <= 0 {
		grace = harness.DefaultGrace
	}
	p := &proc{log: log, grace: grace, exited: make(chan struct{}), copied: make(chan struct{}), guard: harness.NewGuard(),
		out: NewGoodbyeFilter(screen)}
	cmd := exec.CommandContext(ctx, cfg.Path, cfg.argv()...)
	cmd.Dir = cfg.Dir
	cmd.Env = append(cfg.Env[:len(cfg.Env):len(cfg.Env)], p.guard.Env())
	cmd.Cancel = func() error { return p.signal(syscall.SIGTERM) }
	cmd.WaitDelay = grace
	p.cmd = cmd
	var f *os.File
	var err error
	// On the thread that never exits: Pdeathsig is tied to the forking thread.
	harness.Spawn(func() {
		f, err = pty.StartWithAttrs(cmd, cfg.Size, &syscall.SysProcAttr{
			Setsid:  true,
			Setctty: true,
			// If flower dies without cleaning up, the harness goes with it.
			Pdeathsig: syscall.SIGKILL,
		})
	})
	if err != nil {
		return nil, fmt.Errorf("start harness %s: %w", cfg.Path, err)
	}
	p.pty, p.start = f, time.Now()
	// The harness leads a session of its own, so the reaper cannot join its
	// group; it kills by tag (the harness and all it starts carry it).
	p.guard.Watch(0, log)
	// A second Ctrl-C (harness.KillAll) reaches this harness too: its
	// session's group and whatever carries its tag.
	pid := cmd.Process.Pid
	untrack := harness.Track(func() {
		_ = syscall.Kill(-pid, syscall.SIGKILL)
		p.guard.KillTagged()
	})
	log.Debug("interactive harness started", "pid", cmd.Process.Pid, "args", len(cfg.argv()))
	go func() {
		// Linux answers EIO once the last holder of the pty's other end is
		// gone: that, not the process exit, ends the copy, so the final
		// screen reaches the person.
		_, _ = io.Copy(p.out, f)
		_ = p.out.Flush()
		close(p.copied)
	}()
	go func() {
		p.err = cmd.Wait()
		untrack()
		// What the harness left behind (a tool in a session of its own) goes
		// with it.
		if n := p.guard.KillTagged(); n > 0 {
			log.Info("killed processes the harness left behind", "count", n)
		}
		p.guard.KillTaggedLate(log)
		p.guard.Release()
		close(p.exited)
	}()
	return p, nil
}

// PID is the harness's process id.
func (p *proc) PID() int { return p.cmd.Process.Pid }

// Exited is closed once the harness has exited.
func (p *proc) Exited() <-chan struct{} { return p.exited }

// Err is the exit error (nil for status 0); valid after Exited.
func (p *proc) Err() error { return p.err }

func (p *proc) signal(sig syscall.Signal) error {
	// Setsid made the harness a process group leader.
	if err := syscall.Kill(-p.cmd.Process.Pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		return err
	}
	return nil
}

// Resize gives the pty the person's terminal size.
func (p *proc) Resize(ws *pty.Winsize) {
	p.ptyMu.Lock()
	defer p.ptyMu.Unlock()
	if p.ptyClosed {
		return
	}
	if err := pty.Setsize(p.pty, ws); err != nil {
		p.log.Debug("resize pty", "err", err)
	}
}

// Stop ends the harness: the keys a person would use (Ctrl-C twice, written
// by exit through the gate), then SIGTERM, then SIGKILL, each after the
// grace period; then it waits for the output copy to finish (closing the pty
// if a straggler keeps it open) and closes the pty. Safe to call after the
// harness exited on its own. The goodbye it prints meanwhile names a session
// flower is about to retire, and is kept off the screen.
func (p *proc) Stop(exit func() error) {
	p.out.Arm()
	if exit != nil {
		select {
		case <-p.exited:
		default:
			if err := exit(); err != nil {
				p.log.Debug("exit keys", "err", err)
			}
		}
	}
	for _, sig := range []syscall.Signal{0, syscall.SIGTERM, syscall.SIGKILL} {
		if sig != 0 {
			p.log.Warn("harness did not exit; signalling", "signal", sig.String())
			_ = p.signal(sig)
		}
		select {
		case <-p.exited:
			p.closePTY()
			return
		case <-time.After(p.grace):
		}
	}
	<-p.exited
	p.closePTY()
}

// closePTY waits briefly for the rest of the output, then closes the pty.
// Closing hangs up whatever the harness left holding the other end.
func (p *proc) closePTY() {
	select {
	case <-p.copied:
	case <-time.After(time.Second):
	}
	p.ptyMu.Lock()
	p.ptyClosed = true
	_ = p.pty.Close()
	p.ptyMu.Unlock()
	<-p.copied
}
