package integration_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flowerhq/flower/fleet"
)

// Two workflows with the same step on one shared workspace (DESIGN.md «One
// step, one owner»): while the first one's generation runs, the second
// one's is refused at once, without retries, with an error naming the
// holder's pid and run dir that its step shows; the first goes on
// untouched.
func TestTemporalSameStepOneWorkspaceRefused(t *testing.T) {
	ts := startTemporal(t)
	g := newGate()
	_, script := threeGenerationJob("TASK-MARK-FIRST", g) // the first workflow's generation 1 waits
	srv := startServer(t, script)
	queue := randomID("q")
	ws := t.TempDir()
	worker := ts.startWorker(t, srv, queue, "worker-a", "--window", "200000", "--max-generations", "1")
	first, second := randomID("first"), randomID("second")
	sub := startFlower(t, harnessEnv(t, srv), "submit", "--temporal", ts.addr, "--task-queue", queue, "-C", ws,
		"--id", first, "--wait", "Build the shim. TASK-MARK-FIRST")
	waitFor(t, "the first workflow's first request", g.hit)

	code, out := runFlowerCLI(t, harnessEnv(t, srv), "submit", "--temporal", ts.addr, "--task-queue", queue, "-C", ws,
		"--id", second, "--wait", "Build the shim. TASK-MARK-SECOND")
	holder := fmt.Sprintf("is being run by flower pid %d (run dir %s)", worker.cmd.Process.Pid, fleet.RunDir(ws, first))
	if code != 1 || !strings.Contains(flat(out), holder) {
		t.Errorf("the second workflow: exit %d, want 1 and %q:\n%s", code, holder, out)
	}
	st := ts.status(t, second)
	if len(st.Record.Errors) != 1 || !strings.Contains(st.Record.Errors[0], holder) {
		t.Errorf("the second step's errors %q, want the refusal once", st.Record.Errors)
	}
	if show := ts.show(t, second); !strings.Contains(flat(show), holder) {
		t.Errorf("flower show --temporal does not show the refusal:\n%s", show)
	}
	for _, ev := range ts.history(t, second).raw.Events {
		if a := ev.GetActivityTaskStartedEventAttributes(); a != nil && a.GetAttempt() != 1 {
			t.Errorf("the refused generation ran %d attempts, want one (no retries)", a.GetAttempt())
		}
	}
	for _, r := range srv.Requests() {
		if strings.Contains(r.AllText, "TASK-MARK-SECOND") {
			t.Errorf("request %d carries the refused workflow's task", r.Seq)
		}
	}
	g.open()
	// One generation allowed: the first workflow ends at the limit, as
	// it would have alone.
	if code := sub.wait(temporalLimit); code != 3 {
		t.Errorf("the first workflow's submit exited %d, want 3 (its generation limit):\n%s", code, sub.output())
	}
	if notes := filepath.Join(ws, ".flower", "notes", "任务-main.md"); !strings.Contains(readFileOr(notes), "TASK-MARK-FIRST") {
		t.Errorf("%s does not hold the first workflow's task: %q", notes, readFileOr(notes))
	}
}

// readFileOr is the file's contents, or "" if it cannot be read.
func readFileOr(path string) string {
	b, _ := os.ReadFile(path)
	return string(b)
}
