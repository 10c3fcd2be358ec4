package front

import (
	"context"
	"time"
)

// Clock is the engine's time, which a front's own timing rules run on too:
// the engine's every timer and deadline (DESIGN.md «Engine states»), and
// the waits a front keeps for its harness's protocol (the interactive
// front's, DESIGN.md «Screen turns»). supervisor.Options.Clock gives it; the
// default is the machine's (WallClock; under testing/synctest that one is
// the bubble's fake clock already).
type Clock interface {
	Now() time.Time
	// NewTimer starts a timer that fires once, d from now.
	NewTimer(d time.Duration) Timer
}

// Timer is one timer of a Clock.
type Timer interface {
	// C fires once, when the timer expires.
	C() <-chan time.Time
	// Stop stops the timer; false when it had fired or was stopped.
	Stop() bool
}

// WallClock is the machine's clock.
type WallClock struct{}

func (WallClock) Now() time.Time { return time.Now() }

func (WallClock) NewTimer(d time.Duration) Timer { return wallTimer{time.NewTimer(d)} }

type wallTimer struct{ t *time.Timer }

func (t wallTimer) C() <-chan time.Time { return t.t.C }
func (t wallTimer) Stop() bool          { return t.t.Stop() }

// Sleep waits d on c, or until ctx is done (its cause then).
func Sleep(ctx context.Context, c Clock, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := c.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C():
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}
