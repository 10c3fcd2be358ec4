package fleet_test

import (
	"context"
	"errors"
	"testing"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/flowerhq/flower/fleet"
	"github.com/flowerhq/flower/manifest"
	"github.com/flowerhq/flower/supervisor"
)

// The workflow's own logic, with the generations played by a function (the
// SDK's in-memory environment): what the next generation starts from, and
// how the step's ends end the workflow. The real activity, server and
// harness are in integration/temporal_test.go.

func outcome(n int, end, doc, errMsg string) *fleet.Outcome {
	o := &fleet.Outcome{GenerationResult: supervisor.GenerationResult{Step: "s", N: n, End: end, Handoff: doc, Error: errMsg,
		Generations: []manifest.Generation{{N: n, SessionID: "sess-" + doc}}}}
	if doc != "" {
		o.Generations[0].Handoff = &manifest.HandoffRecord{Reason: manifest.ReasonThreshold}
	}
	return o
}

func run(t *testing.T, gens func(n int, in fleet.GenerationTask) (*fleet.Outcome, error), setup func(*testsuite.TestWorkflowEnvironment)) (*testsuite.TestWorkflowEnvironment, []fleet.GenerationTask) {
	t.Helper()
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	fleet.Register(env)
	var inputs []fleet.GenerationTask
	env.RegisterActivityWithOptions(func(ctx context.Context, in fleet.GenerationTask) (*fleet.Outcome, error) {
		inputs = append(inputs, in)
		return gens(len(inputs), in)
	}, activity.RegisterOptions{Name: fleet.ActivityType})
	if setup != nil {
		setup(env)
	}
	env.ExecuteWorkflow(fleet.WorkflowType, fleet.StepInput{Step: "s", Task: "the task", Workspace: "/w"})
	if !env.IsWorkflowCompleted() {
		t.Fatal("the workflow did not complete")
	}
	return env, inputs
}

func TestWorkflowHandsOffUntilDone(t *testing.T) {
	env, inputs := run(t, func(n int, in fleet.GenerationTask) (*fleet.Outcome, error) {
		if n < 3 {
			return outcome(n, supervisor.EndHandoff, "H"+string(rune('0'+n)), ""), nil
		}
		return outcome(n, supervisor.EndSucceeded, "", ""), nil
	}, nil)
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	want := []string{"", "H1", "H2"}
	if len(inputs) != 3 {
		t.Fatalf("%d generations ran, want 3", len(inputs))
	}
	for i, in := range inputs {
		if in.Handoff != want[i] || in.Replaced || in.Task != "the task" || in.Workspace != "/w" {
			t.Errorf("generation %d started from %+v, want handoff %q", i+1, in, want[i])
		}
	}
	var st fleet.Status
	if err := env.GetWorkflowResult(&st); err != nil {
		t.Fatal(err)
	}
	if st.Record.Status != "succeeded" || len(st.Record.Generations) != 3 || st.Handoffs[2] != "H2" || len(st.Record.Retired) != 0 {
		t.Errorf("status: %+v", st)
	}
}

// A person's edit replaces the handoff of the next generation to start,
// once; the one after starts from its predecessor's own handoff again.
func TestWorkflowEditReplacesNextHandoff(t *testing.T) {
	env, inputs := run(t, func(n int, in fleet.GenerationTask) (*fleet.Outcome, error) {
		if n < 3 {
			return outcome(n, supervisor.EndHandoff, "H"+string(rune('0'+n)), ""), nil
		}
		return outcome(n, supervisor.EndSucceeded, "", ""), nil
	}, func(env *testsuite.TestWorkflowEnvironment) {
		env.RegisterDelayedCallback(func() {
			env.SignalWorkflow(fleet.SignalSetHandoff, fleet.HandoffEdit{Document: "EDIT", From: "/tmp/e.md"})
		}, 0)
	})
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	if len(inputs) != 3 || inputs[1].Handoff != "EDIT" || !inputs[1].Replaced || inputs[2].Handoff != "H2" || inputs[2].Replaced {
		t.Errorf("inputs: %+v", inputs)
	}
}

// The step's unsuccessful ends end the workflow with the engine's message,
// typed by the step's status (what flower submit --wait picks its exit
// code by).
func TestWorkflowEnds(t *testing.T) {
	for _, end := range []string{supervisor.EndGenerationLimit, supervisor.EndFailed} {
		env, inputs := run(t, func(n int, in fleet.GenerationTask) (*fleet.Outcome, error) {
			return outcome(n, end, "H1", "the engine's message"), nil
		}, nil)
		var app *temporal.ApplicationError
		if err := env.GetWorkflowError(); !errors.As(err, &app) || app.Type() != end || app.Message() != "the engine's message" {
			t.Errorf("%s: workflow error %v", end, err)
		}
		if len(inputs) != 1 {
			t.Errorf("%s: %d generations ran after the end", end, len(inputs))
		}
		var st fleet.Status
		if app == nil || app.Details(&st) != nil || st.Record.Status != end || len(st.Record.Generations) != 1 {
			t.Errorf("%s: the error does not carry the step's status: %+v", end, st)
		}
	}
}

// A generation that cannot be set up on a worker fails the step at once.
func TestWorkflowSetupErrorFails(t *testing.T) {
	env, inputs := run(t, func(n int, in fleet.GenerationTask) (*fleet.Outcome, error) {
		return nil, temporal.NewNonRetryableApplicationError("bad options", fleet.ErrTypeSetup, nil)
	}, nil)
	if err := env.GetWorkflowError(); err == nil || len(inputs) != 1 {
		t.Errorf("error %v after %d attempts, want a failed workflow after 1", err, len(inputs))
	}
	// The error says it in the activity's words and type, and carries the
	// step's status, so an ended step shows without a worker.
	var app *temporal.ApplicationError
	var st fleet.Status
	if err := env.GetWorkflowError(); !errors.As(err, &app) || app.Type() != fleet.ErrTypeSetup || app.Message() != "generation 1: bad options" ||
		app.Details(&st) != nil || st.Record.Status != supervisor.EndFailed || len(st.Record.Errors) != 1 || st.Record.Errors[0] != "generation 1: bad options" {
		t.Errorf("workflow error %v, status %+v", err, st.Record)
	}
}

// A handoff asked for (flower handoff now --temporal) is counted in the
// status the running generation's worker reads; the next generation starts
// knowing the count, so it does not hand off again for the same ask.
func TestWorkflowCountsHandoffsAsked(t *testing.T) {
	env, inputs := run(t, func(n int, in fleet.GenerationTask) (*fleet.Outcome, error) {
		if n < 2 {
			return outcome(n, supervisor.EndHandoff, "H1", ""), nil
		}
		return outcome(n, supervisor.EndSucceeded, "", ""), nil
	}, func(env *testsuite.TestWorkflowEnvironment) {
		env.RegisterDelayedCallback(func() { env.SignalWorkflow(fleet.SignalHandoffNow, "test") }, 0)
	})
	var st fleet.Status
	if err := env.GetWorkflowResult(&st); err != nil {
		t.Fatal(err)
	}
	if st.HandoffsAsked != 1 || len(inputs) != 2 || inputs[0].AskedBefore != 0 || inputs[1].AskedBefore != 1 {
		t.Errorf("asked %d; inputs %+v: want 1, generation 2 starting at 1", st.HandoffsAsked, inputs)
	}
}
