package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/urfave/cli/v2"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/flowerhq/flower/console"
	"github.com/flowerhq/flower/event"
	"github.com/flowerhq/flower/fleet"
	"github.com/flowerhq/flower/policy"
	"github.com/flowerhq/flower/supervisor"
)

func submitCommand(p proc) *cli.Command {
	return &cli.Command{
		Name:      "submit",
		Usage:     "start a step on the workers of a Temporal task queue",
		UsageText: "flower submit --temporal HOST:PORT [--namespace N] --task-queue Q [--step NAME] [--wait] TASK",
		Description: `Starts TASK as a step (a Temporal workflow) that the workers of the task
queue run one generation at a time, and prints its workflow id. The
workspace (-C) must be where every worker sees it, at the same path.
With --wait it follows the step to its end with the status lines of a
local run and exits with the same codes (0 succeeded, 1 failed,
3 generation limit).

Examples:
   flower submit --temporal 127.0.0.1:7233 --task-queue q -C /shared/app "make the tests pass"
   flower submit --temporal 127.0.0.1:7233 --task-queue q -f task.md --step build --wait`,
		Flags: append(temporalFlags(true),
			&cli.StringFlag{Name: "task-queue", Required: true, Usage: "the Temporal task `QUEUE` the workers take generations from"},
			&cli.StringFlag{Name: "task-file", Aliases: []string{"f"}, Usage: "read the task from `FILE` (- for stdin)"},
			&cli.StringFlag{Name: "workspace", Aliases: []string{"C"}, Value: ".", Usage: "the step's working `DIR`, the same path on every worker"},
			&cli.StringFlag{Name: "step", Value: "main", Usage: "the step's `NAME` (names the handoff file 交接-NAME.md)"},
			&cli.StringFlag{Name: "id", Usage: "the workflow `ID`", DefaultText: "flower-STEP-<time>"},
			&cli.BoolFlag{Name: "wait", Usage: "follow the step to its end, with the status lines of a local run"},
			&cli.DurationFlag{Name: "heartbeat-timeout", Value: fleet.DefaultHeartbeatTimeout, Usage: "a worker not heard from for this long is lost; its generation starts again on another"},
			&cli.StringFlag{Name: "lang", Value: "zh", Usage: "labels of the status lines: zh (as in the design) or en"},
		),
		Action: func(c *cli.Context) error { return submitAction(c, p) },
	}
}

func submitAction(c *cli.Context, p proc) error {
	task, err := readTask(c, p.stdin)
	if err != nil {
		return err
	}
	ws, err := filepath.Abs(c.String("workspace"))
	if err != nil {
		return err
	}
	if fi, err := os.Stat(ws); err != nil || !fi.IsDir() {
		return usagef("workspace %s is not a directory", ws)
	}
	lang, err := console.ParseLang(c.String("lang"))
	if err != nil {
		return usageError{err}
	}
	status := console.NewStatus(p.stderr, lang)
	if home, err := os.UserHomeDir(); err == nil {
		status.ShortenHome(home)
	}
	cl, err := dialTemporal(c, "", nil)
	if err != nil {
		return err
	}
	defer cl.Close()
	run, err := fleet.Submit(c.Context, cl, c.String("task-queue"), c.String("id"), fleet.StepInput{
		Step: c.String("step"), Task: task, Workspace: ws, HeartbeatTimeout: c.Duration("heartbeat-timeout")})
	if err != nil {
		return fmt.Errorf("submit step %s: %w", c.String("step"), err)
	}
	fmt.Fprintln(p.stdout, run.GetID())
	if !c.Bool("wait") {
		return nil
	}
	return follow(c.Context, cl, run, status.Handle, p)
}

// followEvery is how often a followed step is asked how it is doing.
const followEvery = 500 * time.Millisecond

// follow shows a remote step's status lines as a local run shows them: the
// near and writing lines from the running generation's heartbeat, a done
// handoff from each generation's result, and the summary at the end. It
// returns the step's error, whose kind gives the exit code of a local run.
func follow(ctx context.Context, cl client.Client, run client.WorkflowRun, status func(event.Event), p proc) error {
	id := run.GetID()
	result := make(chan error, 1)
	var final fleet.Status
	go func() { result <- run.Get(ctx, &final) }()
	shown := map[string]bool{} // generation and phase of the lines shown
	line := func(ev event.Event) {
		if key := fmt.Sprint(ev.Generation, ev.Phase); !shown[key] {
			shown[key] = true
			status(ev)
		}
	}
	show := func(st *fleet.Status) {
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
				console.Summary(p.stderr, &st, fleet.RunDir(final.Workspace, id))
			}
			return stepError(id, err)
		case <-tick.C:
			if st, err := fleet.Query(ctx, cl, id); err == nil {
				show(st)
			}
			if pr, err := fleet.Live(ctx, cl, id); err == nil && pr != nil {
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

// stepError turns the workflow's end into the error a local run returns
// for the same end: the same message, and the same exit code.
func stepError(id string, err error) error {
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
