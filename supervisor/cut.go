package supervisor

import (
	"time"

	"github.com/flowerhq/flower/front"
	"github.com/flowerhq/flower/handoffwriter"
	"github.com/flowerhq/flower/manifest"
)

// cut ends the running work turn at its next message boundary (DESIGN.md
// «The cut»). A handoff decided on the reply just read, on a front whose
// harness queues turns and says when it takes them, is cut by sending the
// writing prompt into the turn: a reply that calls a tool has its tool
// run, and the harness's next request carries the prompt beside the
// tool's result (DESIGN.md «Queued cut»). A reply with no tool call yet
// waits for one, or for its turn's end. Any other cut interrupts, and so
// does a queued one whose tool runs past queueWait.
func (a *attemptRun) cut(at cutAt) {
	c := &cutting{at: at, dl: a.rt.after(a.rt.opts.CutTimeout, "cut")}
	a.enter(c, causeHandoffDue)
	queue := a.rt.caps.Queues && a.replays && a.onReply
	how := "interrupt"
	switch {
	case queue && a.replyTools:
		how = "the writing prompt, beside the tool's result"
	case queue:
		how = "the writing prompt once the reply calls a tool; none if its turn ends"
	}
	a.log.Info(logCut, "reason", at.reason, "context", at.context, "at", a.rt.policy.At(), "how", how)
	if !queue {
		a.interruptCut(c)
		return
	}
	c.wait = a.rt.after(queueWait, "queued cut")
	if a.replyTools {
		a.queueWriting(c)
	}
}

// logCut is the log's record of a cut (runpage reads it).
const logCut = "handoff due: cutting at the message boundary"

// queueWait is how long a queued cut waits for the harness to take the
// writing prompt (a reply's tool call to show, its tool to run) before it
// interrupts the turn as any cut does: a tool that runs for long is
// stopped, as at Ctrl-C, rather than waited for at the window's edge.
const queueWait = 2 * time.Second

// queueWriting sends the writing prompt into the running turn, for the
// harness to take at its next request (DESIGN.md «Queued cut»).
func (a *attemptRun) queueWriting(c *cutting) {
	// A prompt the session refuses interrupts the turn instead (declined).
	a.send(front.Turn{Kind: front.TurnWriting, Prompt: a.writingPrompt(c.at)}, "queue the writing prompt")
	c.queued = true
	// The context the cut was decided at is on record, as a cut turn's
	// result puts it there: a flower killed from here on leaves a step
	// that a continue hands off, not resumes (DESIGN.md «Continuation»).
	// The harness runs the tool meanwhile.
	a.st.SetContext(a.meter.Context)
	a.rt.save(a.st)
}

// interruptCut sends the cut's interrupt; a queued cut stops waiting.
func (a *attemptRun) interruptCut(c *cutting) {
	c.wait.stop()
	c.wait, c.interrupted = nil, true
	a.order(effect{kind: doCut})
}

// cutWaited fires when a queued cut's patience is over: the turn is
// interrupted. A prompt queued already stays the harness's next turn.
func (a *attemptRun) cutWaited() {
	c := a.state.(*cutting)
	a.log.Info("the queued cut waited long enough: interrupting", "queued", c.queued, "waited", queueWait)
	a.interruptCut(c)
}

// onPromptTaken hears the harness take a prompt. The writing prompt a cut
// queued starts the writing turn as it is taken; any other prompt's echo
// only says that this harness tells what it takes.
func (a *attemptRun) onPromptTaken(front.PromptTaken) (outcome, bool) {
	a.replays = true
	switch s := a.state.(type) {
	case *cutting:
		if s.queued {
			a.enterWriting(s.at, causeTaken, true).lateCut = s.interrupted
		}
	case *writing:
		if !s.taken {
			a.writingTaken(s, true)
		}
	}
	return outcome{}, false
}

// cutEnded ends the cut turn: the writing turn starts, unless the turn
// overflowed or ended on its own before the interrupt reached it.
func (a *attemptRun) cutEnded(s *cutting, f front.TurnEnded) (outcome, bool) {
	switch {
	case f.How == front.EndedOverflow:
		a.rt.save(a.st)
		at := s.at
		at.reason = manifest.ReasonOverflow
		return a.handoff(at, handoffwriter.Handoff{}, "overflow at the cut: "+firstNonEmpty(f.Text, f.Detail)), true
	case s.queued:
		// The turn ended before the harness took the writing prompt
		// (interrupted, on a limit, or on its own after the tool, which
		// a reply that called a tool does only when the harness stops
		// it, a hook say): the prompt is its next turn. A limit that
		// still holds ends that turn too, and the writing state waits.
		a.rt.save(a.st)
		a.enterWriting(s.at, causeCutEnded, false).lateCut = s.interrupted
		return outcome{}, false
	case f.How == front.EndedLimited && !a.rt.caps.OutsideTurns:
		// unattended: the cut turn met a limit; its writing turn starts once the limit lifts
		a.rt.save(a.st)
		return a.limited(f, afterLimit{resumes: resumeWriting, at: s.at})
	case f.How == front.EndedOnOwn && !a.rt.caps.OutsideTurns:
		// The round over the threshold was the agent's last reply: the
		// agent is done, and there is nothing to hand off (DESIGN.md «The
		// cut»).
		a.rt.save(a.st)
		a.log.Info("the turn ended on its own at the cut; the step is done")
		e := a.event(KindTurn)
		e.Text = f.Text
		a.rt.emit(e)
		return outcome{kind: outcomeDone, sessionID: a.meter.SessionID}, true
	}
	// The writing prompt goes out before the books are saved: their
	// syncs are not on the cut's path.
	out, end := a.startWriting(s.at, causeCutEnded)
	a.rt.save(a.st)
	return out, end
}
