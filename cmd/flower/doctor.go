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
		UsageText: "flower doctor [--harness PATH] [--harness-kind claude|codex] [-- HARNESS ARGS]",
		Description: `Starts the harness a run would start (--harness, else FLOWER_HARNESS, else
claude on PATH, else the copy make installed), the way a run starts it: the
same flags, environment and settings, with the harness arguments given after
"--". Each check has a HOME and a workspace of its own and a scripted model
on 127.0.0.1: no API key, no network, nothing billed.

With --harness-kind codex (or a --harness whose --version says codex-cli),
it checks the Codex CLI instead (codex on PATH, else the copy make codex
installed): its app-server against a scripted Responses API on 127.0.0.1,
with a CODEX_HOME of its own, and flower itself as its PreCompact hook; the
arguments after "--" go to codex app-server, as a run's do.

It prints one line per fact flower relies on, ✓ or ✗, with the section of
docs/DESIGN.md that relies on it, and exits 0 only when every fact holds.
Run it after updating claude or codex.`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "harness", EnvVars: []string{"FLOWER_HARNESS"}, Usage: "the harness executable: claude, or codex",
				DefaultText: "claude on PATH, else the copy make installed; codex the same with --harness-kind codex"},
			harnessKindFlag(),
			&cli.IntFlag{Name: "parallel", Value: 3, Usage: "checks run at a time"},
		},
		Action: func(c *cli.Context) error { return doctorAction(c, p) },
	}
}

// errDoctor is a doctor run in which a fact did not hold.
var errDoctor = errors.New("the harness does not do everything flower relies on")

// doctorPlan is what a doctor run checks: the facts of the harness's kind
// and how to start it.
type doctorPlan struct {
	facts  []checkup.Fact
	cfg    checkup.Config
	header string
	claude bool // the Claude Code CLI's facts
}

// planDoctor resolves the harness and its kind (harnessOf) into the facts
// to check.
func planDoctor(c *cli.Context, p proc) (doctorPlan, error) {
	ch, kind, err := chooseOf(c.Context, inherited(c, "harness"), inherited(c, "harness-kind"))
	if err != nil {
		return doctorPlan{}, err
	}
	path := ch.Path
	cfg := checkup.Config{Harness: path, Args: p.harnessArgs, Env: p.env, Logger: slog.New(slog.DiscardHandler)}
	if kind != kindCodex {
		return doctorPlan{checkup.Facts(), cfg, path + " (" + ch.Why + "), started as a run starts it, against a scripted model on 127.0.0.1", true}, nil
	}
	cfg.Flower = hookBinary
	return doctorPlan{checkup.CodexFacts(), cfg, path + " (the Codex CLI), " + ch.Why + ", its app-server against a scripted Responses API on 127.0.0.1", false}, nil
}

func doctorAction(c *cli.Context, p proc) error {
	if c.NArg() > 0 {
		return usagef("doctor takes no arguments, got %q (harness arguments go after --)", c.Args().First())
	}
	if c.Int("parallel") < 1 {
		return usagef("--parallel must be at least 1")
	}
	plan, err := planDoctor(c, p)
	if err != nil {
		return err
	}
	fmt.Fprintf(p.stdout, "flower doctor: %s\n", plan.header)
	if plan.claude {
		fmt.Fprintf(p.stdout, "flower doctor: %s\n", keyLine(p.env))
	} else {
		fmt.Fprintf(p.stdout, "flower doctor: %s\n", codexKeyLine)
	}
	start := time.Now()
	results := checkup.New(plan.cfg).Run(c.Context, plan.facts, c.Int("parallel"))
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
