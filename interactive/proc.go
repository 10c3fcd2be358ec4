package interactive

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/creack/pty"

	"github.com/flowerhq/flower/child"
	"github.com/flowerhq/flower/front"
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

// proc is one harness running in a pty (a child.Process). Its output is
// copied to a writer until it exits, less its goodbye (GoodbyeFilter); its
// input is the pty, written through the Gate.
type proc struct {
	c      *child.Process
	pty    *os.File
	out    *GoodbyeFilter
	log    *slog.Logger
	copied chan struct{} // closed when the output copy ended
	// pasteOn is closed once the harness turned bracketed paste on: its
	// screen reads keys from then on (see the package doc).
	pasteOn chan struct{}
	start   time.Time   // when it started, on the session's clock (set by Launch)
	clock   front.Clock // the session's (set by Launch)

	// ptyMu orders Resize (a SIGWINCH, at any moment) after the pty is
	// closed: Setsize reads the descriptor, which Close releases.
	ptyMu     sync.Mutex
	ptyClosed bool
}

// startProc starts the harness in a new pty of the given size, leading its
// own session, and copies its output to screen.
func startProc(ctx context.Context, cfg procConfig, screen io.Writer) (*proc, error) {
	c, err := child.Start(ctx, child.Config{
		Path: cfg.Path, Args: cfg.argv(), Dir: cfg.Dir, Env: cfg.Env,
		PTY: true, Size: cfg.Size,
		CancelSignal: syscall.SIGTERM, Grace: cfg.Grace, Logger: cfg.Logger,
	})
	if err != nil {
		return nil, fmt.Errorf("start harness: %w", err)
	}
	p := &proc{c: c, pty: c.PTY(), log: c.Logger(), copied: make(chan struct{}), pasteOn: make(chan struct{}),
		out: NewGoodbyeFilter(screen)}
	p.log.Debug("interactive harness started", "pid", c.PID(), "args", len(cfg.argv()), "containment", c.Containment())
	go func() {
		// Linux answers EIO once the last holder of the pty's other end is
		// gone: that, not the process exit, ends the copy, so the final
		// screen reaches the person.
		_, _ = io.Copy(&modeWatch{w: p.out, on: p.pasteOn}, p.pty)
		_ = p.out.Flush()
		close(p.copied)
	}()
	return p, nil
}

// PID is the harness's process id.
func (p *proc) PID() int { return p.c.PID() }

// Exited is closed once the harness has exited and nothing it started is
// left.
func (p *proc) Exited() <-chan struct{} { return p.c.Done() }

// Err is the exit error (nil for status 0); valid after Exited.
func (p *proc) Err() error { return p.c.Err() }

// Kill sends SIGKILL at once to the harness and all it started.
func (p *proc) Kill() { p.c.Kill() }

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
// grace period (child.Process.Stop); then it waits for the output copy to
// finish (closing the pty if a straggler keeps it open) and closes the pty.
// Safe to call after the harness exited on its own. The goodbye it prints
// meanwhile names a session flower is about to retire, and is kept off the
// screen.
func (p *proc) Stop(exit func() error) {
	p.out.Arm()
	p.c.Stop(exit, syscall.SIGTERM, syscall.SIGKILL)
	p.closePTY()
}

// typeExit types the keys that end the harness (Ctrl-C twice, exitGap
// apart) into its own pty, past the gate: for a harness that no longer has
// the gate, since its successor's harness was started beside it.
func (p *proc) typeExit() error {
	p.readsKeys(context.Background(), keysAfter)
	if err := p.write([]byte(keyCtrlC)); err != nil {
		return err
	}
	_ = front.Sleep(context.Background(), p.clockOr(), exitGap)
	return p.write([]byte(keyCtrlC))
}

// readsKeys waits until the harness's screen reads keys (it turned
// bracketed paste on), it exited, ctx ended, or fallback has passed since
// it started. Keys written before its screen is up are lost: a harness
// asked to exit in its first half second would not hear it.
func (p *proc) readsKeys(ctx context.Context, fallback time.Duration) bool {
	select {
	case <-p.pasteOn:
		return true
	default:
	}
	clock := p.clockOr()
	left := fallback
	if !p.start.IsZero() {
		left -= clock.Now().Sub(p.start)
	}
	if left <= 0 {
		return false
	}
	t := clock.NewTimer(left)
	defer t.Stop()
	select {
	case <-p.pasteOn:
		return true
	case <-t.C():
	case <-p.Exited():
	case <-ctx.Done():
	}
	return false
}

func (p *proc) clockOr() front.Clock {
	if p.clock == nil {
		return front.WallClock{}
	}
	return p.clock
}

// write writes keys to the harness's pty, unless it is closed.
func (p *proc) write(b []byte) error {
	p.ptyMu.Lock()
	defer p.ptyMu.Unlock()
	if p.ptyClosed {
		return os.ErrClosed
	}
	_, err := p.pty.Write(b)
	return err
}

// heldScreen keeps what a successor's harness draws while the burned
// harness still has the screen, and passes it on, in order, once opened:
// the terminal then gets the same bytes, in the same order, as when the
// successor started after the burned one was gone.
type heldScreen struct {
	mu     sync.Mutex
	w      io.Writer
	buf    []byte
	opened bool
}

func (h *heldScreen) Write(p []byte) (int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.opened {
		return h.w.Write(p)
	}
	h.buf = append(h.buf, p...)
	return len(p), nil
}

// open writes what was held and passes everything after it straight on.
func (h *heldScreen) open() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.opened = true
	if len(h.buf) > 0 {
		_, _ = h.w.Write(h.buf)
	}
	h.buf = nil
}

// pasteModeOn is what a screen writes to turn bracketed paste on.
const pasteModeOn = "\x1b[?2004h"

// modeWatch passes a harness's output on and closes on once the output has
// turned bracketed paste on. It looks only until then.
type modeWatch struct {
	w    io.Writer
	on   chan struct{}
	tail []byte // the end of the output so far, for a sequence split across writes
	seen bool
}

func (m *modeWatch) Write(p []byte) (int, error) {
	if !m.seen {
		m.tail = append(m.tail, p...)
		if bytes.Contains(m.tail, []byte(pasteModeOn)) {
			m.seen, m.tail = true, nil
			close(m.on)
		} else if n := len(pasteModeOn) - 1; len(m.tail) > n {
			m.tail = append(m.tail[:0], m.tail[len(m.tail)-n:]...)
		}
	}
	return m.w.Write(p)
}

// ptyDrain bounds the wait for the rest of the output once the harness is
// gone. With the harness and all it started gone, nothing holds the pty's
// other end and the copy ends at once (Linux answers EIO); the bound is for
// a holder that escaped, which closing the pty then hangs up.
const ptyDrain = time.Second

// closePTY waits briefly for the rest of the output, then closes the pty.
// Closing hangs up whatever the harness left holding the other end.
func (p *proc) closePTY() {
	clock := p.clock
	if clock == nil {
		clock = front.WallClock{}
	}
	t := clock.NewTimer(ptyDrain)
	defer t.Stop()
	select {
	case <-p.copied:
	case <-t.C():
	}
	p.ptyMu.Lock()
	p.ptyClosed = true
	_ = p.pty.Close()
	p.ptyMu.Unlock()
	<-p.copied
}
