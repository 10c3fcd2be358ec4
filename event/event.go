// Package event owns what a run reports as it goes: one Event type that the
// engine emits and every front, console and log reads. It sits below the
// supervisor so that a front can show events without importing the engine.
package event

import (
	"time"

	"github.com/flowerhq/flower/handoffwriter"
)

// Kind names what an Event reports.
type Kind string

// The event kinds. KindHandoff is the one event of DESIGN.md «Events»; the others feed
// what a person watches.
const (
	KindHandoff    Kind = "handoff"    // Phase: near | writing | done
	KindGeneration Kind = "generation" // a harness process started for a generation (or a retry)
	KindSession    Kind = "session"    // the harness reported the session id
	KindText       Kind = "text"       // main-thread assistant text (never from the writing turn)
	KindTool       Kind = "tool"       // a main-thread tool call
	KindTurn       Kind = "turn"       // a turn's result
	KindNotice     Kind = "notice"     // something a person should know (DESIGN.md «Auto-compact off», warnings)
	KindRetry      Kind = "retry"      // a failed attempt that will be retried
	KindRaw        Kind = "raw"        // one harness stdout record as read, in Raw (never from the writing turn)
	KindCost       Kind = "cost"       // the step's cost grew outside a turn (a harness's exit said what it cost): CostUSD
	KindAPI        Kind = "api"        // Phase retrying: the harness asks the API again (Text: the progress line); refused: the API refused the credentials, or the harness has none (Text: what to fix)
)

// The phases of a KindAPI event.
const (
	PhaseRetrying = "retrying"
	PhaseRefused  = "refused"
)

// The phases of a handoff event (DESIGN.md «Events»).
const (
	PhaseNear    = "near"
	PhaseWriting = "writing"
	PhaseDone    = "done"
)

// Event is what the supervisor reports as a step runs. Fields not relevant
// to a kind are zero.
type Event struct {
	Kind       Kind   `json:"kind"`
	Phase      string `json:"phase,omitempty"`
	Step       string `json:"step"`
	Generation int    `json:"generation"`
	SessionID  string `json:"session_id,omitempty"`

	Context int `json:"context,omitempty"` // main-thread context, tokens
	Window  int `json:"window,omitempty"`
	At      int `json:"at,omitempty"`      // handoff threshold
	WarnAt  int `json:"warn_at,omitempty"` // near-notice threshold

	// Done handoffs (DESIGN.md «Events»).
	Degraded bool                   `json:"degraded,omitempty"`
	Why      string                 `json:"why,omitempty"`
	Path     string                 `json:"path,omitempty"`
	Sections []string               `json:"sections,omitempty"`
	Reason   string                 `json:"reason,omitempty"` // why the cut: a manifest.Reason* (threshold | overflow | compaction | compact_blocked | requested | lost)
	Handoff  *handoffwriter.Handoff `json:"handoff,omitempty"`

	Text    string  `json:"text,omitempty"`     // text, notice, retry reason
	Tool    string  `json:"tool,omitempty"`     // tool name
	Input   string  `json:"input,omitempty"`    // tool input, raw JSON
	CostUSD float64 `json:"cost_usd,omitempty"` // step cost so far
	IsError bool    `json:"is_error,omitempty"`

	// KindLimitWait: the limit (rate_limit | usage_limit | network), when the wait
	// ends, and the limit's reset when the harness said it. KindBound:
	// Reason is budget or deadline, BudgetUSD the budget.
	Limit     string     `json:"limit,omitempty"`
	Until     *time.Time `json:"until,omitempty"`
	ResetAt   *time.Time `json:"reset_at,omitempty"`
	BudgetUSD float64    `json:"budget_usd,omitempty"`

	// Raw is the harness's line for KindRaw (--output stream-json passes it
	// on verbatim); it is not part of the event's own JSON.
	Raw []byte `json:"-"`
}
