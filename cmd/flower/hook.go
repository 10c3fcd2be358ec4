package main

import (
	"github.com/urfave/cli/v2"

	"github.com/flowerhq/flower/levers"
)

// hookBinary is the flower executable the harness runs as its PreCompact
// hook. main sets it: the tests run commands in-process, inside a test
// binary no harness may run.
var hookBinary string

// hookCommand is flower's PreCompact hook, run by the harness (never by a
// person): it reports the attempt to the running flower through the
// step's inbox and blocks the compaction (DESIGN.md «Compaction levers»).
func hookCommand(p proc) *cli.Command {
	return &cli.Command{
		Name:   "hook",
		Hidden: true,
		Usage:  "flower's own harness hooks (run by the harness)",
		Subcommands: []*cli.Command{{
			Name:  "precompact",
			Usage: "block a compaction and tell the running flower",
			Flags: []cli.Flag{&cli.StringFlag{Name: "inbox", Usage: "the step's inbox directory"},
				&cli.BoolFlag{Name: "codex", Usage: "answer as the Codex CLI obeys ({\"continue\":false})"}},
			Action: func(c *cli.Context) error {
				answer := levers.BlockDecision()
				if c.Bool("codex") {
					answer = levers.StopDecision()
				}
				return levers.RunHookAnswering(p.stdin, p.stdout, c.String("inbox"), answer)
			},
		}},
	}
}
