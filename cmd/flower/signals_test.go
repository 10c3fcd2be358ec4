package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/flowerhq/flower/child"
)

// The first signal cancels the run's context and nothing else; main
// exits with what the run returns.
func TestFirstSignalCancelsTheRun(t *testing.T) {
	s := newSignals()
	kills := 0
	s.kill = func() int { kills++; return 0 }
	go s.handle()
	done := make(chan error, 1)
	go func() {
		<-s.ctx.Done() // a run that stops at its cancel
		done <- context.Cause(s.ctx)
	}()
	s.ch <- syscall.SIGTERM
	err := s.wait(done)
	if code := exitCode(err); code != exitInterrupted || !errors.Is(err, context.Canceled) {
		t.Errorf("wait = %v (exit %d), want the cancel (exit 130)", err, code)
	}
	if kills != 0 {
		t.Errorf("the first signal killed the harness")
	}
}

// The first signal says what it stops: the current turn where a harness
// runs, else the command (logs -f has no turn to finish).
func TestFirstSignalSaysWhatStops(t *testing.T) {
	for _, tt := range []struct {
		live int
		want string
	}{{0, "flower: terminated: stopping\n"}, {1, "flower: terminated: finishing the current turn (again to stop at once)\n"}} {
		s := newSignals()
		var out bytes.Buffer
		s.out, s.live = &out, func() int { return tt.live }
		s.kill = func() int { return 0 }
		go s.handle()
		s.ch <- syscall.SIGTERM
		<-s.ctx.Done()
		if got := strings.TrimPrefix(out.String(), "\n"); got != tt.want {
			t.Errorf("with %d harness(es) running: %q, want %q", tt.live, got, tt.want)
		}
	}
}

// A second signal kills the harness groups at once; a run that still does
// not return is waited for no longer than the grace, and main exits 130.
func TestSecondSignalBoundsTheWait(t *testing.T) {
	s := newSignals()
	s.grace = 50 * time.Millisecond
	killed := make(chan struct{})
	s.kill = func() int { close(killed); return 1 }
	go s.handle()
	done := make(chan error) // a run that never returns
	s.ch <- os.Interrupt
	<-s.ctx.Done()
	s.ch <- os.Interrupt
	start := time.Now()
	err := s.wait(done)
	select {
	case <-killed:
	default:
		t.Fatal("the second signal did not kill the harness")
	}
	if code := exitCode(err); code != exitInterrupted {
		t.Errorf("wait = %v (exit %d), want exit 130", err, code)
	}
	if took := time.Since(start); took < s.grace {
		t.Errorf("gave up after %v, before the grace of %v", took, s.grace)
	}
}

// A run that records itself within the grace is what main exits with.
func TestSecondSignalLetsTheRunFinish(t *testing.T) {
	s := newSignals()
	s.grace = time.Hour
	s.kill = func() int { return 1 }
	go s.handle()
	done := make(chan error, 1)
	go func() {
		<-s.killed
		done <- errors.New("step recorded")
	}()
	s.ch <- os.Interrupt
	s.ch <- os.Interrupt
	if err := s.wait(done); err == nil || err.Error() != "step recorded" {
		t.Errorf("wait = %v, want the run's own result", err)
	}
}

// A person never reads Go's "context canceled": a signal's cancel says
// which signal, and any other cancel or timeout says what happened; the
// exit code is still 130 for a cancel.
func TestPersonMessage(t *testing.T) {
	for _, tt := range []struct {
		err  error
		want string
	}{
		{fmt.Errorf("step main interrupted: %w", child.Interruption{Signal: syscall.SIGTERM}), "step main interrupted: by SIGTERM (flower stop, or kill)"},
		{fmt.Errorf("step main interrupted: %w", child.Interruption{Signal: os.Interrupt}), "step main interrupted: by Ctrl-C"},
		{fmt.Errorf("doctor: %w", context.Canceled), "doctor: interrupted"},
		{fmt.Errorf("dial: %w", context.DeadlineExceeded), "dial: timed out"},
	} {
		if got := personMessage(tt.err); got != tt.want {
			t.Errorf("personMessage(%v) = %q, want %q", tt.err, got, tt.want)
		}
	}
	if code := exitCode(fmt.Errorf("step: %w", child.Interruption{Signal: syscall.SIGTERM})); code != exitInterrupted {
		t.Errorf("a signal's cancel exits %d, want %d", code, exitInterrupted)
	}
}
