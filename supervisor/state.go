package supervisor

import (
	"fmt"
	"strings"
	"time"
)

// The states of an attempt (DESIGN.md «Engine states»). An attempt is in
// exactly one; each holds its own data, its deadline included, and
// attemptRun.enter is the one place that moves from one to the next, along
// a row of transitions (the table below, which the tests walk).
//
// Every other fact folds into the state it finds; a turn that ends the
// attempt (done, failed, a handoff) returns its outcome from the handler
// (attempt.go: one handler per fact type). The unattended features
// (DESIGN.md «Unattended: limits, budget, deadline») are a state and a
// check: a turn that ends on a usage or rate limit (front.EndedLimited)
// waits in state waiting until the limit lifts, then the same session goes
// on; a budget or deadline reached at a round (check) or at the deadline's
// timer cuts like the threshold, with its own reason.
type state interface {
	// name names the state in the transition table.
	name() string
	// phase names the state in log records (package runlog stamps it);
	// the run page reads "writing" as the writing turn's.
	phase() string
	// deadlines are the state's timers: the first is its deadline
	// (expired says what it means), the rest fire for other ends.
	deadlines() []*deadline
}

// cutAt is what a handoff was decided at: its reason (manifest.Reason*)
// and the context then.
type cutAt struct {
	reason  string
	context int
}

// working: a work turn runs (the first prompt, a continuation, or a turn
// someone else started), under the turn timeout.
type working struct{ dl *deadline }

// idle: the turn of a session whose turns start outside the engine
// (front.Capabilities.OutsideTurns) ended, and none runs.
type idle struct{}

// cutting: the engine is ending the work turn because a handoff is due,
// within the cut timeout (DESIGN.md «The cut»). Either it interrupted the
// turn (Session.Cut), and the turn's TurnEnded starts the writing turn; or,
// on a front that queues turns, it sent the writing prompt into the turn
// (queued) for the harness to take beside the tool's result, and the
// harness's PromptTaken starts the writing turn, or, if the turn ends
// first, the queued prompt is its next turn (DESIGN.md «Queued cut»). wait
// is the queued cut's patience: a reply whose tool call has not shown yet,
// or whose tool runs on, is interrupted when it fires; nil once it has, or
// for an interrupted cut.
type cutting struct {
	at     cutAt
	dl     *deadline
	queued bool
	wait   *deadline
	// interrupted: the cut sent its interrupt (at once, or when wait
	// fired).
	interrupted bool
}

// writing: the handoff-writing turn runs, within the writing timeout
// (DESIGN.md «Writing turn»). again: it is the second ask, after the
// first called a tool and was stopped.
type writing struct {
	at cutAt
	dl *deadline
	// successor fires when the successor's harness is to start beside
	// the writing turn (warm.go), for a harness that does not say when it
	// takes the writing prompt; nil otherwise, and once it has.
	successor *deadline
	started   time.Time
	cost0     float64 // the process's cost when the writing turn began
	doc       strings.Builder
	tools     int  // tool calls of the writing turn, both asks
	stopped   bool // StopTool was sent in this ask
	again     bool
	// taken: the harness has taken the writing prompt, as its
	// PromptTaken says (a harness that does not echo its prompts: as the
	// prompt is sent). lateCut: the queued cut's interrupt was sent,
	// and may reach the writing turn the harness took just before it.
	taken   bool
	lateCut bool
}

// stopping: the caller cancelled; the running turn ends and the harness
// exits, within twice the grace period (stop.go).
type stopping struct{ dl *deadline }

// ended: the attempt returned its outcome; nothing cuts, asks or starts
// any more.
type ended struct{}

func (*working) name() string  { return "working" }
func (*idle) name() string     { return "idle" }
func (*cutting) name() string  { return "cutting" }
func (*writing) name() string  { return "writing" }
func (*stopping) name() string { return "stopping" }
func (*ended) name() string    { return "ended" }

func (*working) phase() string  { return "working" }
func (*idle) phase() string     { return "working" }
func (*cutting) phase() string  { return "cutting" }
func (*writing) phase() string  { return "writing" }
func (*stopping) phase() string { return "stopping" }
func (*ended) phase() string    { return "ended" }

func (s *working) deadlines() []*deadline  { return []*deadline{s.dl} }
func (*idle) deadlines() []*deadline       { return nil }
func (s *cutting) deadlines() []*deadline  { return []*deadline{s.dl, s.wait} }
func (s *writing) deadlines() []*deadline  { return []*deadline{s.dl, s.successor} }
func (s *stopping) deadlines() []*deadline { return []*deadline{s.dl} }
func (*ended) deadlines() []*deadline      { return nil }

// cause is why the attempt moves from one state to the next.
type cause string

