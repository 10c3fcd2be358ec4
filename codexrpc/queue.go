package codexrpc

import (
	"context"
	"io"
	"sync"
)

// Queue holds notifications in order, unbounded, for one reader: the
// client's, so that reading stdout never waits on its caller, and a
// scripted app-server's in the tests. Its zero value is ready to use.
type Queue struct {
	mu     sync.Mutex
	items  []Notification
	closed bool
	wake   chan struct{}
}

func (q *Queue) init() {
	if q.wake == nil {
		q.wake = make(chan struct{}, 1)
	}
}

// Push adds notifications at the end.
func (q *Queue) Push(ns ...Notification) {
	q.mu.Lock()
	q.init()
	q.items = append(q.items, ns...)
	q.mu.Unlock()
	q.signal()
}

// Close says no more come: Next returns io.EOF once the rest is taken.
func (q *Queue) Close() {
	q.mu.Lock()
	q.init()
	q.closed = true
	q.mu.Unlock()
	q.signal()
}

func (q *Queue) signal() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// Next returns the first notification, waiting for one until ctx is done;
// one that is there already is returned even then.
func (q *Queue) Next(ctx context.Context) (Notification, error) {
	for {
		q.mu.Lock()
		q.init()
		if len(q.items) > 0 {
			n := q.items[0]
			q.items[0] = Notification{}
			q.items = q.items[1:]
			q.mu.Unlock()
			return n, nil
		}
		closed, wake := q.closed, q.wake
		q.mu.Unlock()
		if closed {
			return Notification{}, io.EOF
		}
		select {
		case <-wake:
		case <-ctx.Done():
			select {
			case <-wake:
			default:
				return Notification{}, ctx.Err()
			}
		}
	}
}
