package main

import "github.com/urfave/cli/v2"

var logsCommand = &cli.Command{
	Name:      "logs",
	Usage:     "print a run's structured log readably",
	UsageText: "flower logs [-f] [--json] [RUN_DIR]",
	Action:    func(c *cli.Context) error { return usagef("logs: not implemented yet") },
}
