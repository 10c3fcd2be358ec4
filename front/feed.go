package front

import (
	"context"
	"io"
	"sync"
)

// Feed is a queue of facts, for a front whose facts come from goroutines
// of its own rather than from records read in Next (Records): the
// harness's own screen, watched through its files. Add never waits; Next
// returns the facts in order. Such a front reads ahead of the engine's
// decisions, so what an engine's command changes in its reading (an
// interrupt's mark on the running turn) it sets under its own lock, in
// the command (DESIGN.md «Fronts»).
type Feed struct {
	mu     sync.Mutex
	q      []Fact
	closed bool
	ready  chan struct{}
}

// NewFeed returns an empty feed.
func NewFeed() *Feed { return &Feed{ready: make(chan struct{}, 1)} }

// Add queues facts, in order.
func (f *Feed) Add(facts ...Fact) {
	f.mu.Lock()
	f.q = append(f.q, facts...)
	f.mu.Unlock()
	f.poke()
}

// Close says that no fact follows: Next returns io.EOF once the queue is
// empty.
func (f *Feed) Close() {
	f.mu.Lock()
	f.closed = true
	f.mu.Unlock()
	f.poke()
}

// Next implements Session.Next: the next fact queued, waiting for one
// until ctx is done; one already queued is returned even then.
func (f *Feed) Next(ctx context.Context) (Fact, error) {
	for {
		f.mu.Lock()
		if len(f.q) > 0 {
			x := f.q[0]
			f.q[0] = nil
			f.q = f.q[1:]
			f.mu.Unlock()
			return x, nil
		}
		closed := f.closed
		f.mu.Unlock()
		if closed {
			return nil, io.EOF
		}
		select {
		case <-f.ready:
		case <-ctx.Done():
			select {
			case <-f.ready:
				continue // a fact came as ctx ended
			default:
			}
			return nil, ctx.Err()
		}
	}
}

func (f *Feed) poke() {
	select {
	case f.ready <- struct{}{}:
	default:
	}
}
