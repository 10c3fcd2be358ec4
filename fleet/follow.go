package fleet

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/flowerhq/flower/console"
	"github.com/flowerhq/flower/event"
	"github.com/flowerhq/flower/manifest"
	"github.com/flowerhq/flower/policy"
	"github.com/flowerhq/flower/supervisor"
)

// followEvery is how often a followed step is asked how it is doing.
const followEvery = 500 * time.Millisecond

// Follow shows a remote step's status lines as a local run shows them: the
// near and writing lines from the running generation's heartbeat, a done
// handoff from each generation's result, and the summary at the end, on
// summary. It returns the step's error, whose kind gives the exit code of
// a local run (StepError).
func Follow(ctx context.Context, cl client.Client, run client.WorkflowRun, status func(event.Event), summary io.Writer) error {
	id := run.GetID()
	result := make(chan error, 1)
	var final Status
	go func() { result <- run.Get(ctx, &final) }()
	shown := map[string]bool{} // generation and phase of the lines shown
	line := func(ev event.Event) {
		if key := fmt.Sprint(ev.Generation, ev.Phase); !shown[key] {
			shown[key] = true
			status(ev)
		}
	}
	show := func(st *Status) {
		for _, ev := range st.Events {
			line(ev)
		}
	}
	tick := time.NewTicker(followEvery)
	defer tick.Stop()
	for {
		select {
		case err := <-result:
			show(&final)
			st := final.Record
			var app *temporal.ApplicationError
			if st.Name == "" && errors.As(err, &app) && app.HasDetails() {
				// A step that did not succeed carries its status in the error.
				if app.Details(&final) == nil {
					show(&final)
					st = final.Record
				}
			}
			if st.Name != "" {
				console.Summary(summary, &st, RunDir(final.Workspace, id))
			}
			return StepError(id, err)
		case <-tick.C:
			if st, err := Query(ctx, cl, id); err == nil {
				show(st)
			}
			if pr, err := Live(ctx, cl, id); err == nil && pr != nil {
				for _, ev := range []*event.Event{pr.Near, pr.Writing} {
					if ev != nil {
						line(*ev)
					}
				}
			}
		case <-ctx.Done():
			return fmt.Errorf("stopped following step %s (it runs on; flower show --temporal … %s): %w", id, id, context.Cause(ctx))
		}
	}
}

// StepError turns the workflow's end into the error a local run returns
// for the same end: the same message, and the same exit code.
func StepError(id string, err error) error {
	if err == nil {
		return nil
	}
	var app *temporal.ApplicationError
	if errors.As(err, &app) {
		switch app.Type() {
		case supervisor.EndGenerationLimit:
			return stepEnd{msg: app.Message(), kind: policy.ErrGenerationLimit}
		case supervisor.EndFailed:
			return stepEnd{msg: app.Message(), kind: supervisor.ErrStepFailed}
		case manifest.StatusBudget, manifest.StatusDeadline, manifest.StatusLimited, manifest.StatusAuthFailed, manifest.StatusUnreachable: // exit 4–8 as locally
			return stepEnd{msg: app.Message(), kind: &supervisor.StopError{Step: id, Status: app.Type(), Why: app.Message()}}
		default:
			// A generation that could not run (a refused workspace, say):
			// the worker's own words, without the SDK's wrapping.
			return stepEnd{msg: fmt.Sprintf("step %s failed: %s", id, app.Message()), kind: supervisor.ErrStepFailed}
		}
	}
	return fmt.Errorf("step %s: %w", id, err)
}

// stepEnd is how a remote step ended, said as the engine said it on the
// worker; kind is what the exit code is chosen by.
type stepEnd struct {
	msg  string
	kind error
}

func (e stepEnd) Error() string { return e.msg }
func (e stepEnd) Unwrap() error { return e.kind }
