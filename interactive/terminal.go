package interactive

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/creack/pty"
	"golang.org/x/term"
)

// ErrNotTerminal is returned when interactive mode is asked for without a
// terminal to run it on.
var ErrNotTerminal = errors.New("interactive mode needs a terminal")

// Terminal is the person's terminal. While a harness owns the screen it is
// in raw mode, so every key reaches the harness untouched; Restore puts back
// the mode it had, and is safe to call from any goroutine, any number of
// times (the signal handler, a deferred call and a panic may all try).
type Terminal struct {
	in  *os.File  // the terminal's input; its modes and size are read here
	out io.Writer // the screen

	mu    sync.Mutex
	saved *term.State // the mode before MakeRaw; nil while not raw
}

// NewTerminal returns the terminal whose input is in and whose screen is out.
// in must be a terminal.
func NewTerminal(in *os.File, out io.Writer) (*Terminal, error) {
	if in == nil || !term.IsTerminal(int(in.Fd())) {
		return nil, ErrNotTerminal
	}
	return &Terminal{in: in, out: out}, nil
}

// MakeRaw puts the terminal in raw mode, remembering the mode to restore.
// Calling it while already raw does nothing.
func (t *Terminal) MakeRaw() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.saved != nil {
		return nil
	}
	st, err := term.MakeRaw(int(t.in.Fd()))
	if err != nil {
		return fmt.Errorf("raw mode: %w", err)
	}
	t.saved = st
	return nil
}

// saneModes switches off what a harness that died without cleaning up may
// have left on: bracketed paste, focus reports, mouse reports, the kitty
// keyboard protocol, a hidden cursor. Terminals ignore what they do not know.
const saneModes = "\x1b[?2004l\x1b[?1004l\x1b[?1000l\x1b[?1002l\x1b[?1003l\x1b[?1006l\x1b[<u\x1b[?25h"

// Restore puts back the mode MakeRaw saved and resets the modes a harness
// may have left on. It does nothing when the terminal is not raw.
func (t *Terminal) Restore() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.saved == nil {
		return nil
	}
	_, _ = io.WriteString(t.out, saneModes)
	err := term.Restore(int(t.in.Fd()), t.saved)
	t.saved = nil
	if err != nil {
		return fmt.Errorf("restore terminal: %w", err)
	}
	return nil
}

// Raw reports whether the terminal is in raw mode by flower's doing.
func (t *Terminal) Raw() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.saved != nil
}

// Size is the terminal's size now; a terminal that will not say gets 80x24.
func (t *Terminal) Size() *pty.Winsize {
	ws, err := pty.GetsizeFull(t.in)
	if err != nil || ws.Rows == 0 || ws.Cols == 0 {
		return &pty.Winsize{Rows: 24, Cols: 80}
	}
	return ws
}
