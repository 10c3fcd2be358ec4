package main

import "github.com/urfave/cli/v2"

var demoCommand = &cli.Command{
	Name:   "demo",
	Usage:  "watch a handoff happen on the real harness against a scripted local model",
	Action: func(c *cli.Context) error { return usagef("demo: not implemented yet") },
}
