//go:build temporal

package main

import (
	"context"
	"strings"
	"testing"

	"go.temporal.io/sdk/temporal"

	"github.com/flowerhq/flower/fleet"
	"github.com/flowerhq/flower/manifest"
	"github.com/flowerhq/flower/supervisor"
)

// flower submit refuses a one-word task that is a command or near one, as
// the bare command line does, before any server is dialled (nothing listens
// at the address given).
func TestSubmitMistypedCommand(t *testing.T) {
	for _, word := range []string{"kill", "stop", "version", "shwo"} {
		var stdout, stderr strings.Builder
		err := run(context.Background(), []string{"flower", "submit", "--temporal", "127.0.0.1:1", "--task-queue", "q", "-C", t.TempDir(), word},
			strings.NewReader(""), &stdout, &stderr)
		if code := exitCode(err); code != exitUsage || !strings.Contains(err.Error(), "did you mean") || !strings.Contains(err.Error(), "-f FILE") {
			t.Errorf("submit %s: exit %d (%v), want %d with did you mean and -f FILE", word, code, err, exitUsage)
		}
	}
}

// A remote step that a bound or a refused key ended exits with the code a
// local run of it would (the exit codes of docs/reference.md).
func TestStepErrorExitCodes(t *testing.T) {
	for status, want := range map[string]int{
		manifest.StatusBudget: exitBudget, manifest.StatusDeadline: exitDeadline,
		manifest.StatusLimited: exitLimitWait, manifest.StatusAuthFailed: exitAuth,
		supervisor.EndFailed: exitFailed,
	} {
		err := fleet.StepError("main", temporal.NewNonRetryableApplicationError("step main: "+status, status, nil))
		if got := exitCode(err); got != want {
			t.Errorf("a remote step ended %s exits %d (%v), want %d", status, got, err, want)
		}
	}
}
