package event

// The events of an unattended run (DESIGN.md «Unattended: limits, budget,
// deadline»).
const (
	// KindLimitWait: a turn ended on a rate or usage limit and the step
	// waits it out. Phase: begun, waiting (about once a second, for the
	// gauge's countdown), ended.
	KindLimitWait Kind = "limit_wait"
	// KindBound: the step's budget or deadline is reached (Reason); the
	// session is cut at the message boundary and writes its handoff.
	KindBound Kind = "bound_reached"
)

// The phases of a KindLimitWait event.
const (
	PhaseBegun   = "begun"
	PhaseWaiting = "waiting"
	PhaseEnded   = "ended"
	// PhaseShown: a limit ended a turn that someone else starts (a person
	// at the harness's own screen, an application through the relay);
	// flower waits nothing itself, and says when the limit resets.
	PhaseShown = "shown"
	// PhaseExceeded: the limit outlasted --max-wait and the step stops.
	// Path is the degraded handoff flower left on disk for a person; the
	// session is not burned, and flower continue resumes it.
	PhaseExceeded = "exceeded"
)
