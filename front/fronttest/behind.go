package fronttest

import (
	"context"
	"sync"
	"time"

	"github.com/flowerhq/flower/transcript"
)

// lagPipe is the pipe of a front whose reader is behind: the harness
// writes without waiting for the front, and a reader of the front's own
// hands each record on lag after it was written, as the headless front's
// stdout reader runs apart from Next.
type lagPipe struct {
	lag     time.Duration
	mu      sync.Mutex
	unread  []lagged
	written int
	closed  bool
	wake    chan struct{}
}

type lagged struct {
	ev transcript.Event
	at time.Time // when it was written
}

func newLagPipe(lag time.Duration) *lagPipe {
	return &lagPipe{lag: lag, wake: make(chan struct{}, 1)}
}

func (p *lagPipe) write(ev transcript.Event) {
	p.mu.Lock()
	p.unread = append(p.unread, lagged{ev, time.Now()})
	p.written++
	p.mu.Unlock()
	p.signal()
}

func (p *lagPipe) close() {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	p.signal()
}

func (p *lagPipe) signal() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// next waits for the next record written; false once the pipe is closed
// and read, or the harness killed.
func (p *lagPipe) next(kill <-chan struct{}) (lagged, bool) {
	for {
		p.mu.Lock()
		if len(p.unread) > 0 {
			l := p.unread[0]
			p.unread = p.unread[1:]
			p.mu.Unlock()
			return l, true
		}
		closed := p.closed
		p.mu.Unlock()
		if closed {
			return lagged{}, false
		}
		select {
		case <-p.wake:
		case <-kill:
			return lagged{}, false
		}
	}
}

// read is the front's reader: each record reaches the front's pipe
// (events) the lag after it was written; what a kill leaves is lost.
func (s *session) read() {
	defer close(s.events)
	for {
		l, ok := s.lag.next(s.kill)
		if !ok {
			return
		}
		time.Sleep(time.Until(l.at.Add(s.lag.lag)))
		ev := l.ev
		select {
		case s.events <- ev:
		case <-s.kill:
			return
		}
	}
}

// Sync implements front.Syncer, as the headless front does: every record
// the harness wrote so far is taken by the front's read loop
// (front.Records.Sync). A session the front reads in step with Next has
// taken them all already.
func (s *session) Sync(ctx context.Context) error {
	if s.lag == nil {
		return nil
	}
	s.lag.mu.Lock()
	upTo := make(chan int, 1)
	upTo <- s.lag.written
	s.lag.mu.Unlock()
	return s.rec.Sync(ctx, upTo)
}
