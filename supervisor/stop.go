package supervisor

import (
	"context"
	"fmt"

	"github.com/flowerhq/flower/front"
)

// interrupted ends the attempt when the caller cancelled (the first Ctrl-C
// or SIGTERM). The harness has been told: the cancelled context sent its
// process group SIGINT (harness.Start), which the harness takes as an
// interrupt, and it gets the interrupt request too. The running turn may
// finish its result, which is booked; stdin is closed so that the harness
// exits after it. A writing prompt the cut queued (DESIGN.md «Queued
// cut») is interrupted as the harness takes it. The harness is gone within
// the grace period (the
// context's cancel kills it then); this waits twice that at most, then
// kills the group itself.
func (a *attemptRun) interrupted(ctx context.Context) outcome {
	_ = a.p.Cancel()
	_ = a.p.EndAfterTurn()
	out := outcome{kind: outcomeInterrupted, why: context.Cause(ctx).Error(), sessionID: a.meter.SessionID}
	s := &stopping{dl: a.rt.after(2*a.rt.opts.Grace, "stop")}
	a.enter(s, causeCancelled)
	for {
		a.rt.flush()
		select {
		case x := <-a.pull.C():
			f, ok := a.pull.got(x)
			if !ok {
				out.sessionID = a.meter.SessionID
				return out
			}
			prev := a.meter.SessionID
			a.meter.observe(f)
			// A session first named while the step stops is on record:
			// a continue resumes it.
			a.sessionNamed(prev)
			switch f := f.(type) {
			case front.TurnEnded:
				a.bookInterrupted(f)
			case front.PromptTaken:
				// A writing prompt a cut queued, taken as the harness's
				// next turn once the cancelled one ended: it is not
				// wanted any more, and is interrupted as it starts.
				_ = a.p.Cancel()
			}
		case <-s.dl.C():
			a.log.Warn("the harness did not exit after the interrupt; stopping it")
			a.p.Stop()
			out.sessionID = a.meter.SessionID
			return out
		}
	}
}

// bookInterrupted books the interrupted turn's result: its cost and turns
// count like any other (DESIGN.md «Manifest»).
func (a *attemptRun) bookInterrupted(ev front.TurnEnded) {
	st := a.st
	st.AddUsageOf(a.gen.N, a.meter.CostUSD-a.lastCost, ev.Turns)
	a.lastCost = a.meter.CostUSD
	st.SetContext(a.meter.Context)
	a.rt.save(st)
	e := a.event(KindTurn)
	e.Text, e.IsError = ev.Text, ev.How != front.EndedOnOwn
	a.rt.emit(e)
}

// finish ends the attempt: a successor started early that is not needed is
// stopped (warm.go), the context-usage answer still on its way is awaited
// (probe.go), and the harness is stopped, unless a successor took over
// (then the step stops it once the successor has its prompt).
func (a *attemptRun) finish() {
	a.endWait(false) // unattended: a wait cut short (flower stopping) is recorded as ended
	a.deadline.stop()
	a.enter(&ended{}, causeOver)
	a.retirePredecessor()
	if a.early != nil {
		a.dropSuccessor()
	}
	if a.detached {
		return
	}
	a.settleProbe()
	a.stop()
}

// stop stops the harness and records what of its output could not be
// read: lines that were not JSON, or too long, were skipped (and logged);
// the manifest says how many, so that a person knows the stream was not
// clean.
func (a *attemptRun) stop() {
	a.p.Stop()
	// Whatever the harness said after the attempt's end still counts.
	for {
		f, ok := a.pull.next()
		if !ok {
			break
		}
		a.meter.observe(f)
		if te, ok := f.(front.TurnEnded); ok {
			a.bookInterrupted(te)
		}
	}
	x := a.p.Exit()
	a.bookExit(x)
	if n := x.Skipped; n > 0 {
		a.st.AddError(fmt.Sprintf("generation %d: the harness wrote %d line(s) that were not JSON or too long; they were skipped (see the log)", a.gen.N, n))
		a.rt.save(a.st)
	}
}
