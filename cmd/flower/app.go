package main

import (
	"context"
	"io"
	"os"

	"github.com/urfave/cli/v2"

	"github.com/flowerhq/flower/relay"
)

// proc is the process around flower: its standard streams, its
// environment (the harness's base environment) and the harness arguments
// given after "--". Every command gets it as a value, so the tests run
// commands in-process with streams and an environment of their own.
type proc struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	env            []string
	harnessArgs    []string
	// argv is the whole command line, for a command that another
	// binary runs (delegate.go).
	argv []string
	// exec replaces the process with another program (syscall.Exec);
	// nil in tests, which run it as a child instead.
	exec func(path string, argv, env []string) error
}

// run is flower without the process around it: it parses args and runs the
// command, returning its error for main to print.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	return runIn(ctx, args, proc{stdin: stdin, stdout: stdout, stderr: stderr, env: os.Environ()})
}

// runIn runs flower in p, whose harness arguments come from args.
func runIn(ctx context.Context, args []string, p proc) error {
	if len(args) > 1 && relay.Wanted(args[1:]) {
		// Started in the harness's place by an application (DESIGN.md «Agent SDK relay»).
		return runRelay(ctx, args[1:], p)
	}
	own, harnessArgs := splitHarnessArgs(args)
	p.harnessArgs = harnessArgs
	p.argv = args
	app := &cli.App{
		Name:      "flower",
		Usage:     "run Claude Code or the Codex CLI for hours without losing context to compaction",
		UsageText: "flower [flags] TASK [-- HARNESS ARGS]\nflower [flags] -f task.md\necho TASK | flower [flags]\nflower COMMAND [flags]",
		Description: `flower runs an agent CLI (the harness: the Claude Code CLI, or the Codex
CLI with --harness-kind codex) on a task. When the main thread's context nears
the window, flower cuts the session at a message boundary, has that same
session write a handoff (doing / decided / dead ends / next / scene) to
<workspace>/.flower/notes/交接-<step>.md, and starts a fresh session from that
file. The harness's own compaction is held off while it runs.

Examples:
   flower "port the parser to Go and make the tests pass"
   flower --window 200000 -f task.md -- --allowedTools Bash Write Edit Read
   flower --harness-kind codex "the same on the Codex CLI"
   flower -i --harness-kind codex   # in the Codex CLI's own screen, under handoff
   flower --no-handoff "a short job, with the harness's own auto-compact"
   flower show                      # what the latest run did
   flower demo                      # see a handoff happen, no API key needed
   flower demo --harness-kind codex # the same on the Codex CLI

Many machines (Temporal):
   flower worker --temporal HOST:PORT --task-queue Q -- HARNESS ARGS
   flower submit --temporal HOST:PORT --task-queue Q -C /shared/dir --wait TASK
   flower show --temporal HOST:PORT WORKFLOW_ID

Started by an Agent SDK application in the harness's place (its
pathToClaudeCodeExecutable, or cli_path), flower acts as the harness; its
settings then come from FLOWER_* environment variables (see docs/guide.md).`,
		Flags: append(runFlags(), versionFlag()),
		Action: func(c *cli.Context) error {
			if c.Bool("version") {
				return printVersion(c.Context, p.stdout, c.String("harness"), c.String("harness-kind"))
			}
			if err := mistypedCommand(c, asTaskRun); err != nil {
				return err
			}
			return runAction(c, p)
		},
		// Built for this run: urfave/cli's setup rewrites a command's
		// HelpName in place, so commands shared between runs in one
		// process (the tests) would show "flower flower run".
		Commands: oneShapeOfUsageError([]*cli.Command{runCommand(p), aliased(continueCommand(p), "resume"), rerunCommand(p), stopCommand(p),
			showCommand(p), logsCommand(p), aliased(psCommand(p), "status", "list"), uiCommand(p), demoCommand(p), trustCommand(p),
			workerCommand(p), submitCommand(p), handoffCommand(p), doctorCommand(p), versionCommand(p), hookCommand(p), statusLineCommand(p)}),
		Reader:               p.stdin,
		Writer:               p.stdout,
		ErrWriter:            p.stderr,
		EnableBashCompletion: false,
		ExitErrHandler:       func(*cli.Context, error) {}, // main decides the exit code
		OnUsageError:         flagError,

		// A --workspace-root may hold a comma: no splitting of list flags.
		DisableSliceFlagSeparator: true,
	}
	return helpTopicError(app.RunContext(ctx, own))
}
