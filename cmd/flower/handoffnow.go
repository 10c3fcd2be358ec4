package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/flowerhq/flower/inbox"
	"github.com/flowerhq/flower/supervisor"
)

// handoffNowWait bounds how long handoff now waits for the running flower
// to take the request.
const handoffNowWait = 10 * time.Second

func handoffNowCommand(p proc) *cli.Command {
	return &cli.Command{
		Name:      "now",
		Usage:     "the running flower hands off at the next message boundary",
		UsageText: "flower handoff now [-C DIR] [--run-dir DIR] [--step NAME]\nflower handoff now --temporal HOST:PORT [--namespace N] WORKFLOW_ID",
		Description: `Asks the flower running a step for a handoff now: it cuts the session at the
next message boundary, has it write its handoff, and starts a fresh session
from it, as at the threshold (reason "requested"). Without --run-dir, the
latest run under the workspace; without --step, its one running step.
With --temporal, the step's workflow is signalled, and the worker running
its generation hands off.

In interactive mode (flower -i), Ctrl-\ does the same.`,
		Flags: append([]cli.Flag{
			workspaceFlag(),
			&cli.StringFlag{Name: "run-dir", Usage: "the run `DIR` (default: the workspace's latest run)"},
			&cli.StringFlag{Name: "step", Usage: "the step's `NAME` (default: the run's one running step)"},
		}, temporalFlags(false)...),
		Action: func(c *cli.Context) error {
			if c.String("temporal") != "" {
				return handoffNowTemporal(c, p)
			}
			return handoffNowAction(c, p)
		},
	}
}

func handoffNowAction(c *cli.Context, p proc) error {
	if c.NArg() > 0 {
		return usagef("flower handoff now takes no arguments (use --run-dir and --step), got %q", c.Args().First())
	}
	dir := c.String("run-dir")
	if dir == "" {
		var err error
		if dir, err = runDirOf(c); err != nil {
			return err
		}
	}
	dir, _ = filepath.Abs(dir)
	step := c.String("step")
	if step == "" {
		m, err := loadManifest(dir)
		if err != nil {
			return err
		}
		var running []string
		for _, st := range m.Steps {
			if _, ok := supervisor.StepHolder(dir, st.Name); ok {
				running = append(running, st.Name)
			}
		}
		switch len(running) {
		case 0:
			return fmt.Errorf("no step of %s is running: nothing to hand off", dir)
		case 1:
			step = running[0]
		default:
			return usagef("steps %s of %s are running: say which with --step", strings.Join(running, ", "), dir)
		}
	}
	pid, ok := supervisor.StepHolder(dir, step)
	if !ok {
		return fmt.Errorf("step %s of %s is not running: nothing to hand off", step, dir)
	}
	box := inbox.Dir(dir, step)
	name, err := inbox.Post(box, inbox.Request{Kind: inbox.KindHandoff, From: "flower handoff now"})
	if err != nil {
		return fmt.Errorf("ask for a handoff: %w", err)
	}
	for deadline := time.Now().Add(handoffNowWait); !inbox.Taken(box, name); {
		if time.Now().After(deadline) {
			inbox.Withdraw(box, name)
			return fmt.Errorf("the flower running step %s (pid %d) did not take the request within %v; withdrawn", step, pid, handoffNowWait)
		}
		time.Sleep(20 * time.Millisecond)
	}
	fmt.Fprintf(p.stdout, "flower: step %s (flower pid %d) hands off at the next message boundary\n", step, pid)
	return nil
}
