package fleet_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/flowerhq/flower/fleet"
	"github.com/flowerhq/flower/manifest"
	"github.com/flowerhq/flower/supervisor"
)

// A step's budget is counted across workers: each generation is told the
// budget, the deadline, and what the earlier generations cost wherever they
// ran; a generation that stops at the budget ends the workflow with the
// step's status (DESIGN.md «Unattended: limits, budget, deadline»).
func TestWorkflowBudgetAcrossWorkers(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	fleet.Register(env)
	var inputs []fleet.GenerationTask
	env.RegisterActivityWithOptions(func(ctx context.Context, in fleet.GenerationTask) (*fleet.Outcome, error) {
		inputs = append(inputs, in)
		n := len(inputs)
		end := supervisor.EndHandoff
		if n == 3 {
			end = manifest.StatusBudget
		}
		o := outcome(n, end, "H", "")
		o.CostUSD = 1.5 // this generation's share
		if end != supervisor.EndHandoff {
			o.Error = "step s stopped (budget_reached): the budget of $4.00 is reached"
		}
		return o, nil
	}, activity.RegisterOptions{Name: fleet.ActivityType})
	deadline := time.Date(2026, 12, 2, 7, 0, 0, 0, time.UTC)
	env.ExecuteWorkflow(fleet.WorkflowType, fleet.StepInput{Step: "s", Task: "the task", Workspace: "/w", BudgetUSD: 4, Deadline: &deadline})
	if !env.IsWorkflowCompleted() {
		t.Fatal("the workflow did not complete")
	}
	if len(inputs) != 3 {
		t.Fatalf("%d generations ran, want 3", len(inputs))
	}
	for i, in := range inputs {
		if in.BudgetUSD != 4 || in.SpentUSD != 1.5*float64(i) || in.Deadline == nil || !in.Deadline.Equal(deadline) {
			t.Errorf("generation %d: budget %v, spent %v, deadline %v; want 4, %v, %s", i+1, in.BudgetUSD, in.SpentUSD, in.Deadline, 1.5*float64(i), deadline)
		}
	}
	var app *temporal.ApplicationError
	if err := env.GetWorkflowError(); !errors.As(err, &app) || app.Type() != manifest.StatusBudget {
		t.Fatalf("workflow error %v; want one of type %s", err, manifest.StatusBudget)
	}
	var st fleet.Status
	if err := app.Details(&st); err != nil || st.Record.BudgetUSD != 4 || st.Record.CostUSD != 4.5 || st.Record.Deadline == nil || !st.Record.Deadline.Equal(deadline) {
		t.Errorf("status %+v (%v); want the budget $4, $4.5 spent, the deadline", st.Record, err)
	}
}
