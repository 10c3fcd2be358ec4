package main

import (
	"fmt"
	"log/slog"
	"os"
	"slices"

	"github.com/urfave/cli/v2"

	"github.com/flowerhq/flower/console"
	"github.com/flowerhq/flower/event"
	"github.com/flowerhq/flower/fleet"
	"github.com/flowerhq/flower/supervisor"
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

func workerAction(c *cli.Context, p proc) error {
	if c.NArg() > 0 {
		return usagef("flower worker takes no arguments (harness arguments go after --), got %q", c.Args().First())
	}
	if c.Int("slots") < 1 {
		return usagef("--slots must be at least 1")
	}
	set, err := settingsFrom(c, p)
	if err != nil {
		return err
	}
	harnessPath, err := findHarness(set.harness)
	if err != nil {
		return err
	}
	lang, err := console.ParseLang(set.view.lang)
	if err != nil {
		return usageError{err}
	}
	identity := c.String("identity")
	if identity == "" {
		host, _ := os.Hostname()
		identity = fmt.Sprintf("%s-%d", host, os.Getpid())
	}
	logger := slog.New(slog.NewTextHandler(p.stderr, &slog.HandlerOptions{Level: slog.LevelError})) // notices reach the status lines
	cl, err := dialTemporal(c, identity, logger)
	if err != nil {
		return err
	}
	defer cl.Close()
	status := console.NewStatus(p.stderr, lang)
	g := &fleet.Generations{Identity: identity, Options: supervisor.Options{
		Handoff: set.handoff, Compact: set.compact, HarnessPath: harnessPath, HarnessArgs: p.harnessArgs,
		Env: set.harnessEnv, Model: set.model, MaxAttempts: set.maxAttempts, TurnTimeout: set.turnTimeout,
		TaskCarry: set.taskCarry, Logger: logger,
		OnEvent: func(ev event.Event) {
			switch ev.Kind {
			case event.KindGeneration:
				fmt.Fprintf(p.stderr, "flower worker: step %s · generation %d started\n", ev.Step, ev.Generation)
			case event.KindHandoff, event.KindNotice, event.KindRetry:
				status.Handle(ev)
			}
		},
	}}
	w := fleet.NewWorker(cl, c.String("task-queue"), g, c.Int("slots"))
	fmt.Fprintf(p.stderr, "flower worker %s: taking generations from task queue %s at %s\n", identity, c.String("task-queue"), c.String("temporal"))
	stop := make(chan any)
	go func() {
		<-c.Context.Done()
		close(stop)
	}()
	if err := w.Run(stop); err != nil {
		return fmt.Errorf("worker: %w", err)
	}
	return c.Context.Err()
}
