package supervisor

import (
	"fmt"

	"github.com/flowerhq/flower/front"
	"github.com/flowerhq/flower/handoffwriter"
)

// A decision does not touch the session (DESIGN.md «Engine states»,
// decisions and commands): a handler orders what the session is to do,
// and act carries it out once the decision is made, in the order given.
// A command the session refuses is decided on as a fact is (declined).

// commandKind is what a command asks of the session.
type commandKind int

const (
	cmdBegin    commandKind = iota // the first turn, with the Spec's prompt (Session.Begin)
	cmdSend                        // a turn of the same session (Session.Send)
	cmdCut                         // the cut's interrupt (Session.Cut)
	cmdStopTool                    // the writing turn's tool call stopped (Session.StopTool)
	cmdCancel                      // the running turn ended, no handoff follows (Session.Cancel)
	cmdProbe                       // the context-usage request, beside the turn (probe.go)
)

// command is one thing a decision tells the session to do.
type command struct {
	kind commandKind
	turn front.Turn // cmdSend's
	// what names the command in the reason its refusal gives ("send the
	// handoff prompt").
	what string
}

func (k commandKind) String() string {
	switch k {
	case cmdBegin:
		return "begin"
	case cmdSend:
		return "send"
	case cmdCut:
		return "cut"
	case cmdStopTool:
		return "stop-tool"
	case cmdCancel:
		return "cancel"
	case cmdProbe:
		return "probe"
	}
	return fmt.Sprintf("command(%d)", int(k))
}

// order adds c to what the decision under way tells the session.
func (a *attemptRun) order(c command) { a.orders = append(a.orders, c) }

// send orders turn t, named what for its refusal.
func (a *attemptRun) send(t front.Turn, what string) {
	a.order(command{kind: cmdSend, turn: t, what: what})
}

// act carries out the commands of the decision (out, end) in order. A
// decision that ended the attempt stands whatever a command says;
// otherwise a command the session refuses is decided on, and that may end
// the attempt (and order more).
func (a *attemptRun) act(out outcome, end bool) (outcome, bool) {
	for len(a.orders) > 0 {
		c := a.orders[0]
		a.orders = a.orders[1:]
		err := a.carry(c)
		switch {
		case err == nil:
		case end:
			a.log.Debug("the session refused a command of the attempt's last decision", "command", c.kind.String(), "err", err)
		default:
			out, end = a.declined(c, err)
		}
	}
	return out, end
}

// carry is the session's side of c.
func (a *attemptRun) carry(c command) error {
	switch c.kind {
	case cmdBegin:
		return a.p.Begin()
	case cmdSend:
		return a.p.Send(c.turn)
	case cmdCut:
		return a.p.Cut()
	case cmdStopTool:
		return a.p.StopTool()
	case cmdCancel:
		return a.p.Cancel()
	case cmdProbe:
		a.askProbe()
		return nil
	}
	panic("supervisor: unknown command " + c.kind.String())
}

// declined decides on the session's refusal err of command c. The first
// prompt refused fails the attempt. A queued cut whose writing prompt was
// refused interrupts the turn instead; a writing prompt refused in the
// writing turn degrades the handoff. A cut that fails is logged: the cut
// timeout ends what does not stop. The others say nothing worth a
// decision (a turn that is over already).
func (a *attemptRun) declined(c command, err error) (outcome, bool) {
	switch c.kind {
	case cmdBegin:
		return a.fail(fmt.Sprintf("%s: %v", c.what, err)), true
	case cmdCut:
		a.log.Warn("the cut failed", "err", err)
		return outcome{}, false
	case cmdSend:
		switch s := a.state.(type) {
		case *cutting:
			if c.turn.Kind == front.TurnWriting {
				a.log.Warn("the writing prompt could not be queued; interrupting", "err", err)
				s.queued = false
				a.interruptCut(s)
				return outcome{}, false
			}
		case *writing:
			return a.handoff(s.at, handoffwriter.Handoff{}, fmt.Sprintf("%s: %v", c.what, err)), true
		}
		return a.fail(fmt.Sprintf("%s: %v", c.what, err)), true
	}
	return outcome{}, false
}
