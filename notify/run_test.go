package notify_test

import (
	"testing"

	"github.com/flowerhq/flower/event"
	"github.com/flowerhq/flower/handoffwriter"
	"github.com/flowerhq/flower/manifest"
	"github.com/flowerhq/flower/notify"
)

func TestFromRun(t *testing.T) {
	done := event.Event{Kind: event.KindHandoff, Phase: event.PhaseDone, Step: "main", Generation: 2, Degraded: true,
		Why: "overflow", Path: "/w/.flower/notes/交接-main.md", Reason: "overflow", CostUSD: 1.5,
		Handoff: &handoffwriter.Handoff{}, Text: "the task text is never copied"}
	ev, ok := notify.FromRun(done, "/run")
	if !ok || ev.Kind != notify.KindHandoff || !ev.Degraded || ev.Path != done.Path || ev.Generation != 2 || ev.RunDir != "/run" || ev.Why != "overflow" {
		t.Fatalf("FromRun(done) = %+v, %v", ev, ok)
	}
	left := event.Event{Kind: event.KindLimitWait, Phase: event.PhaseExceeded, Step: "main", Generation: 1,
		Why: "the usage limit did not lift within --max-wait 2s", Path: "/w/.flower/notes/交接-main.md"}
	if ev, ok := notify.FromRun(left, "/run"); !ok || ev.Kind != notify.KindHandoff || !ev.Degraded || ev.Path != left.Path || ev.Why != left.Why {
		t.Errorf("FromRun(limit wait exceeded) = %+v, %v; want a degraded handoff with its path", ev, ok)
	}
	for _, e := range []event.Event{
		{Kind: event.KindHandoff, Phase: event.PhaseNear}, {Kind: event.KindHandoff, Phase: event.PhaseWriting},
		{Kind: event.KindText, Text: "hello"}, {Kind: event.KindTurn}, {Kind: event.KindGeneration},
	} {
		if ev, ok := notify.FromRun(e, "/run"); ok {
			t.Errorf("FromRun(%s/%s) = %+v, want none", e.Kind, e.Phase, ev)
		}
	}
}

func TestStepEnded(t *testing.T) {
	st := &manifest.StepResult{Name: "main", Status: manifest.StatusGenerationLimit, CostUSD: 2.25,
		Generations: make([]manifest.Generation, 3), HandoffPath: "/h.md", Errors: []string{"交接降级(overflow)", "generation limit"}}
	evs := notify.StepEnded(st, "/run", 3)
	if len(evs) != 2 || evs[0].Kind != notify.KindGenerationLimit || evs[0].MaxGenerations != 3 || evs[1].Kind != notify.KindStepEnd {
		t.Fatalf("StepEnded(generation limit) = %+v", evs)
	}
	if e := evs[1]; e.Status != manifest.StatusGenerationLimit || e.CostUSD != 2.25 || e.Generations != 3 || e.Error != "generation limit" || e.Path != "/h.md" {
		t.Errorf("step_end = %+v", e)
	}
	st.Status = manifest.StatusSucceeded
	if evs := notify.StepEnded(st, "/run", 3); len(evs) != 1 || evs[0].Status != manifest.StatusSucceeded || evs[0].Error != "" {
		t.Errorf("StepEnded(success) = %+v", evs)
	}
}
