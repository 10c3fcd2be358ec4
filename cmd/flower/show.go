package main

import "github.com/urfave/cli/v2"

var showCommand = &cli.Command{
	Name:      "show",
	Usage:     "show what a run did, from its manifest",
	UsageText: "flower show [RUN_DIR]",
	Action:    func(c *cli.Context) error { return usagef("show: not implemented yet") },
}
