// Command flower runs Claude Code under generational handoff: when the main
// thread's context nears the window, the session writes a handoff a person can
// read and edit, and a fresh session takes over from it.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"
	"time"

	"github.com/flowerhq/flower/child"
	"github.com/flowerhq/flower/console"
	"github.com/flowerhq/flower/policy"
	"github.com/flowerhq/flower/supervisor"
)

// Exit codes, documented in the README.
const (
	exitOK          = 0
	exitFailed      = 1 // the step failed, or flower could not run it
	exitUsage       = 2 // bad flags or input
	exitLimit       = 3 // max generations reached (DESIGN.md «Runaway guard»)
	exitInterrupted = 130
)

// usageError marks errors caused by how flower was called.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func usagef(format string, a ...any) error { return usageError{fmt.Errorf(format, a...)} }

func main() {
	if os.Getenv("GOGC") == "" {
		// flower keeps little data alive but reads a harness's whole
		// stream, much of it long lines dropped at once. A heap goal of
		// 1.5× the live data, not 2×, keeps its resident set flat however
		// long the stream runs (make bench-e2e measures 10 MB against
		// 500 MB).
		debug.SetGCPercent(50)
	}
	if os.Getenv("GOMEMLIMIT") == "" && memoryLimit > 0 {
		// A soft ceiling on the Go heap: a long stream's rare late
		// collection no longer raises the resident peak (10 MB against
		// 500 MB: +3.8 % with it, +10 to +18 % without). Past it the
		// collector works harder, never fails: a line of tens of MB
		// still fits.
		debug.SetMemoryLimit(memoryLimit)
	}
	if exe, err := os.Executable(); err == nil {
		hookBinary = exe
	}
	ctx, stop := signalContext()
	defer stop()
	err := runIn(ctx, os.Args, proc{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr, env: os.Environ(), exec: syscall.Exec})
	if err != nil && !errors.As(err, new(exitedWith)) {
		// Errors quote workspace files, manifests and servers' answers.
		fmt.Fprintln(os.Stderr, "flower:", console.Escape(err.Error()))
	}
	os.Exit(exitCode(err))
}

func exitCode(err error) int {
	var ue usageError
	var ew exitedWith
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &ew):
		return ew.code
	case errors.As(err, &ue):
		return exitUsage
	case errors.Is(err, policy.ErrGenerationLimit):
		return exitLimit
	case errors.Is(err, context.Canceled):
		return exitInterrupted
	case errors.Is(err, supervisor.ErrStepFailed):
		return exitFailed
	}
	return exitFailed
}

// signalContext is cancelled by the first SIGINT or SIGTERM: the harness
// gets it as an interrupt, the running turn ends at a message boundary, and
// the step is recorded as interrupted (flower continue picks it up). A
// second signal kills every harness process group at once; the step is
// still recorded as it unwinds, and flower exits within a moment even if
// that hangs.
func signalContext() (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(context.Background())
	ch := make(chan os.Signal, 2)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	go func() {
		sig := <-ch
		fmt.Fprintf(os.Stderr, "\nflower: %v: finishing the current turn (again to stop at once)\n", sig)
		cancel(fmt.Errorf("%w by %v", context.Canceled, sig))
		sig = <-ch
		n := child.KillAll()
		fmt.Fprintf(os.Stderr, "flower: %v again: killed the harness (%d process group(s)); stopping now\n", sig, n)
		time.Sleep(secondSignalGrace)
		os.Exit(exitInterrupted)
	}()
	return ctx, func() { signal.Stop(ch); cancel(nil) }
}

// secondSignalGrace is how long the step has, after a second signal killed
// the harness, to record itself before flower exits regardless.
const secondSignalGrace = 2 * time.Second

// splitHarnessArgs splits argv at the first "--": what follows goes to the
// harness untouched.
func splitHarnessArgs(argv []string) (own, harness []string) {
	for i, a := range argv {
		if a == "--" {
			return argv[:i], argv[i+1:]
		}
	}
	return argv, nil
}
