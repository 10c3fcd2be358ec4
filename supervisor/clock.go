package supervisor

import (
	"time"

	"github.com/flowerhq/flower/front"
)

// Clock is the engine's time (front.Clock, which the fronts' own timing
// rules share). Every timer and deadline of the engine runs on it: the
// turn, the cut, the writing turn, the successor's start, the
// context-usage request, the wait for a stopping harness, a limit's wait
// (DESIGN.md «Engine states»). Options.Clock gives it; the default is the
// machine's (under testing/synctest that one is the bubble's fake clock
// already).
type Clock = front.Clock

// Timer is one timer of a Clock.
type Timer = front.Timer

// wallClock is the machine's clock.
type wallClock = front.WallClock

// deadline is a state's one timer: nil (no deadline) reads as a channel
// that never fires.
type deadline struct {
	t Timer
	// at is when it fires, on the runtime's clock.
	at time.Time
	// why says what expiring means, for the outcome.
	why string
}

// after arms a deadline d from now on the runtime's clock; d <= 0 is none.
func (rt *Runtime) after(d time.Duration, why string) *deadline {
	if d <= 0 {
		return nil
	}
	return &deadline{t: rt.clock.NewTimer(d), at: rt.clock.Now().Add(d), why: why}
}

// first is the deadline of ds that fires first (nil for none): the one
// timer the engine's loop waits on, for on one clock no other can fire
// before it.
func first(ds ...*deadline) *deadline {
	var f *deadline
	for _, d := range ds {
		if d != nil && (f == nil || d.at.Before(f.at)) {
			f = d
		}
	}
	return f
}

// C is the deadline's channel; nil (never ready in a select) for none.
func (d *deadline) C() <-chan time.Time {
	if d == nil {
		return nil
	}
	return d.t.C()
}

func (d *deadline) stop() {
	if d != nil {
		d.t.Stop()
	}
}
