package main

import (
	"time"

	"github.com/urfave/cli/v2"
)

// temporalFlags say where the Temporal server is; every command that runs
// or follows steps on many machines takes them.
func temporalFlags(required bool) []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "temporal", EnvVars: []string{"FLOWER_TEMPORAL"}, Required: required,
			Usage: "the Temporal server's `HOST:PORT`: run steps on many machines"},
		&cli.StringFlag{Name: "namespace", Usage: "the Temporal `NAMESPACE`; none: the server's default one"},
	}
}

// defaultHeartbeatTimeout is fleet.DefaultHeartbeatTimeout, which the
// flower binary cannot name without linking the Temporal client
// (remote_on.go checks they agree).
const defaultHeartbeatTimeout = 30 * time.Second

// oneArg is the command's single argument, named what for the error.
func oneArg(c *cli.Context, what string) (string, error) {
	if c.NArg() != 1 {
		return "", usagef("want one %s, got %d arguments", what, c.NArg())
	}
	return c.Args().First(), nil
}
