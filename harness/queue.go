package harness

import (
	"sync"

	"github.com/flowerhq/flower/transcript"
)

// queue decouples reading stdout from consuming events: the reader never
// blocks on a slow consumer, so a consumer waiting for a control response
// (which the reader delivers) cannot deadlock against it.
type queue struct {
	mu     sync.Mutex
	items  []transcript.Event
	closed bool
	wake   chan struct{}
}

func newQueue() *queue { return &queue{wake: make(chan struct{}, 1)} }

func (q *queue) push(ev transcript.Event) {
	q.mu.Lock()
	q.items = append(q.items, ev)
	q.mu.Unlock()
	q.signal()
}

func (q *queue) close() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	q.signal()
}

func (q *queue) signal() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// pump moves events to out in order and closes out after the last one.
func (q *queue) pump(out chan<- transcript.Event) {
	defer close(out)
	for {
		q.mu.Lock()
		items, closed := q.items, q.closed
		q.items = nil
		q.mu.Unlock()
		for _, ev := range items {
			out <- ev
		}
		if closed && len(items) == 0 {
			return
		}
		if len(items) == 0 {
			<-q.wake
		}
	}
}
