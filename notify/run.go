package notify

import (
	"fmt"

	"github.com/flowerhq/flower/event"
	"github.com/flowerhq/flower/manifest"
)

// FromRun is the notify event for one event of a running step, if it is
// one a hook hears about: a handoff done. The handoff's text is not copied
// (a hook that wants it reads Path).
func FromRun(ev event.Event, runDir string) (Event, bool) {
	if nev, ok := fromUnattended(ev, runDir); ok {
		return nev, true
	}
	if ev.Kind != event.KindHandoff || ev.Phase != event.PhaseDone {
		return Event{}, false
	}
	text := fmt.Sprintf("flower: step %s handed off generation %d → %d: %s", ev.Step, ev.Generation, ev.Generation+1, ev.Path)
	if ev.Degraded {
		text = fmt.Sprintf("flower: step %s handed off generation %d → %d, degraded (%s): %s", ev.Step, ev.Generation, ev.Generation+1, ev.Why, ev.Path)
	}
	return Event{Kind: KindHandoff, Step: ev.Step, RunDir: runDir, Generation: ev.Generation, SessionID: ev.SessionID,
		Path: ev.Path, Degraded: ev.Degraded, Why: ev.Why, Reason: ev.Reason, CostUSD: ev.CostUSD, Text: text}, true
}

// StepEnded is what a hook hears when a step ends, from its record: the
// generation limit first when that is why (maxGenerations is the policy's),
// then the step's end with its status, cost, generations and, unless it
// succeeded, its last error.
func StepEnded(st *manifest.StepResult, runDir string, maxGenerations int) []Event {
	var out []Event
	if st.Status == manifest.StatusGenerationLimit {
		out = append(out, Event{Kind: KindGenerationLimit, Step: st.Name, RunDir: runDir, MaxGenerations: maxGenerations,
			Generations: len(st.Generations), Path: st.HandoffPath,
			Text: fmt.Sprintf("flower: step %s stopped at the generation limit (%d generations)", st.Name, len(st.Generations))})
	}
	end := Event{Kind: KindStepEnd, Step: st.Name, RunDir: runDir, Status: st.Status, CostUSD: st.CostUSD,
		Generations: len(st.Generations), SessionID: st.SessionID, Path: st.HandoffPath}
	if st.Status != manifest.StatusSucceeded && len(st.Errors) > 0 {
		end.Error = st.Errors[len(st.Errors)-1]
	}
	end.Text = fmt.Sprintf("flower: step %s %s · $%.2f · %d generations", st.Name, end.Status, end.CostUSD, end.Generations)
	return append(out, end)
}
