package notify

import (
	"errors"
	"fmt"

	"github.com/flowerhq/flower/event"
	"github.com/flowerhq/flower/manifest"
	"github.com/flowerhq/flower/policy"
)

// FromRun is the notify event for one event of a running step, if it is
// one a hook hears about: a handoff done. The handoff's text is not copied
// (a hook that wants it reads Path).
func FromRun(ev event.Event, runDir string) (Event, bool) {
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

// StepEnded is what a hook hears when a step ends: the generation limit
// first when that is why (err is RunStep's), then the step's end. st nil
// (the step never started) gives only the end, with err's text.
func StepEnded(st *manifest.StepResult, runDir, step string, err error) []Event {
	var out []Event
	if st != nil {
		step = st.Name
	}
	var gl *policy.GenerationLimitError
	if errors.As(err, &gl) {
		out = append(out, Event{Kind: KindGenerationLimit, Step: step, RunDir: runDir, MaxGenerations: gl.Max,
			Generations: generations(st), Text: fmt.Sprintf("flower: step %s stopped at the generation limit (%d)", step, gl.Max)})
	}
	end := Event{Kind: KindStepEnd, Step: step, RunDir: runDir, Status: manifest.StatusFailed}
	if st != nil {
		end.Status, end.CostUSD, end.Generations, end.SessionID, end.Path = st.Status, st.CostUSD, len(st.Generations), st.SessionID, st.HandoffPath
	}
	if err != nil {
		end.Error = err.Error()
	}
	end.Text = fmt.Sprintf("flower: step %s %s · $%.2f · %d generations", step, end.Status, end.CostUSD, end.Generations)
	return append(out, end)
}

func generations(st *manifest.StepResult) int {
	if st == nil {
		return 0
	}
	return len(st.Generations)
}
