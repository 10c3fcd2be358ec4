package interactive

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/flowerhq/flower/front"
	"github.com/flowerhq/flower/transcript"
)

// input is one thing the harness stated, as follow read it, with the
// moment it was read: a transcript line, its state file's status, the
// session its state file names, a new session in the same process (a
// person's /clear), or its exit.
type input struct {
	at       time.Time
	ev       *transcript.Event
	status   string
	named    string
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

// Translation is the interactive front's translation as Next runs it: the
// queue of what the harness stated (its transcript lines, its state file's
// status, a new session, its exit), each with the moment it was read, and
// their translation into facts (turns), one input at a time as the engine
// asks (DESIGN.md «Screen turns»). A session feeds it from the harness's
// files; package fronttest feeds the same translation scripted lines in
// memory, on the engine's clock, so that the engine's tests run it.
type Translation struct {
	clock front.Clock
	in    *inputs
	// mu guards u (and the session's own state beside it).
	mu sync.Mutex
	u  turns
	// pull, Next's own, holds the facts of the input translated last not
	// yet returned.
	pull front.Pull
	// esc presses Esc for the turn whose prompt showed up after the
	// engine asked to end it; taken runs once an input is translated or
	// something on the clock was done (nil for nothing).
	esc, taken func()
}

// NewTranslation is a translation on clock: a typed prompt not in the
// transcript within submitWithin is given up for lost; resumed, when set,
// is the session running until a line says otherwise; esc presses Esc
// (see Typing).
func NewTranslation(clock front.Clock, log *slog.Logger, submitWithin time.Duration, resumed string, esc func()) *Translation {
	t := &Translation{clock: clock, in: newInputs(), u: turns{log: log, submitWithin: submitWithin, tr: front.Translator{Now: clock.Now}}, esc: esc}
	if resumed != "" {
		t.u.resumed(resumed)
	}
	return t
}

// Line queues a transcript line the harness wrote now.
func (t *Translation) Line(ev transcript.Event) { t.in.add(input{at: t.clock.Now(), ev: &ev}) }

// Status queues what the state file says of the harness now ("busy",
// "idle", …).
func (t *Translation) Status(status string) { t.in.add(input{at: t.clock.Now(), status: status}) }

// Named queues the session the harness's state file names now.
func (t *Translation) Named(sessionID string) {
	t.in.add(input{at: t.clock.Now(), named: sessionID})
}

// Exited queues the harness's exit, after which no input follows.
func (t *Translation) Exited() {
	t.in.add(input{at: t.clock.Now(), exit: true})
	t.in.close()
}

// Interrupt tells the translation the engine ends the running turn: ""
// when an Esc is to be pressed now, else why none is (turns.interrupt). A
// turn whose prompt is on its way gets its Esc (esc) when it shows up.
func (t *Translation) Interrupt() (skip string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.u.interrupt()
}

// Given tells the translation the harness got its first prompt on its
// command line: that prompt is on its way, as a typed one is, until the
// transcript's first prompt line shows up (within the submit timeout), so
// that an Esc asked for meanwhile goes when it does and the exit keys wait
// for its turn. The harness's request for it can leave before its
// transcript is on disk (2.1.332; DESIGN.md «Screen turns»).
func (t *Translation) Given() {
	p := &pendingPrompt{kind: front.TurnWork, first: true}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.u.pending = p
	t.u.typed(p, nil, t.clock.Now())
}

// Typing tells the translation the front is typing prompt as a turn of
// kind; typed, called once the typing is over, says how it went: a prompt
// that could not be typed is no longer awaited, one typed is awaited for
// the submit timeout from then on.
func (t *Translation) Typing(kind front.TurnKind, prompt string) (typed func(error)) {
	p := &pendingPrompt{kind: kind, text: promptText(strings.Join(PasteChunks(prompt), ""))}
	t.mu.Lock()
	t.u.pending = p
	t.mu.Unlock()
	return func(err error) {
		t.mu.Lock()
		t.u.typed(p, err, t.clock.Now())
		t.mu.Unlock()
		// A Next waiting for input learns of the submit timeout now due.
		t.in.poke()
	}
}

// Next is a front.Session's Next: the next fact of the input translated
// last, or of the next one, translated now, in the order the harness
// stated them; a turn's end on the clock (the idle sign) comes in its
// place among them. The engine calls it once it has decided on the fact
// before, so what its commands did on the way (an Esc pressed, a prompt
// typed) is the translation's to know before the next input is read
// (DESIGN.md «Fronts»).
func (s *Translation) Next(ctx context.Context) (front.Fact, error) { return s.pull.Next(ctx, s.step) }

// step translates what comes next: what waits on the clock, if it is due
// before the next input (or now, with none queued); else the next input;
// else it waits for either until ctx is done. After the last input it is
// io.EOF.
func (s *Translation) step(ctx context.Context) error {
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
			return io.EOF
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
func (s *Translation) await(ctx context.Context, next time.Time) error {
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
func (s *Translation) dueAt(now time.Time) {
	s.mu.Lock()
	s.pull.Add(s.u.due(now)...)
	s.mu.Unlock()
	s.afterTake()
}

// take translates one input, and presses the Esc a turn whose prompt was
// on its way is due.
func (s *Translation) take(in input) {
	esc := false
	s.mu.Lock()
	switch {
	case in.ev != nil:
		var facts []front.Fact
		facts, esc = s.u.line(in.ev, in.at)
		s.pull.Add(facts...)
	case in.status != "":
		s.u.sawStatus(in.status, in.at)
	case in.named != "":
		s.pull.Add(s.u.named(in.named)...)
	case in.switched != nil:
		s.u.switched(in.switched.To)
		s.pull.Add(*in.switched)
	case in.exit:
		s.pull.Add(s.u.exited()...)
	}
	s.mu.Unlock()
	s.afterTake()
	if esc && s.esc != nil {
		s.esc()
	}
}

func (s *Translation) afterTake() {
	if s.taken != nil {
		s.taken()
	}
}
