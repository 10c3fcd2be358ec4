package supervisor

import (
	"fmt"
	"slices"

	"github.com/flowerhq/flower/front"
	"github.com/flowerhq/flower/handoffwriter"
)

// A decision does no I/O of its own (DESIGN.md «Engine states», decisions
// and effects): a handler orders what is to be done (a turn for the
// session, its interrupt, the successor's harness, a file kept), and act,
// the effector, carries it out once the decision is made, in the order
// given. What an effect meets comes back as a fact: the successor's
// session, or a refusal of the session's, which is decided on as any fact
// is (declined).

// effectKind is what an effect does.
type effectKind int

const (
	doBegin      effectKind = iota // the first turn, with the Spec's prompt (Session.Begin)
	doSend                         // a turn of the same session (Session.Send)
	doCut                          // the cut's interrupt (Session.Cut)
	doStopTool                     // the writing turn's tool call stopped (Session.StopTool)
	doCancel                       // the running turn ended, no handoff follows (Session.Cancel)
	doProbe                        // the context-usage request, beside the turn (probe.go)
	doLaunch                       // the successor's harness, started early (warm.go)
	doKeep                         // the handoff file the successor's replaces, archived (warm.go)
	doFreezeTask                   // the task a person typed, frozen to its file
)

// effect is one thing a decision orders.
type effect struct {
	kind effectKind
	turn front.Turn // doSend's
	// what names the effect in the reason its refusal gives ("send the
	// handoff prompt").
	what string
}

func (k effectKind) String() string {
	switch k {
	case doBegin:
		return "begin"
	case doSend:
		return "send"
	case doCut:
		return "cut"
	case doStopTool:
		return "stop-tool"
	case doCancel:
		return "cancel"
	case doProbe:
		return "probe"
	case doLaunch:
		return "launch"
	case doKeep:
		return "keep"
	case doFreezeTask:
		return "freeze-task"
	}
	return fmt.Sprintf("effect(%d)", int(k))
}

// order adds e to what the decision under way orders.
func (a *attemptRun) order(e effect) { a.orders = append(a.orders, e) }

// ordered reports whether the decision under way ordered an effect of
// kind k not yet carried out.
func (a *attemptRun) ordered(k effectKind) bool {
	return slices.ContainsFunc(a.orders, func(e effect) bool { return e.kind == k })
}

// send orders turn t, named what for its refusal.
func (a *attemptRun) send(t front.Turn, what string) {
	a.order(effect{kind: doSend, turn: t, what: what})
}

// act carries out the effects of the decision (out, end) in order. A
// decision that ended the attempt stands whatever an effect meets;
// otherwise a turn or command the session refuses is decided on, and that
// may end the attempt (and order more).
func (a *attemptRun) act(out outcome, end bool) (outcome, bool) {
	for len(a.orders) > 0 {
		e := a.orders[0]
		a.orders = a.orders[1:]
		err := a.carry(e)
		switch {
		case err == nil:
		case end:
			a.log.Debug("the session refused what the attempt's last decision ordered", "effect", e.kind.String(), "err", err)
		default:
			out, end = a.declined(e, err)
		}
	}
	return out, end
}

// carry carries out e.
func (a *attemptRun) carry(e effect) error {
	switch e.kind {
	case doBegin:
		return a.p.Begin()
	case doSend:
		return a.p.Send(e.turn)
	case doCut:
		return a.p.Cut()
	case doStopTool:
		return a.p.StopTool()
	case doCancel:
		return a.p.Cancel()
	case doProbe:
		a.askProbe()
	case doLaunch:
		a.launchSuccessor()
	case doKeep:
		a.books().Keep()
	case doFreezeTask:
		a.books().FreezeTask() // saves
	default:
		panic("supervisor: unknown effect " + e.kind.String())
	}
	return nil
}

// declined decides on the session's refusal err of effect e. The first
// prompt refused fails the attempt. A queued cut whose writing prompt was
// refused interrupts the turn instead; a writing prompt refused in the
// writing turn degrades the handoff. A cut that fails is logged: the cut
// timeout ends what does not stop. The others say nothing worth a
// decision (a turn that is over already).
func (a *attemptRun) declined(e effect, err error) (outcome, bool) {
	switch e.kind {
	case doBegin:
		return a.fail(fmt.Sprintf("%s: %v", e.what, err)), true
	case doCut:
		a.log.Warn("the cut failed", "err", err)
		return outcome{}, false
	case doSend:
		switch s := a.state.(type) {
		case *cutting:
			if e.turn.Kind == front.TurnWriting {
				a.log.Warn("the writing prompt could not be queued; interrupting", "err", err)
				s.queued = false
				a.interruptCut(s)
				return outcome{}, false
			}
		case *writing:
			return a.handoff(s.at, handoffwriter.Handoff{}, fmt.Sprintf("%s: %v", e.what, err)), true
		}
		return a.fail(fmt.Sprintf("%s: %v", e.what, err)), true
	}
	return outcome{}, false
}
