package harness

import (
	"sync"

	"github.com/flowerhq/flower/transcript"
)

// queueCap bounds the events read ahead of the consumer. Each holds its
// line (Raw), and tool results make lines of tens of kilobytes: a reader
// that ran ahead without bound would hold as much of the stream as the
// consumer lags behind, so the resident set would grow with the stream
// (make bench-e2e measures it). Past the bound the reader waits, and the
// harness waits on its stdout pipe.
const queueCap = 16

// queue decouples reading stdout from consuming events. Control responses
// do not go through it (the reader hands them to their caller), so a
// consumer waiting for one while it also consumes events cannot deadlock
// against the reader; one that waits without consuming waits until its own
// context ends, and Stop drains what nobody reads.
type queue struct {
	mu     sync.Mutex
	items  []transcript.Event
	closed bool
	wake   chan struct{} // an item or the close arrived
	room   chan struct{} // the pump took items
}

func newQueue() *queue {
	return &queue{wake: make(chan struct{}, 1), room: make(chan struct{}, 1)}
}

func (q *queue) push(ev transcript.Event) {
	for {
		q.mu.Lock()
		if len(q.items) < queueCap {
			q.items = append(q.items, ev)
			q.mu.Unlock()
			signal(q.wake)
			return
		}
		q.mu.Unlock()
		<-q.room
	}
}

func (q *queue) close() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	signal(q.wake)
}

func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
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
		signal(q.room)
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
