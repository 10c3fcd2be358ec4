package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/flowerhq/flower/console"
	"github.com/flowerhq/flower/interactive"
	"github.com/flowerhq/flower/manifest"
	"github.com/flowerhq/flower/supervisor"
)

// stopCommand is flower stop (DESIGN.md «Stopping a step»).
func stopCommand(p proc) *cli.Command {
	return &cli.Command{
		Name:      "stop",
		Usage:     "stop a running step at the next message boundary, continuable with flower continue",
		UsageText: "flower stop [-C DIR] [--step NAME] [--run-dir DIR] [--wait D]",
		Description: `Stops the flower that runs the step, as a Ctrl-C in its terminal would:
the running turn ends at a message boundary, the step is recorded as
interrupted, and its session stays the one flower continue resumes. It
writes no handoff first: stop means stop (a handoff would be one more paid
turn, and continue picks up the live session, context intact).

The step is found by its lock (docs/DESIGN.md «One step, one owner»): the
workspace's (-C, the current directory by default) or, with --run-dir,
that run's. flower stop signals only the process that holds the step's
lock, waits for it to exit, and prints the flower continue line. A step
that is not running exits 1.`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "workspace", Aliases: []string{"C"}, Value: ".", Usage: "the workspace whose step to stop"},
			&cli.StringFlag{Name: "run-dir", Usage: "stop the step running in this run `DIR` instead"},
			&cli.StringFlag{Name: "step", Value: "main", Usage: "the step's `NAME`"},
			&cli.DurationFlag{Name: "wait", Value: time.Minute, Usage: "wait this long at most for the step to stop"},
		},
		Action: func(c *cli.Context) error { return stopAction(c, p) },
	}
}

// errNotRunning is a stop of a step no flower runs.
var errNotRunning = errors.New("not running")

func stopAction(c *cli.Context, p proc) error {
	if c.NArg() > 0 {
		return usagef("stop takes no arguments, got %q (the step goes with --step)", c.Args().First())
	}
	if c.Duration("wait") <= 0 {
		return usagef("--wait must be more than zero")
	}
	workspace, err := filepath.Abs(c.String("workspace"))
	if err != nil {
		return err
	}
	runDir, step := c.String("run-dir"), c.String("step")
	if runDir != "" {
		if runDir, err = filepath.Abs(runDir); err != nil {
			return err
		}
	}
	where := "workspace " + workspace
	if runDir != "" {
		where = "run dir " + runDir
	}
	owner, running := supervisor.StepOwner(workspace, runDir, step)
	if !running || owner.PID <= 0 || owner.PID == os.Getpid() {
		return fmt.Errorf("step %s of %s is %w: nothing to stop (flower ps lists the running ones)", step, where, errNotRunning)
	}
	// Only the lock's holder is signalled: the pid its file names, which
	// must hold the lock itself (the kernel says who holds it, where it
	// can), checked again through a handle on the process (stop_linux.go).
	still := func() bool {
		o, ok := supervisor.StepOwner(workspace, runDir, step)
		return ok && o.PID == owner.PID && lockHeldBy(o.Path, o.PID)
	}
	if !still() {
		return fmt.Errorf("step %s of %s is %w: its lock names pid %d, which does not hold it", step, where, errNotRunning, owner.PID)
	}
	fmt.Fprintf(p.stderr, "flower: stopping step %s (flower pid %d); it finishes the current turn at a message boundary\n", step, owner.PID)
	exited, err := stopOwner(owner.PID, still, c.Duration("wait"))
	if errors.Is(err, errNotRunning) {
		return fmt.Errorf("step %s of %s is %w: nothing to stop", step, where, err)
	} else if err != nil {
		return fmt.Errorf("stop flower pid %d: %w", owner.PID, err)
	}
	if !exited {
		return fmt.Errorf("flower pid %d is still stopping after %v: `kill %d` once more stops it at once", owner.PID, c.Duration("wait"), owner.PID)
	}
	printStopped(p, owner.RunDir, step)
	return nil
}

// printStopped says how the step ended and how to continue it, from its
// manifest.
func printStopped(p proc, runDir, step string) {
	var st *manifest.StepResult
	if runDir != "" {
		if m, err := manifest.LoadBound(runDir); err == nil {
			st = m.Step(step)
		}
	}
	if st == nil {
		fmt.Fprintf(p.stderr, "flower: step %s stopped\n", step)
		return
	}
	fmt.Fprintf(p.stderr, "flower: step %s stopped (%s)\n", step, st.Status)
	fmt.Fprint(p.stderr, console.Escape(interactive.ContinueHint(runDir, st, nil)))
}
