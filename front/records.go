package front

import (
	"context"
	"io"
	"sync"
	"time"

	"github.com/flowerhq/flower/transcript"
)

// Records is the read loop of a front whose harness writes stream-json
// records: the headless front's, and the in-memory harness's of package
// fronttest, which runs this same loop over an in-memory pipe. It is a
// pull, as bufio.Scanner is: Next reads the harness's next record only
// when the engine asks for a fact and none of the last record's is left,
// and translates it then, with a Translator. The engine asks only after it
// has decided on the fact before, so an interrupt it sent on the way is
// the translator's to know before the turn's result is read, whatever the
// timing (DESIGN.md «Fronts»).
type Records struct {
	src <-chan transcript.Event
	// mu guards the translator: Next feeds it, the engine's goroutine
	// tells it of a turn and of an interrupt.
	mu sync.Mutex
	tr Translator
	// running counts the turns sent whose result is not yet translated;
	// an interrupt sent while none runs is no turn's. A count, not a
	// flag: a harness that starts a turn of its own (an application's or
	// a person's) can start it before its last turn's result, read
	// already, is translated.
	running int
	// pull holds the facts of the record read last not yet returned;
	// back, the records Sync took. Only Next and Sync use them.
	pull Pull
	back Backlog
}

// NewRecords reads the records of src, which is closed once the harness
// is gone; now is the engine's clock (Spec.Now).
func NewRecords(src <-chan transcript.Event, now func() time.Time) *Records {
	return &Records{src: src, tr: Translator{Now: now}}
}

// Next implements Session.Next: the next fact of the record read last, or
// of the next record, read and translated now.
func (r *Records) Next(ctx context.Context) (Fact, error) { return r.pull.Next(ctx, r.step) }

func (r *Records) step(ctx context.Context) error {
	ev, ok, err := r.receive(ctx)
	if err != nil {
		return err
	}
	if !ok {
		return io.EOF
	}
	r.translate(&ev)
	return nil
}

// Sync takes from src every record up to the count upTo delivers
// (harness.Process.Drained) and holds them untranslated for Next, which
// returns their facts then even with a done context (front.Syncer). Not
// while Next runs.
func (r *Records) Sync(ctx context.Context, upTo <-chan int) error {
	return r.back.Sync(ctx, r.src, upTo, nil)
}

// receive takes the next record, one held or there already first, even
// when ctx is done.
func (r *Records) receive(ctx context.Context) (transcript.Event, bool, error) {
	if ev, ok := r.back.Held(); ok {
		return ev, true, nil
	}
	select {
	case ev, ok := <-r.src:
		r.back.Took(ok)
		return ev, ok, nil
	default:
	}
	select {
	case ev, ok := <-r.src:
		r.back.Took(ok)
		return ev, ok, nil
	case <-ctx.Done():
		return transcript.Event{}, false, ctx.Err()
	}
}

// Backlog is what a front that reads its harness's records from a pipe
// took of them ahead of Next (Sync), untranslated, with the count of all
// it took, which Sync compares with harness.Process.Drained's. The front
// takes a held record before the pipe's next, and counts each of the
// pipe's (Took).
type Backlog struct {
	held []transcript.Event
	got  int
}

// Sync takes from src every record up to the count upTo delivers, how
// many src had been given when the harness's output was read up to the
// moment asked, and holds them. It ends early when stop closes (nil:
// never) or ctx ends, and once src is closed.
func (b *Backlog) Sync(ctx context.Context, src <-chan transcript.Event, upTo <-chan int, stop <-chan struct{}) error {
	for want := -1; want < 0 || b.got < want; {
		select {
		case n := <-upTo:
			want, upTo = n, nil
		case ev, ok := <-src:
			if !ok {
				return nil // the front reads the end
			}
			b.Took(true)
			b.held = append(b.held, ev)
		case <-stop:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// Held takes the oldest record held, if any.
func (b *Backlog) Held() (transcript.Event, bool) {
	if len(b.held) == 0 {
		return transcript.Event{}, false
	}
	ev := b.held[0]
	b.held[0] = transcript.Event{}
	b.held = b.held[1:]
	return ev, true
}

// Took counts a record the front took from the pipe itself; !ok: the pipe
// was closed, and nothing is counted.
func (b *Backlog) Took(ok bool) {
	if ok {
		b.got++
	}
}

func (r *Records) translate(ev *transcript.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.tr.Facts(ev, func(f Fact) {
		switch f := f.(type) {
		case TurnEnded:
			if r.running > 0 {
				r.running--
			}
		case PromptTaken:
			// A turn sent while one ran, taken into it: the two end in
			// one result. (A harness that counts its turns as it starts
			// them, fronttest's, never counted it.)
			if f.MidTurn && r.running > 1 {
				r.running--
			}
		}
		r.pull.Add(f)
	})
}

// Turn marks a turn as running and runs send, which gives the harness its
// prompt, under the translator's lock: a record read meanwhile is the new
// turn's.
func (r *Records) Turn(send func() error) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.running++
	return send()
}

// Interrupt tells the translator that the front ends the running turn,
// if one runs, and runs send, which gives the harness its interrupt,
// under the same lock: the turn's result then reads as interrupted.
func (r *Records) Interrupt(send func() error) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.running > 0 {
		r.tr.Interrupting()
	}
	return send()
}
