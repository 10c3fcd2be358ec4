package supervisor

import (
	"github.com/flowerhq/flower/event"
	"github.com/flowerhq/flower/handoff"
	"github.com/flowerhq/flower/manifest"
	"github.com/flowerhq/flower/policy"
)

// Event is what a step reports as it runs (package event owns the type; the
// names here keep the library's callers short).
type Event = event.Event

// EventKind names what an Event reports.
type EventKind = event.Kind

// The event kinds and handoff phases, as in package event.
const (
	KindHandoff    = event.KindHandoff
	KindGeneration = event.KindGeneration
	KindSession    = event.KindSession
	KindText       = event.KindText
	KindTool       = event.KindTool
	KindTurn       = event.KindTurn
	KindAPI        = event.KindAPI
	KindNotice     = event.KindNotice
	KindRetry      = event.KindRetry
	KindRaw        = event.KindRaw
	KindCost       = event.KindCost

	PhaseNear    = event.PhaseNear
	PhaseWriting = event.PhaseWriting
	PhaseDone    = event.PhaseDone
)

// DoneEvent is the handoff "done" event (DESIGN.md «Events») of a frozen handoff: the cut's
// context, the window, whether it degraded, the file, and its sections.
func DoneEvent(st *manifest.StepResult, gen *manifest.Generation, f handoff.Frozen, pol policy.HandoffPolicy) event.Event {
	rec, h := f.Record, f.Handoff
	return event.Event{Kind: KindHandoff, Phase: PhaseDone, Step: st.Name, Generation: gen.N, SessionID: gen.SessionID,
		Context: rec.Context, Window: pol.Window, At: pol.At(), Degraded: rec.Degraded, Why: rec.Why,
		Path: f.Path, Sections: rec.Sections, Reason: rec.Reason, Handoff: &h, CostUSD: st.CostUSD}
}
