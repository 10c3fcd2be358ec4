package main

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/flowerhq/flower/checkup"
)

func doctorCommand(p proc) *cli.Command {
	return &cli.Command{
		Name:      "doctor",
		Usage:     "check, in seconds, that the harness flower would run still does what flower relies on",
		UsageText: "flower doctor [--harness PATH] [-- HARNESS ARGS]",
		Description: `Starts the harness a run would start (--harness, else FLOWER_HARNESS, else
claude on PATH, else the copy make installed), the way a run starts it: the
same flags, environment and settings, with the harness arguments given after
"--". Each check has a HOME and a workspace of its own and a scripted model
on 127.0.0.1: no API key, no network, nothing billed.

It prints one line per fact flower relies on, ✓ or ✗, with the section of
docs/DESIGN.md that relies on it, and exits 0 only when every fact holds.
Run it after updating claude.`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "harness", EnvVars: []string{"FLOWER_HARNESS"}, Usage: "the claude executable", DefaultText: "claude on PATH, else the copy make installed"},
			&cli.IntFlag{Name: "parallel", Value: 3, Usage: "checks run at a time"},
		},
		Action: func(c *cli.Context) error { return doctorAction(c, p) },
	}
}

// errDoctor is a doctor run in which a fact did not hold.
var errDoctor = errors.New("the harness does not do everything flower relies on")

func doctorAction(c *cli.Context, p proc) error {
	if c.NArg() > 0 {
		return usagef("doctor takes no arguments, got %q (harness arguments go after --)", c.Args().First())
	}
	if c.Int("parallel") < 1 {
		return usagef("--parallel must be at least 1")
	}
	path, err := findHarness(c.String("harness"))
	if err != nil {
		return err
	}
	fmt.Fprintf(p.stdout, "flower doctor: %s, started as a run starts it, against a scripted model on 127.0.0.1\n", path)
	start := time.Now()
	cu := checkup.New(checkup.Config{Harness: path, Args: p.harnessArgs, Env: p.env, Logger: slog.New(slog.DiscardHandler)})
	results := cu.Run(c.Context, checkup.Facts(), c.Int("parallel"))
	failed := 0
	for _, r := range results {
		fmt.Fprintln(p.stdout, r.Line())
		if !r.OK {
			failed++
		}
	}
	if c.Context.Err() != nil {
		return c.Context.Err()
	}
	if failed > 0 {
		fmt.Fprintf(p.stdout, "flower doctor: %d of %d facts do not hold (%.1fs)\n", failed, len(results), time.Since(start).Seconds())
		return errDoctor
	}
	fmt.Fprintf(p.stdout, "flower doctor: all %d facts hold (%.1fs)\n", len(results), time.Since(start).Seconds())
	return nil
}
