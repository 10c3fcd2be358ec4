package main

import (
	"slices"

	"github.com/urfave/cli/v2"
)

// workerRunFlags are the run flags that mean something on a worker: how
// each generation it runs is supervised. The workspace and the step come
// with each step.
var workerRunFlags = []string{"window", "headroom", "max-generations", "task-carry", "no-handoff", "compact",
	"harness", "model", "max-attempts", "turn-timeout", "lang",
	"skip-workspace-settings"}

func workerCommand(p proc) *cli.Command {
	flags := append(temporalFlags(true),
		&cli.StringFlag{Name: "task-queue", Required: true, Usage: "the Temporal task `QUEUE` to take generations from"},
		&cli.IntFlag{Name: "slots", Value: 4, Usage: "run at most `N` generations (harnesses) at once"},
		&cli.StringFlag{Name: "identity", Usage: "this worker's `NAME` in Temporal", DefaultText: "host name and pid"},
		&cli.StringSliceFlag{Name: "workspace-root", Usage: "run only steps whose workspace is `DIR` or below it, links resolved (repeatable; required: / accepts any)"},
	)
	for _, f := range runFlags() {
		switch name := f.Names()[0]; {
		case name == "harness":
			// A worker runs the Claude Code CLI only (its activity runs the
			// headless front).
			flags = append(flags, &cli.StringFlag{Name: "harness", EnvVars: []string{"FLOWER_HARNESS"}, Usage: "the claude executable (a worker runs the Claude Code CLI)", DefaultText: "claude on PATH, else the copy make installed"})
		case slices.Contains(workerRunFlags, name):
			flags = append(flags, f)
		}
	}
	return &cli.Command{
		Name:      "worker",
		Usage:     "run generations of steps submitted to a Temporal server",
		UsageText: "flower worker --temporal HOST:PORT [--namespace N] --task-queue Q --workspace-root DIR [run flags] [-- HARNESS ARGS]",
		Description: `Takes steps' generations from a Temporal task queue and runs each with the
same engine as a local run: harness, meter, cut, writing turn, retries,
degraded handoffs, the handoff file in the step's workspace. A step's
workspace must be on a volume every worker mounts, at the same path; a
worker that lacks it refuses the generation and another one takes it.
A worker that dies mid-generation is noticed by its missing heartbeat; the
generation starts again on another worker from the last handoff.

Anyone who can start a workflow on the task queue chooses the directory a
harness runs in, with its tools. So a worker needs --workspace-root, once
per directory it serves, and refuses to start without one: a step whose
workspace (every link in it resolved) lies outside them all is refused,
not retried, and the step fails with that error (flower submit --wait and
flower show --temporal show it). --workspace-root / serves any directory.

A secured server (Temporal Cloud, or mTLS on your own): --tls-ca-path,
--tls-cert-path and --tls-key-path, --tls-server-name, and the API key in
$TEMPORAL_API_KEY (or --api-key). submit, show and handoff set take them too.

Examples:
   flower worker --temporal temporal.internal:7233 --task-queue builds --workspace-root /shared -- --allowedTools Bash Write Edit Read
   flower worker --temporal 127.0.0.1:7233 --task-queue q --workspace-root ~/src --window 200000 --slots 2
   TEMPORAL_API_KEY=… flower worker --temporal NS.ACCT.tmprl.cloud:7233 --namespace NS.ACCT --task-queue q --workspace-root /shared`,
		Flags:  flags,
		Action: func(c *cli.Context) error { return workerAction(c, p) },
	}
}
