package interactive

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"time"

	"github.com/flowerhq/flower/front"
)

// MaxHeld bounds the keys a Gate holds while closed; past it the oldest are
// dropped (a person typing 64 KiB into a handoff is leaning on the keyboard).
// It bounds as well the person's keys waiting for a harness that has stopped
// reading its input.
const MaxHeld = 64 << 10

// DefaultTypeTimeout is how long Type waits for the harness to take its
// bytes when the Gate gives no TypeTimeout. A harness that reads its pty
// takes a few keys in microseconds; one that has not taken them in seconds
// has stopped reading.
const DefaultTypeTimeout = 5 * time.Second

var (
	// errNoTarget is returned by Type when no harness is attached.
	errNoTarget = errors.New("no harness to type into")
	// errDetached is returned by Type when the harness was detached before
	// its bytes were written.
	errDetached = errors.New("harness detached before the keys were typed")
	// errStalled is returned by Type when the harness is not reading its
	// input.
	errStalled = errors.New("the harness is not reading its input")
)

// Gate sits between the person's keys and the running harness. Open, keys
// pass straight through. Closed (Hold), they are held, never interleaved with
// what flower types (Type), and Release delivers them, in order, to whatever
// harness is attached by then.
//
// Each attached harness has one writer goroutine, which makes every write to
// it, in the order given, one chunk per write, so one write is never split
// by another. No write is made under the lock Hold, Attach and Held take: a
// harness that stops reading its input (a full pty blocks its writer) stalls
// only its own writer, never the caller that wants to stop it. Close waits
// for the writers.
//
// The zero Gate is ready to use.
type Gate struct {
	// TypeTimeout bounds how long Type waits for its bytes to be written;
	// zero means DefaultTypeTimeout. Set it before the Gate is used.
	TypeTimeout time.Duration
	// Clock runs TypeTimeout (the machine's when nil): the front's, the
	// engine's. Set it before the Gate is used.
	Clock front.Clock

	mu      sync.Mutex
	w       *feeder // the attached harness's writer; nil between harnesses
	held    bool
	buf     []byte
	dropped int
	writers sync.WaitGroup // every feeder's goroutine, for Close
}

// feeder is the writer goroutine of one attached harness, and its queue.
// Every field but to is guarded by the Gate's mu.
type feeder struct {
	to      io.Writer
	cond    sync.Cond // signalled when q grows or stop is set; L is the Gate's mu
	q       []*chunk
	queued  int    // bytes of the person's keys in q
	busy    *chunk // the chunk being written; nil when idle
	stalled bool   // a Type gave up waiting on busy
	err     error  // the write error that ended the feeder
	stop    bool   // detached: write nothing more
}

// chunk is one write: the person's keys, or bytes flower types.
type chunk struct {
	p    []byte
	done chan error // Type's result (buffered); nil for the person's keys
}

// Write takes the person's keys. It never fails and never waits for the
// harness: keys that cannot go anywhere now are held.
func (g *Gate) Write(p []byte) (int, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if f := g.w; !g.held && f != nil && f.err == nil {
		g.enqueueKeys(f, p)
		return len(p), nil
	}
	g.buf = append(g.buf, p...)
	g.trimHeld()
	return len(p), nil
}

// Hold closes the gate: from now on the person's keys wait.
func (g *Gate) Hold() {
	g.mu.Lock()
	g.held = true
	g.mu.Unlock()
}

// Attach makes w the harness keys go to (nil detaches). It does not open the
// gate and does not wait for the previous harness: what was queued for it
// and not yet written comes back (the person's keys are held again, flower's
// typing fails), and its writer ends once its last write returns.
func (g *Gate) Attach(w io.Writer) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.detach()
	if w == nil {
		return
	}
	f := &feeder{to: w}
	f.cond.L = &g.mu
	g.w = f
	g.writers.Add(1)
	go g.feed(f)
}

// Close detaches the harness and waits for every writer the Gate started.
// A writer stuck in a write returns when the harness reads again or its pty
// is hung up (the harness and what it started are gone), so stop the
// harness first. Attach must not be called during Close.
func (g *Gate) Close() {
	g.mu.Lock()
	g.detach()
	g.mu.Unlock()
	g.writers.Wait()
}

// Release opens the gate and hands the held keys to the attached harness's
// writer. With no harness attached they stay held until one is; with one
// whose writes failed they stay held too, and that failure is returned.
func (g *Gate) Release() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.held = false
	f := g.w
	if f == nil || len(g.buf) == 0 {
		return nil
	}
	if f.err != nil {
		return f.err
	}
	g.enqueueKeys(f, g.buf)
	g.buf = nil
	return nil
}

