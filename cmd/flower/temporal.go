package main

import (
	"errors"
	"log/slog"

	"github.com/urfave/cli/v2"
	"go.temporal.io/sdk/client"

	"github.com/flowerhq/flower/fleet"
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

// dialTemporal connects to the server the flags name. A server that does
// not answer is a usage error: one line, exit 2.
func dialTemporal(c *cli.Context, identity string, log *slog.Logger) (client.Client, error) {
	cl, err := fleet.Dial(c.Context, fleet.Conn{HostPort: c.String("temporal"), Namespace: c.String("namespace"),
		Identity: identity, Logger: log})
	if errors.Is(err, fleet.ErrUnreachable) {
		return nil, usageError{err}
	}
	return cl, err
}

// oneArg is the command's single argument, named what for the error.
func oneArg(c *cli.Context, what string) (string, error) {
	if c.NArg() != 1 {
		return "", usagef("want one %s, got %d arguments", what, c.NArg())
	}
	return c.Args().First(), nil
}
