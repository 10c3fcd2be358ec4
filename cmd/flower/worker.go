package main

import (
	"slices"

	"github.com/urfave/cli/v2"
)

// workerRunFlags are the run flags that mean something on a worker: how
// each generation it runs is supervised. The workspace and the step come
// with each step.
var workerRunFlags = []string{"window", "headroom", "max-generations", "task-carry", "no-handoff", "compact",
	"harness", "model", "max-attempts", "turn-timeout", "lang"}

func workerCommand(p proc) *cli.Command {
	flags := append(temporalFlags(true),
		&cli.StringFlag{Name: "task-queue", Required: true, Usage: "the Temporal task `QUEUE` to take generations from"},
		&cli.IntFlag{Name: "slots", Value: 4, Usage: "run at most `N` generations (harnesses) at once"},
		&cli.StringFlag{Name: "identity", Usage: "this worker's `NAME` in Temporal", DefaultText: "host name and pid"},
	)
	for _, f := range runFlags() {
		if slices.Contains(workerRunFlags, f.Names()[0]) {
			flags = append(flags, f)
		}
	}
	return &cli.Command{
		Name:      "worker",
		Usage:     "run generations of steps submitted to a Temporal server",
		UsageText: "flower worker --temporal HOST:PORT [--namespace N] --task-queue Q [run flags] [-- HARNESS ARGS]",
		Description: `Takes steps' generations from a Temporal task queue and runs each with the
same engine as a local run: harness, meter, cut, writing turn, retries,
degraded handoffs, the handoff file in the step's workspace. A step's
workspace must be on a volume every worker mounts, at the same path; a
worker that lacks it refuses the generation and another one takes it.
A worker that dies mid-generation is noticed by its missing heartbeat; the
generation starts again on another worker from the last handoff.

Examples:
   flower worker --temporal temporal.internal:7233 --task-queue builds -- --allowedTools Bash Write Edit Read
   flower worker --temporal 127.0.0.1:7233 --task-queue q --window 200000 --slots 2`,
		Flags:  flags,
		Action: func(c *cli.Context) error { return workerAction(c, p) },
	}
}