// Type writes flower's own input to the attached harness, open gate or not,
// after whatever was queued for it before, and waits for the write's result,
// at most TypeTimeout. It fails at once when the harness is not reading:
// a previous Type timed out and that write has not returned yet.
func (g *Gate) Type(p []byte) error {
	g.mu.Lock()
	f := g.w
	switch {
	case f == nil:
		g.mu.Unlock()
		return errNoTarget
	case f.err != nil:
		g.mu.Unlock()
		return f.err
	case f.stalled:
		g.mu.Unlock()
		return errStalled
	}
	c := &chunk{p: slices.Clone(p), done: make(chan error, 1)}
	f.q = append(f.q, c)
	f.cond.Signal()
	g.mu.Unlock()

	limit := g.TypeTimeout
	if limit <= 0 {
		limit = DefaultTypeTimeout
	}
	clock := g.Clock
	if clock == nil {
		clock = front.WallClock{}
	}
	timer := clock.NewTimer(limit)
	defer timer.Stop()
	select {
	case err := <-c.done:
		return err
	case <-timer.C():
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	select {
	case err := <-c.done:
		return err
	default:
	}
	// Bytes not yet begun are taken back, so they do not land long after
	// flower gave up on them.
	if i := slices.Index(f.q, c); i >= 0 {
		f.q = slices.Delete(f.q, i, i+1)
	}
	if f.busy != nil {
		f.stalled = true
	}
	return fmt.Errorf("%w: keys not taken within %v", errStalled, limit)
}

// Held reports how many bytes of the person's keys are waiting, and how many
// were dropped for going past MaxHeld.
func (g *Gate) Held() (waiting, dropped int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.buf), g.dropped
}

// feed is f's goroutine: it writes f's queue in order until f is detached
// or a write fails. It holds the Gate's mu except while writing.
func (g *Gate) feed(f *feeder) {
	defer g.writers.Done()
	g.mu.Lock()
	defer g.mu.Unlock()
	for {
		for len(f.q) == 0 && !f.stop {
			f.cond.Wait()
		}
		if f.stop {
			return
		}
		c := f.q[0]
		f.q[0] = nil
		f.q = f.q[1:]
		if c.done == nil {
			f.queued -= len(c.p)
		}
		f.busy = c
		g.mu.Unlock()
		_, err := f.to.Write(c.p)
		g.mu.Lock()
		f.busy, f.stalled = nil, false
		if c.done != nil {
			c.done <- err
		}
		if err == nil {
			continue
		}
		// The harness is going away: what was queued for it comes back,
		// the person's keys to wait for the next one.
		if !f.stop {
			f.err = err
			g.reclaim(f, err)
		}
		if c.done == nil {
			g.buf = append(c.p, g.buf...)
			g.trimHeld()
		}
		return
	}
}

// detach stops the attached feeder and takes its queue back. It does not
// wait: the feeder may be in a write.
func (g *Gate) detach() {
	f := g.w
	if f == nil {
		return
	}
	g.w = nil
	f.stop = true
	g.reclaim(f, errDetached)
	f.cond.Signal()
}

// reclaim empties f's queue: the person's keys go back to the front of the
// held keys (they are older than any held now), flower's typing fails with
// err.
func (g *Gate) reclaim(f *feeder, err error) {
	var keys []byte
	for _, c := range f.q {
		if c.done != nil {
			c.done <- err
		} else {
			keys = append(keys, c.p...)
		}
	}
	f.q, f.queued = nil, 0
	if len(keys) > 0 {
		g.buf = append(keys, g.buf...)
		g.trimHeld()
	}
}

// enqueueKeys queues a copy of the person's keys for f, joined to the last
// chunk when that is keys too, and drops the oldest queued keys past
// MaxHeld (the harness is not reading them).
func (g *Gate) enqueueKeys(f *feeder, p []byte) {
	if len(p) == 0 {
		return
	}
	if n := len(f.q); n > 0 && f.q[n-1].done == nil {
		f.q[n-1].p = append(f.q[n-1].p, p...)
	} else {
		f.q = append(f.q, &chunk{p: slices.Clone(p)})
	}
	f.queued += len(p)
	for over := f.queued - MaxHeld; over > 0; {
		i := slices.IndexFunc(f.q, func(c *chunk) bool { return c.done == nil })
		c := f.q[i]
		cut := min(over, len(c.p))
		c.p = c.p[cut:]
		over -= cut
		f.queued -= cut
		g.dropped += cut
		if len(c.p) == 0 {
			f.q = slices.Delete(f.q, i, i+1)
		}
	}
	f.cond.Signal()
}

// trimHeld drops the oldest held keys past MaxHeld.
func (g *Gate) trimHeld() {
	if over := len(g.buf) - MaxHeld; over > 0 {
		g.dropped += over
		g.buf = append(g.buf[:0], g.buf[over:]...)
	}
}
