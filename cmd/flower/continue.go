package main

import "github.com/urfave/cli/v2"

var continueCommand = &cli.Command{
	Name:   "continue",
	Usage:  "resume a step's latest session (never a retired generation)",
	Action: func(c *cli.Context) error { return usagef("continue: not implemented yet") },
}

var rerunCommand = &cli.Command{
	Name:   "rerun",
	Usage:  "start a fresh generation from the step's handoff file as it is on disk now",
	Action: func(c *cli.Context) error { return usagef("rerun: not implemented yet") },
}
