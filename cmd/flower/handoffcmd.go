package main

import (
	"github.com/urfave/cli/v2"
)

func handoffCommand(p proc) *cli.Command {
	return &cli.Command{
		Name:      "handoff",
		Usage:     "ask a running step for a handoff now, or change the one its next generation starts from",
		UsageText: "flower handoff now [-C DIR] [--run-dir DIR] [--step NAME]\nflower handoff set --temporal HOST:PORT WORKFLOW_ID FILE",
		Subcommands: []*cli.Command{handoffNowCommand(p), {
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
