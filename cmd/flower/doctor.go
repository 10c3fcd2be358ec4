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
		UsageText: "flower doctor [--harness PATH] [--harness-kind claude|codex|gemini] [--json] [-- HARNESS ARGS]",
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
			&cli.StringFlag{Name: "harness", EnvVars: []string{"FLOWER_HARNESS"}, Usage: "the harness executable: claude, codex or gemini",
				DefaultText: "claude on PATH, else the copy make installed; codex or gemini the same with --harness-kind"},
			harnessKindFlag(),
			&cli.IntFlag{Name: "parallel", Value: 3, Usage: "checks run at a time"},
			&cli.BoolFlag{Name: "json", Usage: "print one JSON object (harness, kind, why, key, ok, took_ms, and facts: name, section, ok, detail, took_ms), not lines; the exit code is the same"},
		},
		Action: func(c *cli.Context) error { return doctorAction(c, p) },
	}
}

// errDoctor is a doctor run in which a fact did not hold.
var errDoctor = errors.New("the harness does not do everything flower relies on")

// doctorPlan is what a doctor run checks: the facts of the harness's kind
// and how to start it.
type doctorPlan struct {
	facts []checkup.Fact
	cfg   checkup.Config
	ch    harnessChoice
	kind  harnessKind
}

// planDoctor resolves the harness and its kind (chooseOf) into the facts
// to check.
func planDoctor(c *cli.Context, p proc) (doctorPlan, error) {
	ch, kind, err := chooseOf(c.Context, inherited(c, "harness"), inherited(c, "harness-kind"))
	if err != nil {
		return doctorPlan{}, err
	}
	return doctorPlan{facts: kind.info().doctor(), ch: ch, kind: kind,
		cfg: checkup.Config{Harness: ch.Path, Args: p.harnessArgs, Env: p.env, Flower: hookBinary, Logger: slog.New(slog.DiscardHandler)}}, nil
}

// header is the doctor's first line: which harness, why, and how it is
// checked.
func (plan doctorPlan) header() string {
	return plan.ch.Path + " (" + plan.kind.product() + ", " + plan.ch.Why + "), " + plan.kind.info().doctorHow
}

// keyLine says whether the model's tools can read the API key.
func (plan doctorPlan) keyLine(env []string) string {
	return plan.kind.info().key(env)
}

// doctorReport is flower doctor --json: one object.
type doctorReport struct {
	Harness string       `json:"harness"`
	Kind    harnessKind  `json:"kind"`
	Why     string       `json:"why"`
	Key     string       `json:"key"`
	OK      bool         `json:"ok"`
	TookMS  int64        `json:"took_ms"`
	Facts   []doctorFact `json:"facts"`
}

type doctorFact struct {
	Name    string `json:"name"`
	Section string `json:"section"`
	OK      bool   `json:"ok"`
	Detail  string `json:"detail"`
	TookMS  int64  `json:"took_ms"`
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
	asJSON := c.Bool("json")
	if !asJSON {
		fmt.Fprintf(p.stdout, "flower doctor: %s\n", plan.header())
		fmt.Fprintf(p.stdout, "flower doctor: %s\n", plan.keyLine(p.env))
	}
	start := time.Now()
	results := checkup.New(plan.cfg).Run(c.Context, plan.facts, c.Int("parallel"))
	took := time.Since(start)
	if c.Context.Err() != nil {
		return c.Context.Err()
	}
	rep := doctorReport{Harness: plan.ch.Path, Kind: plan.kind, Why: plan.ch.Why, Key: plan.keyLine(p.env), OK: true,
		TookMS: took.Milliseconds(), Facts: make([]doctorFact, 0, len(results))}
	failed := 0
	for _, r := range results {
		rep.Facts = append(rep.Facts, doctorFact{r.Fact.Name, r.Fact.Section, r.OK, r.Detail, r.Took.Milliseconds()})
		if !r.OK {
			failed++
			rep.OK = false
		}
		if !asJSON {
			fmt.Fprintln(p.stdout, r.Line())
		}
	}
	switch {
	case asJSON:
		if err := writeJSON(p.stdout, rep); err != nil {
			return err
		}
	case failed > 0:
		fmt.Fprintf(p.stdout, "flower doctor: %d of %d facts do not hold (%.1fs)\n", failed, len(results), took.Seconds())
	default:
		fmt.Fprintf(p.stdout, "flower doctor: all %d facts hold (%.1fs)\n", len(results), took.Seconds())
	}
	if failed > 0 {
		return errDoctor
	}
	return nil
}