const (
	causeBegan       cause = "the attempt began"
	causeTurnStarted cause = "someone started a turn"
	causeIdle        cause = "its turn ended; turns start outside the engine"
	causeHandoffDue  cause = "a handoff is due"
	causeCutEnded    cause = "the cut turn ended, not on its own"
	causeTaken       cause = "the harness took the queued writing prompt into the cut turn"
	causeAskAgain    cause = "the first ask ended after a tool was stopped"
	causeLateCut     cause = "the queued cut's interrupt ended the writing turn it had taken"
	causeResumed     cause = "resumed in its writing turn"
	causeLimited     cause = "the turn ended on a limit"
	causeLifted      cause = "the limit lifted"
	causeCancelled   cause = "the caller cancelled"
	causeOver        cause = "the attempt returned its outcome"
)

// transition is a row of the transition table: from a state (by name;
// "" before the first, anyState for every one), on a cause, to a state.
type transition struct {
	from  string
	cause cause
	to    string
}

const anyState = "*"

// transitions is the attempt's transition table (DESIGN.md «Engine
// states»): enter takes no move that is not here, and
// TestMemGuarantees reaches every row.
var transitions = []transition{
	{"", causeBegan, "working"},
	{"working", causeResumed, "writing"},    // flower continue, stopped by a limit in its writing turn
	{"idle", causeTurnStarted, "working"},   // a prompt or a main-thread round
	{"working", causeIdle, "idle"},          // front.Capabilities.OutsideTurns
	{"working", causeHandoffDue, "cutting"}, // Session.Cut
	{"idle", causeHandoffDue, "writing"},    // no turn to cut
	{"cutting", causeCutEnded, "writing"},   // TurnWriting, or the queued one taken as the next turn
	{"cutting", causeTaken, "writing"},      // front.Capabilities.Queues
	{"writing", causeAskAgain, "writing"},
	{"writing", causeLateCut, "writing"},
	{"working", causeLimited, "waiting"}, // unattended.go
	{"cutting", causeLimited, "waiting"},
	{"writing", causeLimited, "waiting"},
	{"waiting", causeLifted, "working"}, // TurnWork
	{"waiting", causeLifted, "writing"},
	{anyState, causeCancelled, "stopping"}, // stop.go
	{anyState, causeOver, "ended"},
}

// transitionOf is the row that moves from to to on c.
func transitionOf(from state, c cause, to state) (transition, bool) {
	t := transition{cause: c, to: to.name()}
	if from != nil {
		t.from = from.name()
	}
	for _, row := range transitions {
		if row.cause == t.cause && row.to == t.to && (row.from == t.from || row.from == anyState) {
			return row, true
		}
	}
	return t, false
}

// sawTransition, when set (by the tests), hears every row taken.
var sawTransition func(transition)

// StrictTransitions makes a move the table lacks panic: the tests that run
// the engine set it (in an init of their own), so that no row of theirs
// passes on such a move; a run never does (see enter).
var StrictTransitions bool

// enter makes s the attempt's state, for cause c: the one place an
// attempt moves from state to state. The old state's timers that s does
// not carry on are stopped.
//
// A move the table lacks is a fault of the engine, not of the harness:
// under the engine's tests (StrictTransitions) it panics, so that no row of the guarantees table passes on
// it. In production the move is logged as an error and taken all the
// same: the handler has acted on it already (a prompt sent, a timer
// armed), so refusing it would leave the state out of step with the
// session, and a crash would lose the handoff.
func (a *attemptRun) enter(s state, c cause) {
	row, ok := transitionOf(a.state, c, s)
	if !ok {
		if StrictTransitions {
			panic(fmt.Sprintf("attempt: no transition from %q on %q to %q", row.from, row.cause, row.to))
		}
		a.log.Error("the engine made a transition its table lacks", "from", row.from, "cause", string(row.cause), "to", row.to)
	} else if sawTransition != nil {
		sawTransition(row)
	}
	if old := a.state; old != nil {
		keep := s.deadlines()
		for _, d := range old.deadlines() {
			if d != nil && !containsDeadline(keep, d) {
				d.stop()
			}
		}
	}
	a.state = s
	a.logState.SetPhase(s.phase())
}

func containsDeadline(ds []*deadline, d *deadline) bool {
	for _, x := range ds {
		if x == d {
			return true
		}
	}
	return false
}

// working reports whether a work turn runs or may start: the engine has
// not cut, is not writing, and has not ended.
func (a *attemptRun) working() bool {
	switch a.state.(type) {
	case *working, *idle:
		return true
	}
	return false
}

// over reports whether the attempt has returned its outcome.
func (a *attemptRun) over() bool {
	_, ok := a.state.(*ended)
	return ok
}

// startWork enters working with a fresh turn timeout, for cause c.
func (a *attemptRun) startWork(c cause) {
	a.enter(&working{dl: a.rt.after(a.rt.opts.TurnTimeout, "turn")}, c)
}
