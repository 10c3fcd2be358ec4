package interactive

import (
	"context"
	"io"
	"sync"
	"time"

	"github.com/flowerhq/flower/front"
	"github.com/flowerhq/flower/transcript"
)

// input is one thing the harness stated, as follow read it, with the
// moment it was read: a transcript line, its state file's status, a new
// session in the same process (a person's /clear), or its exit.
type input struct {
	at       time.Time
	ev       *transcript.Event
	status   string
	switched *front.SessionSwitched
	exit     bool
}

// inputs is the queue from follow, which must keep reading (see follow),
// to Next, which translates (DESIGN.md «Screen turns»). add never waits.
type inputs struct {
	mu     sync.Mutex
	q      []input
	closed bool
	ready  chan struct{}
}

func newInputs() *inputs { return &inputs{ready: make(chan struct{}, 1)} }

func (q *inputs) add(in input) {
	q.mu.Lock()
	q.q = append(q.q, in)
	q.mu.Unlock()
	q.poke()
}

// close says no input follows.
func (q *inputs) close() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	q.poke()
}

// peek is the first input queued; ok false when none is; closed: none
// will be.
func (q *inputs) peek() (in input, ok, closed bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.q) == 0 {
		return input{}, false, q.closed
	}
	return q.q[0], true, false
}

func (q *inputs) drop() {
	q.mu.Lock()
	q.q[0] = input{}
	q.q = q.q[1:]
	q.mu.Unlock()
}

func (q *inputs) poke() {
	select {
	case q.ready <- struct{}{}:
	default:
	}
}

// Next implements front.Session: the next fact of the input translated
// last, or of the next one, translated now, in the order the harness
// stated them; a turn's end on the clock (the idle sign) comes in its
// place among them. The engine calls it once it has decided on the fact
// before, so what its commands did on the way (an Esc pressed, a prompt
// typed) is the translation's to know before the next input is read
// (DESIGN.md «Fronts»).
func (s *session) Next(ctx context.Context) (front.Fact, error) {
	for len(s.left) == 0 {
		if s.eof {
			return nil, io.EOF
		}
		if err := s.step(ctx); err != nil {
			return nil, err
		}
	}
	f := s.left[0]
	s.left[0] = nil
	s.left = s.left[1:]
	return f, nil
}

// step translates what comes next: what waits on the clock, if it is due
// before the next input (or now, with none queued); else the next input;
// else it waits for either until ctx is done.
func (s *session) step(ctx context.Context) error {
	for {
		in, ok, closed := s.in.peek()
		s.mu.Lock()
		next := s.u.next()
		s.mu.Unlock()
		now := s.clock.Now()
		switch {
		case !next.IsZero() && ok && !next.After(in.at):
			s.dueAt(next)
			return nil
		case ok:
			s.in.drop()
			s.take(in)
			return nil
		case closed:
			s.eof = true
			return nil
		case !next.IsZero() && !next.After(now):
			s.dueAt(now)
			return nil
		}
		if err := s.await(ctx, next); err != nil {
			return err
		}
	}
}

// await waits for an input, the moment next (zero for none) on the clock,
// or ctx's end.
func (s *session) await(ctx context.Context, next time.Time) error {
	var due <-chan time.Time
	if !next.IsZero() {
		t := s.clock.NewTimer(next.Sub(s.clock.Now()))
		defer t.Stop()
		due = t.C()
	}
	select {
	case <-s.in.ready:
	case <-due:
	case <-ctx.Done():
		if _, ok, closed := s.in.peek(); ok || closed {
			return nil // an input came as ctx ended
		}
		return ctx.Err()
	}
	return nil
}

// dueAt runs what waits on the clock, at now (turns.due).
func (s *session) dueAt(now time.Time) {
	s.mu.Lock()
	s.left = append(s.left, s.u.due(now)...)
	s.mu.Unlock()
	s.nudge()
}

// take translates one input, and presses the Esc a turn whose prompt was
// on its way is due.
func (s *session) take(in input) {
	esc := false
	s.mu.Lock()
	switch {
	case in.ev != nil:
		var facts []front.Fact
		facts, esc = s.u.line(in.ev, in.at)
		s.left = append(s.left, facts...)
	case in.status != "":
		s.u.sawStatus(in.status, in.at)
	case in.switched != nil:
		s.u.switched(in.switched.To)
		s.left = append(s.left, *in.switched)
	case in.exit:
		s.left = append(s.left, s.u.exited()...)
	}
	s.mu.Unlock()
	s.nudge() // follow's key release and exit keys look at the translation
	if esc {
		s.log.Info("ending the turn: Esc, now that its prompt showed up")
		if err := s.f.gate.Type([]byte(keyEsc)); err != nil {
			s.log.Debug("esc", "err", err)
		}
	}
}
