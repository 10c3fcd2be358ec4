package main

import (
	"fmt"
	"path/filepath"

	"github.com/urfave/cli/v2"

	"github.com/flowerhq/flower/fleet"
	"github.com/flowerhq/flower/supervisor"
)

func handoffCommand(p proc) *cli.Command {
	return &cli.Command{
		Name:      "handoff",
		Usage:     "change the handoff a step's next generation starts from",
		UsageText: "flower handoff set --temporal HOST:PORT WORKFLOW_ID FILE",
		Subcommands: []*cli.Command{{
			Name:      "set",
			Usage:     "the next generation of a step run on many machines starts from FILE",
			UsageText: "flower handoff set --temporal HOST:PORT [--namespace N] WORKFLOW_ID FILE",
			Description: `Sends FILE, a handoff document, to the step's workflow: the next generation
to start (after the running one hands off) starts from it instead of the
handoff it would have started from. Both versions stay in the workflow's
history. FILE must have the required sections (doing, next).

Examples:
   flower show --temporal 127.0.0.1:7233 --json flower-main-… | jq -r .Handoff > h.md
   $EDITOR h.md && flower handoff set --temporal 127.0.0.1:7233 flower-main-… h.md`,
			Flags:  temporalFlags(true),
			Action: func(c *cli.Context) error { return handoffSetAction(c, p) },
		}},
	}
}

func handoffSetAction(c *cli.Context, p proc) error {
	if c.NArg() != 2 {
		return usagef("want WORKFLOW_ID FILE, got %d arguments", c.NArg())
	}
	id, file := c.Args().Get(0), c.Args().Get(1)
	_, doc, err := supervisor.ReadHandoffFile(file)
	if err != nil {
		return usageError{err}
	}
	cl, err := dialTemporal(c, "", nil)
	if err != nil {
		return err
	}
	defer cl.Close()
	abs, _ := filepath.Abs(file)
	if err := fleet.SetHandoff(c.Context, cl, id, fleet.HandoffEdit{Document: string(doc), From: abs}); err != nil {
		return err
	}
	fmt.Fprintf(p.stderr, "flower: the next generation of %s starts from %s\n", id, file)
	return nil
}
