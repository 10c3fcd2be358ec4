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
		// A secured server (DESIGN.md «Secured servers»): the Temporal
		// CLI's own flag and variable names.
		&cli.BoolFlag{Name: "tls", EnvVars: []string{"TEMPORAL_TLS"}, DefaultText: "on with a --tls-* flag or an API key",
			Usage: "connect with TLS (the system's CAs); --tls=false: plain even with an API key"},
		&cli.StringFlag{Name: "tls-ca-path", EnvVars: []string{"TEMPORAL_TLS_CA_PATH"}, Usage: "the CAs (PEM `FILE`) that sign the server's certificate"},
		&cli.StringFlag{Name: "tls-cert-path", EnvVars: []string{"TEMPORAL_TLS_CERT_PATH"}, Usage: "the client certificate (PEM `FILE`), for mTLS"},
		&cli.StringFlag{Name: "tls-key-path", EnvVars: []string{"TEMPORAL_TLS_KEY_PATH"}, Usage: "the client certificate's key (PEM `FILE`)"},
		&cli.StringFlag{Name: "tls-server-name", EnvVars: []string{"TEMPORAL_TLS_SERVER_NAME"}, Usage: "the `NAME` the server's certificate carries, if not the host dialled"},
		&cli.StringFlag{Name: "api-key", EnvVars: []string{"TEMPORAL_API_KEY"}, DefaultText: "none",
			Usage: "the API `KEY` (Temporal Cloud), never printed; prefer the variable: a command line is public"},
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
