package main

import (
	"context"
	"io"

	"github.com/urfave/cli/v2"
)

// streams carries the process's standard streams to the commands, so tests
// can run them in-process.
type streams struct {
	stdin          io.Reader
	stdout, stderr io.Writer
}

type ctxKey struct{}

func streamsOf(c *cli.Context) streams { return c.Context.Value(ctxKey{}).(streams) }

// run is flower without the process around it: it parses args and runs the
// command, returning its error for main to print.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	own, harnessArgs := splitHarnessArgs(args)
	ctx = context.WithValue(ctx, ctxKey{}, streams{stdin: stdin, stdout: stdout, stderr: stderr})
	ctx = context.WithValue(ctx, harnessArgsKey{}, harnessArgs)
	app := &cli.App{
		Name:      "flower",
		Usage:     "run Claude Code for hours without losing context to auto-compact",
		UsageText: "flower [flags] TASK [-- HARNESS ARGS]\nflower [flags] -f task.md\necho TASK | flower [flags]\nflower COMMAND [flags]",
		Description: `flower runs the Claude Code CLI (the harness) on a task. When the main
thread's context nears the window, flower cuts the session at a message
boundary, has that same session write a handoff (doing / decided / dead ends /
next / scene) to <workspace>/.flower/notes/交接-<step>.md, and starts a fresh
session from that file. Auto-compact is switched off while it runs.

Examples:
   flower "port the parser to Go and make the tests pass"
   flower --window 200000 -f task.md -- --allowedTools Bash Write Edit Read
   flower --no-handoff "a short job, with the harness's own auto-compact"
   flower show                      # what the latest run did
   flower demo                      # see a handoff happen, no API key needed`,
		Flags:                runFlags(),
		Action:               runAction,
		Commands:             fresh(runCommand, continueCommand, rerunCommand, showCommand, logsCommand, demoCommand),
		Reader:               stdin,
		Writer:               stdout,
		ErrWriter:            stderr,
		HideHelpCommand:      true,
		EnableBashCompletion: false,
		ExitErrHandler:       func(*cli.Context, error) {}, // main decides the exit code
		OnUsageError: func(_ *cli.Context, err error, _ bool) error {
			return usageError{err}
		},
	}
	return app.RunContext(ctx, own)
}

// fresh copies the commands for one run: urfave/cli's setup rewrites a
// command's HelpName in place, prefixing it again on every run, so a second
// run in the same process (the tests) would show "flower flower run".
func fresh(cmds ...*cli.Command) []*cli.Command {
	out := make([]*cli.Command, len(cmds))
	for i, c := range cmds {
		cp := *c
		out[i] = &cp
	}
	return out
}

type harnessArgsKey struct{}

func harnessArgsOf(c *cli.Context) []string {
	v, _ := c.Context.Value(harnessArgsKey{}).([]string)
	return v
}
