package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/flowerhq/flower/event"

	"github.com/creack/pty"

	"github.com/flowerhq/flower/interactive"
)

// TestInteractiveRouting: -i, or no task on a terminal, is the interactive
// mode; with no task on a pipe the task is read from it as before.
func TestInteractiveRouting(t *testing.T) {
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer ptmx.Close()
	defer tty.Close()
	pipeR, pipeW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pipeR.Close()
	pipeW.Close() // an empty task

	tests := []struct {
		name  string
		args  []string
		stdin io.Reader
		want  func(error) bool
	}{
		{"-i needs a terminal", []string{"-i"}, strings.NewReader("task"), func(err error) bool { return errors.Is(err, interactive.ErrNotTerminal) }},
		{"-i with a pipe", []string{"-i"}, pipeR, func(err error) bool { return errors.Is(err, interactive.ErrNotTerminal) }},
		{"no task on a pipe reads it", nil, pipeR, func(err error) bool { return err != nil && strings.Contains(err.Error(), "the task is empty") }},
		// On a terminal the interactive mode starts; with no harness to be
		// found it stops at that, past the task reading.
		{"no task on a terminal", []string{"--harness", "/nonexistent/claude"}, tty, func(err error) bool {
			return err != nil && strings.Contains(err.Error(), "harness /nonexistent/claude")
		}},
		{"-i with stream-json", []string{"-i", "--output", "stream-json"}, tty, func(err error) bool {
			return err != nil && strings.Contains(err.Error(), "cannot be used with the interactive mode")
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			args := append([]string{"flower", "-C", t.TempDir()}, tt.args...)
			err := run(context.Background(), args, tt.stdin, &out, &errOut)
			if !tt.want(err) {
				t.Errorf("err = %v", err)
			}
		})
	}
}

func TestScreenRenderer(t *testing.T) {
	r := screenRenderer{lang: "zh"}
	near := event.Event{Kind: event.KindHandoff, Phase: event.PhaseNear, Context: 130_000, Window: 200_000, At: 150_000}
	if got, want := r.Title(near), "flower · 上下文 130.0K/200K · 还有约 20K 到换代"; got != want {
		t.Errorf("near title %q, want %q", got, want)
	}
	if got := r.Lines(near); got != "# 上下文 130.0K/200K · 还有约 20K 到换代\n" {
		t.Errorf("near lines %q", got)
	}
	done := event.Event{Kind: event.KindHandoff, Phase: event.PhaseDone, Context: 152_000, Window: 200_000, Path: "/w/.flower/notes/交接-main.md"}
	if r.Title(done) != "" {
		t.Errorf("a done handoff leaves the title alone (the harness is about to go)")
	}
	if got := r.Lines(done); !strings.Contains(got, "<- 交接写在 /w/.flower/notes/交接-main.md\n") {
		t.Errorf("done lines %q", got)
	}
}
