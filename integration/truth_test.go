package integration_test

// Flower reads the truth from the harness (get_context_usage, the
// result's modelUsage) instead of guessing from the model's name.

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flowerhq/flower/manifest"
	"github.com/flowerhq/flower/policy"
	"github.com/flowerhq/flower/scriptedapi"
	"github.com/flowerhq/flower/supervisor"
)

// claude-sonnet-4-5 is a 200k model to the harness, while the seed's name
// rule calls it 1M: without --window, flower must hand off at 150k, not 950k.
func TestWindowFromHarness(t *testing.T) {
	t.Parallel()
	if got := policy.DefaultWindow([]string{"ANTHROPIC_MODEL=claude-sonnet-4-5"}); got != 1_000_000 {
		t.Fatalf("premise: the name rule gives %d for claude-sonnet-4-5, want 1000000", got)
	}
	j := &job{plans: [][]scriptedapi.Reply{{bash(100_000, "echo one"), bash(155_000, "echo two")}, {done(30_000)}}, handoff: goodHandoff}
	_, st, err := runFlower(t, j, supervisor.Options{Workbench: true}, "Window task", "ANTHROPIC_MODEL=claude-sonnet-4-5")
	if err != nil {
		t.Fatalf("RunStep: %v", err)
	}
	if st.Window != 200_000 || st.WindowSource != manifest.WindowFromHarness {
		t.Errorf("window %d from %q, want 200000 from the harness", st.Window, st.WindowSource)
	}
	if len(st.Generations) != 2 || st.Generations[0].Handoff == nil {
		t.Fatalf("%d generations: no handoff at 155k under a 200k window", len(st.Generations))
	}
	h := st.Generations[0].Handoff
	if h.At != 150_000 || h.Window != 200_000 || h.WindowSource != manifest.WindowFromHarness || h.Context != 155_000 {
		t.Errorf("receipt %+v, want a handoff at 150K of the harness's 200K", h)
	}
	if st.Generations[0].HarnessWindow != 200_000 {
		t.Errorf("generation 1 harness window %d", st.Generations[0].HarnessWindow)
	}
}

// A --window the harness contradicts by more than 10% is kept, with one
// warning that names both numbers.
func TestWindowFlagDisagreementWarnsOnce(t *testing.T) {
	t.Parallel()
	j := &job{plans: [][]scriptedapi.Reply{{bash(100_000, "echo one"), bash(800_000, "echo two")}, {done(30_000)}}, handoff: goodHandoff}
	pol := policy.HandoffPolicy{Enabled: true, Window: 1_000_000}
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

// A fresh session whose first round is already above the threshold stops at
// once, with the measured floor, instead of burning eight generations.
func TestFutileHandoffStopsAfterOneGeneration(t *testing.T) {
	t.Parallel()
	j := &job{plans: [][]scriptedapi.Reply{{bash(23_456, "echo one"), done(24_000)}}, handoff: goodHandoff}
	pol := policy.HandoffPolicy{Enabled: true, Window: 30_000} // handoff at 10K
	f, st, err := runFlower(t, j, supervisor.Options{Handoff: pol, Workbench: true}, "Futile task")
	var gle *policy.GenerationLimitError
	if !errors.As(err, &gle) || !gle.Futile {
		t.Fatalf("err %v, want a futile generation-limit error", err)
	}
	for _, want := range []string{"23.5K", "start-up floor", "--window", "--no-handoff"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("message lacks %q: %v", want, err)
		}
	}
	if len(st.Generations) != 1 || len(j.writingSeq) != 0 || st.Status != manifest.StatusGenerationLimit {
		t.Errorf("%d generations, %d writing turns, status %s; want 1, 0, generation_limit", len(st.Generations), len(j.writingSeq), st.Status)
	}
	// Every request came from the one session that got the task: no
	// successor was started (a successor's first prompt is a handoff).
	for _, r := range f.srv.Requests() {
		if !strings.Contains(r.AllText, "Futile task") || strings.Contains(r.AllText, "You are taking over") {
			t.Errorf("request %d is not from the first session", r.Seq)
		}
	}
}

// The backstop on the real harness: a user's settings.json "env" block
// beats flower's DISABLE_AUTO_COMPACT=1, and the harness says auto-compact is
// on. flower must say so loudly in the manifest and the log.
func TestBackstopSeesAutoCompactOverridden(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	if err := os.MkdirAll(filepath.Join(home, ".claude"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, ".claude", "settings.json"), []byte(`{"env":{"DISABLE_AUTO_COMPACT":"0"}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	j := &job{plans: [][]scriptedapi.Reply{{done(20_000)}}, handoff: goodHandoff}
	f, st, err := runFlower(t, j, supervisor.Options{Workbench: true}, "Backstop task", "HOME="+home)
	if err != nil {
		t.Fatalf("RunStep: %v", err)
	}
	g := st.Generations[0]
	if g.AutoCompactEnabled == nil || !*g.AutoCompactEnabled {
		t.Fatalf("premise: the harness should report auto-compact on, got %v", g.AutoCompactEnabled)
	}
	if !anyContains(st.Errors, "auto-compact ON although handoff switched it off") {
		t.Errorf("manifest errors %q lack the backstop's entry", st.Errors)
	}
	notices := 0
	for _, ev := range f.events {
		if ev.Kind == supervisor.KindNotice && ev.IsError && strings.Contains(ev.Text, "auto-compact ON") {
			notices++
		}
	}
	if notices != 1 {
		t.Errorf("%d loud notices, want 1", notices)
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
