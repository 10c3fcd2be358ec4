// Package fleet runs steps on many machines through Temporal: a step is a
// workflow (FlowerStep), each of its generations one activity
// (FlowerGeneration) that a worker runs with the same engine as a local run
// (supervisor.Runtime.RunGeneration). The workflow only decides whether
// another generation follows, from the activities' results and a person's
// signals; every rule of a handoff stays in the engine. The handoff of
// every generation is in the workflow's history, and the workflow answers a
// status query with what manifest.json holds for a local step. See
// DESIGN.md «Many machines».
package fleet

import (
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/flowerhq/flower/supervisor"
)

// Names Temporal shows: the workflow and activity types, the query and the
// signal.
const (
	WorkflowType = "FlowerStep"
	ActivityType = "FlowerGeneration"
	// QueryStatus answers a Status.
	QueryStatus = "status"
	// SignalSetHandoff carries a HandoffEdit.
	SignalSetHandoff = "set-handoff"
	// SignalHandoffNow asks the running generation for a handoff at its
	// next message boundary (DESIGN.md «Handoff on request»); it carries
	// who asked.
	SignalHandoffNow = "handoff-now"
)

// Error types of the activity and the workflow, as Temporal's
// ApplicationError.Type() reports them.
const (
	// ErrTypeWorkspace: the step's workspace is not on the worker that got
	// the generation.
	ErrTypeWorkspace = "WorkspaceMissing"
	// ErrTypeBusy: another process runs the step: in the same run dir (a
	// lost worker's generation, retried), or in the same workspace for
	// another run (not retried).
	ErrTypeBusy = "StepBusy"
	// ErrTypeSetup: the worker could not set the engine up for the step.
	ErrTypeSetup = "Setup"
	// The step's own ends are its manifest statuses (supervisor.EndFailed,
	// EndGenerationLimit).
)

// Defaults of StepInput.
const (
	DefaultHeartbeatTimeout  = 30 * time.Second
	DefaultGenerationTimeout = 24 * time.Hour
	// DefaultLostRetries bounds how many times a generation is started
	// again after its worker was lost.
	DefaultLostRetries = 5
)

// StepInput starts a step.
type StepInput struct {
	Step string
	Task string
	// Workspace is the step's directory: on a shared volume, or the same
	// path on every worker.
	Workspace string
	// HeartbeatTimeout: a worker not heard from for this long is lost, and
	// its generation starts again on another one.
	HeartbeatTimeout time.Duration `json:",omitempty"`
	// GenerationTimeout bounds one generation.
	GenerationTimeout time.Duration `json:",omitempty"`
	// LostRetries bounds the restarts of one generation after lost workers.
	LostRetries int `json:",omitempty"`
	// unattended: the step's budget, counted across workers, and its deadline
	// (DESIGN.md «Unattended: limits, budget, deadline»); zero: none.
	BudgetUSD float64    `json:",omitempty"`
	Deadline  *time.Time `json:",omitempty"`
}

// GenerationTask is the activity's input: one generation of a step.
type GenerationTask struct {
	Step      string
	Task      string
	Workspace string
	// Handoff is the document the generation starts from ("" = the task);
	// Replaced says a person set it (SignalSetHandoff).
	Handoff  string `json:",omitempty"`
	Replaced bool   `json:",omitempty"`
	// HeartbeatTimeout is the activity's, for the heartbeat interval.
	HeartbeatTimeout time.Duration
	// AskedBefore is Status.HandoffsAsked when the generation started: a
	// count above it, read from the status query, asks this generation
	// for a handoff.
	AskedBefore int `json:",omitempty"`
	// unattended: the step's budget and deadline; SpentUSD is what the
	// step's earlier generations cost, on whichever workers they ran.
	BudgetUSD float64    `json:",omitempty"`
	SpentUSD  float64    `json:",omitempty"`
	Deadline  *time.Time `json:",omitempty"`
}

// HandoffEdit replaces the handoff the next generation starts from.
type HandoffEdit struct {
	Document string
	// From names where it came from (the file given to flower handoff set).
	From string `json:",omitempty"`
}

