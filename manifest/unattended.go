package manifest

import "time"

// The statuses of a step stopped by a bound of an unattended run (DESIGN.md
// «Unattended: limits, budget, deadline»). Each stops the step so that
// flower continue can go on later.
const (
	// StatusBudget: the step's cost reached --max-budget-usd; the session
	// handed off, and the handoff is on disk.
	StatusBudget = "budget_reached"
	// StatusDeadline: the step ran --max-duration; the session handed off.
	StatusDeadline = "deadline_reached"
	// StatusLimited: a rate or usage limit would last longer than
	// --max-wait (or than the deadline); the session is live and is
	// resumed by flower continue.
	StatusLimited = "limit_wait_exceeded"
)

// Why a generation was cut for a bound.
const (
	ReasonBudget   = "budget"
	ReasonDeadline = "deadline"
)

// LimitWait is one wait for a limit: a turn that ended on a rate or usage
// limit, and the same session resumed once it lifted. It is not an attempt.
type LimitWait struct {
	// Kind is transcript.LimitRate or LimitUsage ("rate_limit", "usage_limit").
	Kind  string    `json:"kind"`
	Start time.Time `json:"start"`
	// Until is when the wait was to end; End when it did (nil while it
	// runs, or when flower stopped during it).
	Until time.Time  `json:"until"`
	End   *time.Time `json:"end,omitempty"`
	// ResetAt is the limit's reset as the harness said it; nil when it
	// said none (a rate limit: Until is then a backoff).
	ResetAt *time.Time `json:"reset_at,omitempty"`
	// Writing: the limit ended the handoff-writing turn.
	Writing bool `json:"writing,omitempty"`
	// Stopped: the wait was not made, the limit lasting past --max-wait
	// or the deadline; the step stopped instead.
	Stopped bool `json:"stopped,omitempty"`
	// HandoffPath is the degraded handoff flower wrote itself when the
	// wait stopped the step (the session cannot write while the API
	// refuses it): a document for a person to find. The session is not
	// burned by it: it stays the step's session_id, which flower
	// continue resumes.
	HandoffPath string `json:"handoff_path,omitempty"`
}
