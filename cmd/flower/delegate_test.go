//go:build !temporal

package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Without the Temporal client built in, the many-machines commands run
// flower-temporal with the whole command line and end with its exit code.
func TestTemporalCommandsRunTheTemporalBinary(t *testing.T) {
	bin := t.TempDir()
	script := "#!/bin/sh\necho \"flower-temporal got: $*\"\nexit 3\n"
	if err := os.WriteFile(filepath.Join(bin, temporalBinary), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	for _, args := range [][]string{
		{"worker", "--temporal", "h:1", "--task-queue", "q", "--", "--allowedTools", "Bash"},
		{"submit", "--temporal", "h:1", "--task-queue", "q", "--wait", "a task"},
		{"show", "--temporal", "h:1", "flower-main-1"},
		{"handoff", "set", "--temporal", "h:1", "flower-main-1", "h.md"},
	} {
		var out, errOut bytes.Buffer
		err := run(context.Background(), append([]string{"flower"}, args...), strings.NewReader(""), &out, &errOut)
		if got := exitCode(err); got != 3 {
			t.Errorf("flower %s: exit %d (%v), want flower-temporal's 3", args[0], got, err)
		}
		if want := "flower-temporal got: " + strings.Join(args, " ") + "\n"; out.String() != want {
			t.Errorf("flower %s: flower-temporal printed %q, want %q", args[0], out.String(), want)
		}
	}
	// A local show stays local.
	var out, errOut bytes.Buffer
	err := run(context.Background(), []string{"flower", "show", "-C", t.TempDir()}, strings.NewReader(""), &out, &errOut)
	if strings.Contains(out.String(), "flower-temporal got") {
		t.Errorf("flower show without --temporal ran flower-temporal (err %v)", err)
	}
}

// Without flower-temporal anywhere, the command says what to build: one
// line, exit 2.
func TestTemporalCommandsWithoutTheTemporalBinary(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	var out, errOut bytes.Buffer
	err := run(context.Background(), []string{"flower", "worker", "--temporal", "h:1", "--task-queue", "q"}, strings.NewReader(""), &out, &errOut)
	if exitCode(err) != exitUsage || err == nil || !strings.Contains(err.Error(), "make build") || !strings.Contains(err.Error(), temporalBinary) {
		t.Fatalf("got exit %d, %v; want exit 2 naming %s and how to build it", exitCode(err), err, temporalBinary)
	}
}

// A flower-temporal that is a copy of flower without the Temporal client
// says so instead of running itself again and again.
func TestTemporalBinaryOfTheWrongBuild(t *testing.T) {
	var out, errOut bytes.Buffer
	p := proc{stdin: strings.NewReader(""), stdout: &out, stderr: &errOut, env: append(os.Environ(), envDelegated+"=1")}
	err := runIn(context.Background(), []string{"flower", "worker", "--temporal", "h:1", "--task-queue", "q"}, p)
	if err == nil || !strings.Contains(err.Error(), "built without the Temporal client") {
		t.Fatalf("got %v, want the wrong build named", err)
	}
}
