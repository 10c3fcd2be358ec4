package interactive

import (
	"errors"
	"io"
	"sync"
)

// MaxHeld bounds the keys a Gate holds while closed; past it the oldest are
// dropped (a person typing 64 KiB into a handoff is leaning on the keyboard).
const MaxHeld = 64 << 10

// errNoTarget is returned by Type when no harness is attached.
var errNoTarget = errors.New("no harness to type into")

// Gate sits between the person's keys and the running harness. Open, keys
// pass straight through. Closed (Hold), they are held, never interleaved with
// what flower types (Type), and Release delivers them, in order, to whatever
// harness is attached by then. Every write to the harness goes through the
// gate's lock, so one write is never split by another.
type Gate struct {
	mu      sync.Mutex
	target  io.Writer // the harness's pty; nil between harnesses
	held    bool
	buf     []byte
	dropped int
}

// Write takes the person's keys. It never fails: keys that cannot go
// anywhere now are held.
func (g *Gate) Write(p []byte) (int, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.held && g.target != nil {
		if _, err := g.target.Write(p); err == nil {
			return len(p), nil
		}
		// The harness is going away; keep the keys for the next one.
	}
	g.buf = append(g.buf, p...)
	if over := len(g.buf) - MaxHeld; over > 0 {
		g.dropped += over
		g.buf = append(g.buf[:0], g.buf[over:]...)
	}
	return len(p), nil
}

// Hold closes the gate: from now on the person's keys wait.
func (g *Gate) Hold() {
	g.mu.Lock()
	g.held = true
	g.mu.Unlock()
}

// Attach makes w the harness keys go to (nil detaches). It does not open the
// gate.
func (g *Gate) Attach(w io.Writer) {
	g.mu.Lock()
	g.target = w
	g.mu.Unlock()
}

// Release opens the gate and delivers the held keys to the attached harness.
// With no harness attached they stay held until one is.
func (g *Gate) Release() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.held = false
	if g.target == nil || len(g.buf) == 0 {
		return nil
	}
	_, err := g.target.Write(g.buf)
	g.buf = g.buf[:0]
	return err
}

// Type writes flower's own input to the attached harness, open gate or not.
func (g *Gate) Type(p []byte) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.target == nil {
		return errNoTarget
	}
	_, err := g.target.Write(p)
	return err
}

// Held reports how many bytes of the person's keys are waiting, and how many
// were dropped for going past MaxHeld.
func (g *Gate) Held() (waiting, dropped int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.buf), g.dropped
}
