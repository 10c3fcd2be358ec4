package main

import (
	"time"

	"github.com/urfave/cli/v2"
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
3 generation limit, 4 budget, 5 deadline).

A step whose workspace lies outside the workers' --workspace-root dirs is
refused, and fails with that error. For a secured server, see the --tls-*
flags and $TEMPORAL_API_KEY.

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
			&cli.DurationFlag{Name: "heartbeat-timeout", Value: defaultHeartbeatTimeout, Usage: "a worker not heard from for this long is lost; its generation starts again on another"},
			langFlag("labels of the status lines"),
			// unattended: the step's budget, counted across workers, and its deadline
			&cli.Float64Flag{Name: "max-budget-usd", Usage: "stop the step once it has cost `USD`, on whichever workers: the session hands off, exit 4 with --wait", DefaultText: "none"},
			&cli.DurationFlag{Name: "max-duration", Usage: "stop the step `D` after it was submitted: the session hands off, exit 5 with --wait", DefaultText: "none"},
		),
		Action: func(c *cli.Context) error { return submitAction(c, p) },
	}
}

// minHeartbeatTimeout is the shortest --heartbeat-timeout: a running
// generation heartbeats every quarter of it, but not more often than every
// 200 ms, so a shorter one would lose every worker.
const minHeartbeatTimeout = time.Second

// checkSubmitFlags refuses values that cannot work, before the server is
// dialled.
func checkSubmitFlags(c *cli.Context) error {
	if d := c.Duration("heartbeat-timeout"); d < minHeartbeatTimeout {
		return usagef("--heartbeat-timeout must be at least %v, got %v", minHeartbeatTimeout, d)
	}
	return nil
}
