package supervisor

import (
	"github.com/flowerhq/flower/handoff"
	"github.com/flowerhq/flower/handoffwriter"
	"github.com/flowerhq/flower/manifest"
	"github.com/flowerhq/flower/policy"
)

// EventKind names what an Event reports.
type EventKind string

// The event kinds. KindHandoff is the one event of SPEC R37; the others feed
// what a person watches.
const (
	KindHandoff    EventKind = "handoff"    // Phase: near | writing | done
	KindGeneration EventKind = "generation" // a harness process started for a generation (or a retry)
	KindSession    EventKind = "session"    // the harness reported the session id
	KindText       EventKind = "text"       // main-thread assistant text (never from the writing turn)
	KindTool       EventKind = "tool"       // a main-thread tool call
	KindTurn       EventKind = "turn"       // a turn's result
	KindNotice     EventKind = "notice"     // something a person should know (R6, warnings)
	KindRetry      EventKind = "retry"      // a failed attempt that will be retried
	KindRaw        EventKind = "raw"        // one harness stdout record as read, in Raw (never from the writing turn)
)

// The phases of a handoff event (R37).
const (
	PhaseNear    = "near"
	PhaseWriting = "writing"
	PhaseDone    = "done"
)

// Event is what the supervisor reports as a step runs. Fields not relevant
// to a kind are zero.
type Event struct {
	Kind       EventKind `json:"kind"`
	Phase      string    `json:"phase,omitempty"`
	Step       string    `json:"step"`
	Generation int       `json:"generation"`
	SessionID  string    `json:"session_id,omitempty"`

	Context int `json:"context,omitempty"` // main-thread context, tokens
	Window  int `json:"window,omitempty"`
	At      int `json:"at,omitempty"`      // handoff threshold
	WarnAt  int `json:"warn_at,omitempty"` // near-notice threshold

	// Done handoffs (R37).
	Degraded bool                   `json:"degraded,omitempty"`
	Why      string                 `json:"why,omitempty"`
	Path     string                 `json:"path,omitempty"`
	Sections []string               `json:"sections,omitempty"`
	Reason   string                 `json:"reason,omitempty"` // threshold | overflow
	Handoff  *handoffwriter.Handoff `json:"handoff,omitempty"`

	Text    string  `json:"text,omitempty"`     // text, notice, retry reason
	Tool    string  `json:"tool,omitempty"`     // tool name
	Input   string  `json:"input,omitempty"`    // tool input, raw JSON
	CostUSD float64 `json:"cost_usd,omitempty"` // step cost so far
	IsError bool    `json:"is_error,omitempty"`

	// Raw is the harness's line for KindRaw (--output stream-json passes it
	// on verbatim); it is not part of the event's own JSON.
	Raw []byte `json:"-"`
}

// DoneEvent is the handoff "done" event (R37) of a frozen handoff: the cut's
// context, the window, whether it degraded, the file, and its sections.
func DoneEvent(st *manifest.StepResult, gen *manifest.Generation, f handoff.Frozen, pol policy.HandoffPolicy) Event {
	rec, h := f.Record, f.Handoff
	return Event{Kind: KindHandoff, Phase: PhaseDone, Step: st.Name, Generation: gen.N, SessionID: gen.SessionID,
		Context: rec.Context, Window: pol.Window, At: pol.At(), Degraded: rec.Degraded, Why: rec.Why,
		Path: f.Path, Sections: rec.Sections, Reason: rec.Reason, Handoff: &h, CostUSD: st.CostUSD}
}