// StepWorkflow runs a step one generation at a time until it ends. It
// decides only from activity results and signals (it must replay
// deterministically): a handoff starts the next generation from the frozen
// document, or from a person's edit when one came in; any other end ends
// the workflow, with an error of the step's status for a step that did not
// succeed.
func StepWorkflow(ctx workflow.Context, in StepInput) (*Status, error) {
	st := newStatus(in, workflow.Now(ctx))
	if err := workflow.SetQueryHandler(ctx, QueryStatus, func() (*Status, error) { return st, nil }); err != nil {
		return nil, err
	}
	var edit *HandoffEdit
	listen(ctx, st, &edit)
	lim := limitsOf(in)
	doc, replaced := "", false
	for {
		if edit != nil {
			doc, replaced = edit.Document, true
			edit, st.Pending, st.PendingFrom = nil, "", ""
		}
		n := len(st.Record.Generations) + 1
		st.Running = n
		var res Outcome
		err := workflow.ExecuteActivity(generationOptions(ctx, in, lim, n), ActivityType, GenerationTask{Step: in.Step, Task: in.Task,
			Workspace: in.Workspace, Handoff: doc, Replaced: replaced, HeartbeatTimeout: lim.heartbeat, AskedBefore: st.HandoffsAsked,
			BudgetUSD: in.BudgetUSD, SpentUSD: spent(in, st), Deadline: in.Deadline}).Get(ctx, &res)
		st.Running = 0
		if err != nil {
			return st, generationFailed(ctx, st, n, err)
		}
		st.apply(&res.GenerationResult)
		st.Events = append(st.Events, res.Events...)
		switch res.End {
		case supervisor.EndHandoff:
			doc, replaced = res.Handoff, false
		case supervisor.EndSucceeded:
			st.end(workflow.Now(ctx))
			return st, nil
		default:
			st.end(workflow.Now(ctx))
			// The status goes with the error: a failed workflow has no result.
			return st, temporal.NewNonRetryableApplicationError(res.Error, res.End, nil, st)
		}
	}
}

// listen hears the step's signals for as long as it runs: a person's edit
// of the next handoff (kept in *edit and shown as pending in st) and a
// request to hand off now (counted in st).
func listen(ctx workflow.Context, st *Status, edit **HandoffEdit) {
	edits := workflow.GetSignalChannel(ctx, SignalSetHandoff)
	workflow.Go(ctx, func(ctx workflow.Context) {
		for {
			var e HandoffEdit
			edits.Receive(ctx, &e)
			*edit = &e
			st.Pending = e.Document
			st.PendingFrom = e.From
		}
	})
	asks := workflow.GetSignalChannel(ctx, SignalHandoffNow)
	workflow.Go(ctx, func(ctx workflow.Context) {
		for {
			var from string
			asks.Receive(ctx, &from)
			st.HandoffsAsked++
		}
	})
}

// limits are a step's bounds on each generation's activity.
type limits struct {
	heartbeat, timeout time.Duration
	retries            int
}

// limitsOf is in's limits, the defaults where it gives none.
func limitsOf(in StepInput) limits {
	l := limits{heartbeat: in.HeartbeatTimeout, timeout: in.GenerationTimeout, retries: in.LostRetries}
	if l.heartbeat <= 0 {
		l.heartbeat = DefaultHeartbeatTimeout
	}
	if l.timeout <= 0 {
		l.timeout = DefaultGenerationTimeout
	}
	if l.retries <= 0 {
		l.retries = DefaultLostRetries
	}
	return l
}

// generationOptions are the activity options of generation n.
func generationOptions(ctx workflow.Context, in StepInput, l limits, n int) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: l.timeout,
		HeartbeatTimeout:    l.heartbeat,
		Summary:             fmt.Sprintf("%s · generation %d", in.Step, n),
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:        time.Second,
			BackoffCoefficient:     2,
			MaximumInterval:        30 * time.Second,
			MaximumAttempts:        int32(l.retries) + 1,
			NonRetryableErrorTypes: []string{ErrTypeSetup},
		},
	})
}

// generationFailed ends the step on a generation that could not run: the
// activity's own words and type when it said why (a refused workspace,
// say), and the status with them, so that the step shows with no worker.
func generationFailed(ctx workflow.Context, st *Status, n int, err error) error {
	msg, typ := err.Error(), "GenerationFailed"
	var app *temporal.ApplicationError
	if errors.As(err, &app) {
		msg, typ = app.Message(), app.Type()
	}
	msg = fmt.Sprintf("generation %d: %s", n, msg)
	st.Record.Status = supervisor.EndFailed
	st.Record.AddError(msg)
	st.end(workflow.Now(ctx))
	return temporal.NewNonRetryableApplicationError(msg, typ, err, st)
}

// spent is what the step cost so far, when it has a budget to count it
// against (zero otherwise, so that a step without one sends what it always
// did).
func spent(in StepInput, st *Status) float64 {
	if in.BudgetUSD <= 0 {
		return 0
	}
	return st.Record.CostUSD
}
