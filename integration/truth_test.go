package integration_test

// Flower reads the truth from the harness (get_context_usage, the
// result's modelUsage) instead of guessing from the model's name.

import (
	"strings"
	"testing"

	"github.com/flowerhq/flower/manifest"
	"github.com/flowerhq/flower/policy"
	"github.com/flowerhq/flower/scriptedapi"
	"github.com/flowerhq/flower/supervisor"
)

// A --window the harness contradicts by more than 10% is kept, with one
// warning that names both numbers.
func TestWindowFlagDisagreementWarnsOnce(t *testing.T) {
	t.Parallel()
	j := &job{plans: [][]scriptedapi.Reply{{bash(100_000, "echo one"), bash(800_000, "echo two")}, {done(30_000)}}, handoff: goodHandoff}
	pol := &policy.HandoffPolicy{Enabled: true, Window: 1_000_000}
	f, st, err := runFlower(t, j, supervisor.Options{Handoff: pol, Workbench: true}, "Flag task", "ANTHROPIC_MODEL=claude-sonnet-4-5")
	if err != nil {
		t.Fatalf("RunStep: %v", err)
	}
	var warnings []string
	for _, ev := range f.events {
		if ev.Kind == supervisor.KindNotice && strings.Contains(ev.Text, "disagrees") {
			warnings = append(warnings, ev.Text)
		}
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0], "1000000") || !strings.Contains(warnings[0], "200000") {
		t.Errorf("warnings %q, want exactly one naming 1000000 and 200000", warnings)
	}
	if st.Window != 1_000_000 || st.WindowSource != manifest.WindowFromFlag || len(st.Generations) != 2 {
		t.Errorf("window %d from %q over %d generations: the flag must win", st.Window, st.WindowSource, len(st.Generations))
	}
}

// A writing turn that calls a tool is interrupted and asked once more for
// the document only: the second answer is the handoff.
func TestWritingTurnToolCallAskedAgain(t *testing.T) {
	t.Parallel()
	asked := 0
	handoff := func(gen int) scriptedapi.Reply {
		asked++
		if asked == 1 {
			return bash(156_000, "cat Makefile")
		}
		return goodHandoff(gen - 1)
	}
	j := &job{plans: [][]scriptedapi.Reply{{bash(100_000, "echo one"), bash(155_000, "echo two")}, {done(30_000)}}, handoff: handoff}
	_, st, err := runFlower(t, j, supervisor.Options{Handoff: window200k(0), Workbench: true}, "Tool in writing")
	if err != nil {
		t.Fatalf("RunStep: %v", err)
	}
	h := st.Generations[0].Handoff
	if h == nil || h.Degraded || h.Outcome != manifest.OutcomeWrittenOnRetry {
		t.Fatalf("receipt %+v, want a complete handoff written on the second ask", h)
	}
	if asked != 2 {
		t.Errorf("the writing turn was asked %d times, want 2", asked)
	}
}

// Asked again, it calls a tool again: degraded, with that reason.
func TestWritingTurnToolCallTwiceDegrades(t *testing.T) {
	t.Parallel()
	j := &job{plans: [][]scriptedapi.Reply{{bash(100_000, "echo one"), bash(155_000, "echo two")}, {done(30_000)}},
		handoff: func(int) scriptedapi.Reply { return bash(156_000, "cat Makefile") }}
	_, st, err := runFlower(t, j, supervisor.Options{Handoff: window200k(0), Workbench: true}, "Tool in writing twice")
	if err != nil {
		t.Fatalf("RunStep: %v", err)
	}
	h := st.Generations[0].Handoff
	if h == nil || !h.Degraded || h.Outcome != manifest.OutcomeDegraded || !strings.Contains(h.Why, "called tools") {
		t.Fatalf("receipt %+v, want degraded because the writing turn called tools twice", h)
	}
	if len(j.writingSeq) != 2 {
		t.Errorf("%d writing-turn requests, want 2 (the ask and the second ask)", len(j.writingSeq))
	}
	if len(st.Generations) != 2 || st.Status != manifest.StatusSucceeded {
		t.Errorf("the run must go on after a degraded handoff: %d generations, %s", len(st.Generations), st.Status)
	}
}

func anyContains(list []string, sub string) bool {
	for _, s := range list {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}
