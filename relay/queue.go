package relay

import (
	"strings"
	"sync"

	"github.com/flowerhq/flower/front"
)

// queue hands facts to the engine in order without ever blocking the one
// who pushes: the relay's reader must go on passing the application's
// callbacks while the engine is busy elsewhere (probing the session, say).
type queue struct {
	mu     sync.Mutex
	items  []front.Fact
	n      int // facts pushed so far
	closed bool
	wake   chan struct{}
	out    chan front.Fact
}

func newQueue() *queue {
	return &queue{wake: make(chan struct{}, 1), out: make(chan front.Fact)}
}

// push adds facts and returns the number of the last one (1 for the
// first fact ever pushed); with none, the number of the last fact so far.
func (q *queue) push(facts ...front.Fact) int {
	q.mu.Lock()
	q.items = append(q.items, facts...)
	q.n += len(facts)
	n := q.n
	q.mu.Unlock()
	q.signal()
	return n
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

// pump moves facts to out and closes it after the last one.
func (q *queue) pump() {
	defer close(q.out)
	for {
		q.mu.Lock()
		items, closed := q.items, q.closed
		q.items = nil
		q.mu.Unlock()
		for _, f := range items {
			q.out <- f
		}
		if closed && len(items) == 0 {
			return
		}
		if len(items) == 0 {
			<-q.wake
		}
	}
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}
