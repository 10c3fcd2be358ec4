package supervisor

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flowerhq/flower/front/fronttest"
	"github.com/flowerhq/flower/manifest"
)

// manualClock is a Clock that moves only when the test says: with it, a
// deadline of an hour passes in no time, which it can only if the engine
// runs that deadline on the clock it was given.
type manualClock struct {
	mu     sync.Mutex
	now    time.Time
	timers []*manualTimer
	// armed receives the duration of every timer started.
	armed chan time.Duration
}

type manualTimer struct {
	clock   *manualClock
	c       chan time.Time
	at      time.Time
	stopped bool
}

func newManualClock() *manualClock {
	return &manualClock{now: time.Date(2026, 12, 1, 3, 0, 0, 0, time.UTC), armed: make(chan time.Duration, 1024)}
}

func (c *manualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *manualClock) NewTimer(d time.Duration) Timer {
	c.mu.Lock()
	t := &manualTimer{clock: c, c: make(chan time.Time, 1), at: c.now.Add(d)}
	c.timers = append(c.timers, t)
	c.mu.Unlock()
	c.armed <- d
	return t
}

func (t *manualTimer) C() <-chan time.Time { return t.c }
func (t *manualTimer) Stop() bool {
	t.clock.mu.Lock()
	defer t.clock.mu.Unlock()
	was := !t.stopped
	t.stopped = true
	return was
}

// advance moves the clock by d and fires the timers due.
func (c *manualClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	kept := c.timers[:0]
	for _, t := range c.timers {
		if t.stopped {
			continue
		}
		if !t.at.After(c.now) {
			t.c <- c.now
			t.stopped = true
			continue
		}
		kept = append(kept, t)
	}
	c.timers = kept
}

// await waits until a timer of d is started, and returns the durations of
// the timers started before it; a step that
// ends first fails the test.
func (c *manualClock) await(t *testing.T, d time.Duration, done <-chan error) []time.Duration {
	t.Helper()
	var before []time.Duration
	for {
		select {
		case got := <-c.armed:
			if got == d {
				return before
			}
			before = append(before, got)
		case err := <-done:
			t.Fatalf("the step ended (%v) before a timer of %v was started; timers: %v", err, d, before)
		}
	}
}

// never is a tool's end that never comes: only an interrupt ends it; now
// has come already.
var never, now = make(chan struct{}), func() chan struct{} { c := make(chan struct{}); close(c); return c }()

func clockRun(t *testing.T, c *manualClock, plans [][]fronttest.Round, handoff func(int) fronttest.Round, opts Options) (*memRun, chan error) {
	r := newMemRun(t, plans, handoff)
	opts.Clock, opts.Handoff = c, window(200_000)
	rt := r.runtime(opts)
	done := make(chan error, 1)
	go func() {
		_, err := rt.RunStep(context.Background(), memStep, memTask)
		done <- err
	}()
	return r, done
}

// The writing timeout runs on the Runtime's clock: a writing turn that
// never ends degrades once the clock passes an hour. The successor's
// harness starts as the harness takes the writing prompt, on no clock.
func TestClockRunsTheWritingDeadline(t *testing.T) {
	c := newManualClock()
	hang := func(int) fronttest.Round { return fronttest.Round{Hang: true} }
	r, done := clockRun(t, c, [][]fronttest.Round{
		{{Context: 100_000, Text: "working", Tool: &fronttest.Tool{Command: "make", Until: now}},
			{Context: 155_000, Text: "still working", Tool: &fronttest.Tool{Command: "make check", Until: never}}},
		{memDone(20_000)},
	}, func(g int) fronttest.Round {
		if g == 0 {
			return hang(g)
		}
		return memHandoff(g)
	}, Options{WritingTimeout: time.Hour})
	// The crossing tool never ends: the queued cut waits its patience on
	// the clock, then interrupts it.
	before := c.await(t, queueWait, done)
	if len(before) == 0 || before[len(before)-1] != DefaultCutTimeout {
		t.Errorf("timers before the queued cut's patience %v, want the cut's (%v) last", before, DefaultCutTimeout)
	}
	c.advance(queueWait)
	// The writing turn's deadline; the successor starts as the harness
	// takes the writing prompt, on no timer: with the clock held still.
	if d := c.await(t, time.Hour, done); d != nil {
		t.Errorf("timers between the cut's patience and the writing deadline: %v", d)
	}
	for wait := time.Now().Add(10 * time.Second); len(r.front.Procs()) < 2; time.Sleep(time.Millisecond) {
		if time.Now().After(wait) {
			t.Fatal("no successor started while the clock stood still after the harness took the writing prompt")
		}
	}
	c.advance(time.Hour)
	if err := <-done; err != nil {
		t.Fatalf("RunStep: %v", err)
	}
	st := r.step()
	if len(st.Generations) != 2 || st.Status != manifest.StatusSucceeded {
		t.Fatalf("%d generations, status %s; want a handoff, then done", len(st.Generations), st.Status)
	}
	h := st.Generations[0].Handoff
	if h == nil || !h.Degraded || !strings.Contains(h.Why, "the writing turn did not finish within 1h0m0s") {
		t.Errorf("generation 1's handoff %+v, want degraded by the writing deadline", h)
	}
	if got := h.WritingSeconds; got < 3600 {
		t.Errorf("writing took %.0f s on the clock, want the hour it was given", got)
	}
}

// The turn timeout runs on the clock as well.
func TestClockRunsTheTurnDeadline(t *testing.T) {
	c := newManualClock()
	r, done := clockRun(t, c, [][]fronttest.Round{
		{{Context: 10_000, Text: "working", Tool: &fronttest.Tool{Command: "sleep forever", Until: never}}},
	}, memHandoff, Options{TurnTimeout: time.Hour, MaxAttempts: 1})
	c.await(t, time.Hour, done)
	c.advance(time.Hour)
	err := <-done
	if err == nil || !strings.Contains(err.Error(), "turn exceeded the turn timeout of 1h0m0s") {
		t.Fatalf("RunStep: %v, want the turn timeout", err)
	}
	if st := r.step(); st.Status != manifest.StatusFailed {
		t.Errorf("status %s, want failed", st.Status)
	}
}
