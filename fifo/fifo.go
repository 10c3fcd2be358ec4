// Package fifo owns an unbounded queue for one reader that waits: what a
// client of a harness's protocol (codexrpc, acp) holds what it read in,
// so that reading the harness's output never waits on the client's
// caller, and what a scripted harness in a test hands out.
package fifo

import (
	"context"
	"io"
	"sync"
)

// Queue holds items in order, unbounded, for one reader. Its zero value
// is ready to use.
type Queue[T any] struct {
	mu     sync.Mutex
	items  []T
	closed bool
	wake   chan struct{}
}

func (q *Queue[T]) init() {
	if q.wake == nil {
		q.wake = make(chan struct{}, 1)
	}
}

// Push adds items at the end.
func (q *Queue[T]) Push(items ...T) {
	q.mu.Lock()
	q.init()
	q.items = append(q.items, items...)
	q.mu.Unlock()
	q.signal()
}

// Close says no more come: Next returns io.EOF once the rest is taken.
func (q *Queue[T]) Close() {
	q.mu.Lock()
	q.init()
	q.closed = true
	q.mu.Unlock()
	q.signal()
}

func (q *Queue[T]) signal() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// Next returns the first item, waiting for one until ctx is done; one
// that is there already is returned even then.
func (q *Queue[T]) Next(ctx context.Context) (T, error) {
	var zero T
	for {
		q.mu.Lock()
		q.init()
		if len(q.items) > 0 {
			it := q.items[0]
			q.items[0] = zero
			q.items = q.items[1:]
			q.mu.Unlock()
			return it, nil
		}
		closed, wake := q.closed, q.wake
		q.mu.Unlock()
		if closed {
			return zero, io.EOF
		}
		select {
		case <-wake:
		case <-ctx.Done():
			select {
			case <-wake:
			default:
				return zero, ctx.Err()
			}
		}
	}
}
