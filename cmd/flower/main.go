// Command flower runs Claude Code under generational handoff: when the main
// thread's context nears the window, the session writes a handoff a person can
// read and edit, and a fresh session takes over from it.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"syscall"
	"time"

	"github.com/flowerhq/flower/child"
	"github.com/flowerhq/flower/console"
	"github.com/flowerhq/flower/policy"
	"github.com/flowerhq/flower/supervisor"
)

// Exit codes, documented in docs/reference.md (its table of exit codes;
// docs_test.go keeps the two in step).
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
	stopProfile := startCPUProfile()
	sig := watchSignals()
	done := make(chan error, 1)
	go func() {
		done <- runIn(sig.ctx, os.Args, proc{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr, env: os.Environ(), exec: syscall.Exec})
	}()
	err := sig.wait(done)
	stopProfile()
	if err != nil && !errors.As(err, new(exitedWith)) {
		// Errors quote workspace files, manifests and servers' answers.
		fmt.Fprintln(os.Stderr, "flower:", console.Escape(personMessage(err)))
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
	case errors.Is(err, supervisor.ErrStopped): // unattended: exit 4, 5, 6 for a bound (unattended.go)
		code, _ := stopCode(err)
		return code
	case errors.Is(err, policy.ErrGenerationLimit):
		return exitLimit
	case errors.Is(err, context.Canceled):
		return exitInterrupted
	case errors.Is(err, supervisor.ErrStepFailed):
		return exitFailed
	}
	return exitFailed
}

// signals is how SIGINT and SIGTERM stop a run. The first cancels the
// run's context: the harness gets it as an interrupt, the running turn ends
// at a message boundary, and the step is recorded as interrupted (flower
// continue picks it up). A second kills every harness process group at
// once; the step is still recorded as it unwinds, and main exits within
// secondSignalGrace even if that hangs. Only main exits.
type signals struct {
	ctx    context.Context
	cancel context.CancelCauseFunc
	ch     chan os.Signal
	killed chan struct{} // closed once a second signal killed the harness
	kill   func() int    // kills every harness group (child.KillAll)
	live   func() int    // how many harnesses run (child.Live)
	grace  time.Duration // secondSignalGrace
	out    io.Writer     // where the signals are said (stderr)
}

func watchSignals() *signals {
	s := newSignals()
	signal.Notify(s.ch, os.Interrupt, syscall.SIGTERM)
	go s.handle()
	return s
}

func newSignals() *signals {
	ctx, cancel := context.WithCancelCause(context.Background())
	return &signals{ctx: ctx, cancel: cancel, ch: make(chan os.Signal, 2), killed: make(chan struct{}),
		kill: child.KillAll, live: child.Live, grace: secondSignalGrace, out: os.Stderr}
}

// handle is the signal goroutine: it cancels, then kills, and never exits
// the process.
func (s *signals) handle() {
	sig := <-s.ch
	// Only a harness has a turn to finish: a command that runs none (logs
	// -f, ps) just stops.
	if s.live() > 0 {
		fmt.Fprintf(s.out, "\nflower: %v: finishing the current turn (again to stop at once)\n", sig)
	} else {
		fmt.Fprintf(s.out, "\nflower: %v: stopping\n", sig)
	}
	s.cancel(child.Interruption{Signal: sig})
	sig = <-s.ch
	n := s.kill()
	fmt.Fprintf(s.out, "flower: %v again: killed the harness (%d process group(s)); stopping now\n", sig, n)
	close(s.killed)
}

// wait gives the run's result from done; after a second signal it waits
// at most secondSignalGrace, then gives up on the run with the signal's
// cause (exit 130).
func (s *signals) wait(done <-chan error) error {
	select {
	case err := <-done:
		return err
	case <-s.killed:
	}
	t := time.NewTimer(s.grace)
	defer t.Stop()
	select {
	case err := <-done:
		return err
	case <-t.C:
		return fmt.Errorf("%w; the step was still recording itself %v later", context.Cause(s.ctx), s.grace)
	}
}

// personMessage is err as a person reads it: Go's "context canceled" of a
// run that was cancelled says what happened instead.
func personMessage(err error) string {
	msg := err.Error()
	if errors.Is(err, context.Canceled) {
		msg = strings.ReplaceAll(msg, context.Canceled.Error(), "interrupted")
	}
	if errors.Is(err, context.DeadlineExceeded) {
		msg = strings.ReplaceAll(msg, context.DeadlineExceeded.Error(), "timed out")
	}
	return msg
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
