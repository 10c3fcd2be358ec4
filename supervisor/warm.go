package supervisor

import (
	"context"
	"time"

	"github.com/flowerhq/flower/front"
)

// This file is the warm successor (DESIGN.md «Warm successor»). As soon as a
// handoff is certain (the harness took the writing prompt, or there is no
// writing turn), the successor's harness starts, so that its
// start-up overlaps the writing turn instead of following it. It gets
// no prompt until the handoff is frozen: its first prompt is read from the
// file at that moment, so a person's edit still wins. The burned
// generation's harness is stopped once the successor's first round is back,
// off the critical path. A
// successor that turns out not to be needed is stopped and leaves nothing:
// it never reached the manifest.

// startsEarly: this step starts harnesses before their first prompt is
// known (front.Capabilities.StartEarly), unless it is one generation run for
// a caller that starts the next one itself (RunGeneration).
func (s *stepRun) startsEarly() bool { return s.rt.caps.StartEarly && !s.late }

// startSuccessor orders the next generation's harness started with no
// prompt, when the front can (stepRun.startsEarly) and the generation limit
// leaves room for a successor.
func (a *attemptRun) startSuccessor() {
	if !a.startsEarly() || a.early != nil || a.ordered(doLaunch) || a.over() || a.rt.policy.LastGeneration(a.gen.N) || a.ctx.Err() != nil {
		return
	}
	a.order(effect{kind: doLaunch})
}

// launchSuccessor starts the successor's harness startSuccessor ordered,
// unless a file the harness reads changed (then the attempt's launch stops
// the step). A failure to start is logged: the successor is then started
// at launch as usual.
func (a *attemptRun) launchSuccessor() {
	rt := a.rt
	if why := a.admit(); why != "" {
		a.log.Warn("the successor is not started early", "why", why) // the attempt's launch stops the step
		return
	}
	spec := a.spec(a.gen.N+1, "", "")
	spec.Early = true
	sess, err := rt.opts.Front.Launch(a.ctx, spec)
	if err != nil {
		a.log.Warn("could not start the successor early; it starts at launch", "err", err)
		return
	}
	a.early = sess
	a.log.Info("successor harness started early", "successor", a.gen.N+1)
}

// successorDelay is how long after the writing prompt was sent the
// successor's harness starts, when the harness does not say when it takes
// the prompt (one that does starts it then: writingTaken): its start-up
// takes a core for about a second, and the cut harness needs one first to
// turn the writing prompt into its request. A writing turn takes seconds;
// one that ends sooner starts the successor at once (handoffOutcome).
const successorDelay = 300 * time.Millisecond

// dropSuccessor stops a successor started early that is not needed after
// all: flower is stopping. Its harness is gone when this returns.
func (a *attemptRun) dropSuccessor() {
	stopUnused(a.early)
	a.early = nil
	a.log.Info("the successor started early was not needed; stopped")
}

// stopUnused stops a harness that never got a prompt and discards whatever
// it said.
func stopUnused(sess front.Session) {
	if sess == nil {
		return
	}
	sess.Stop()
	for {
		if _, err := sess.Next(context.Background()); err != nil {
			return
		}
	}
}

// startFirst starts a new step's first harness and gives it the task at
// once, before the step's bookkeeping (manifest, task file) is written:
// those writes then overlap the harness's start-up instead of preceding
// it. It does so only for a front that can start a harness this way and
// when the run's measured floor does not already make the session futile
// (that is judged before a prompt is sent); otherwise, or when the start
// fails, it returns nil and the attempt starts the harness as usual. A
// prompt that could not be given is the first attempt's failure (begin):
// the attempt records it, as it would its own.
func (s *stepRun) startFirst(ctx context.Context, task string) (sess front.Session, begin error) {
	rt := s.rt
	if !s.startsEarly() || ctx.Err() != nil || rt.policy.Futile(rt.runFloor()) || s.admit() != "" {
		return nil, nil
	}
	sess, err := rt.opts.Front.Launch(ctx, s.spec(len(s.st.Generations)+1, task, ""))
	if err != nil {
		return nil, nil // the attempt tries again, and records why
	}
	if err := sess.Begin(); err != nil {
		return sess, err
	}
	s.log.Info("harness started with the task")
	return sess, nil
}

// retirePredecessor stops the burned generation's harness once this
// session's first round is back: its first request went out before, so the
// old harness's shutdown never competes with the successor's first turn for
// the machine.
func (a *attemptRun) retirePredecessor() {
	a.retire(a.predecessor)
	a.predecessor = nil
}

// retiring is a burned generation's harness on its way out.
type retiring struct{ a *attemptRun }

// retire lets the harness of a burned generation go: its successor's first
// request is out. It is told to exit once its turn is over (its writing
// turn is), which it does on its own, off the critical path; reap stops
// what is left of it. Both run on the engine's goroutine, the only one
// that calls a session.
func (s *stepRun) retire(a *attemptRun) {
	if a == nil {
		return
	}
	if err := a.p.EndAfterTurn(); err != nil {
		a.log.Info("the burned generation's harness could not be told to exit; it is stopped at the step's end", "err", err)
	}
	s.retiring = append(s.retiring, retiring{a: a})
}

// reap stops the harnesses retire let go (most are gone by now) and
// records what they left (attemptRun.stop).
func (s *stepRun) reap() {
	for _, r := range s.retiring {
		r.a.stop()
	}
	s.retiring = nil
}

// abandon stops what a launch that will not run carries: a successor
// started early, and the predecessor it was to take over from.
func (s *stepRun) abandon(l launch) {
	stopUnused(l.early)
	s.retire(l.predecessor)
}
