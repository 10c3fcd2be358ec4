package interactive

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/flowerhq/flower/child"
	"github.com/flowerhq/flower/harness/harnesstest"
)

// A second Ctrl-C reaches the harness in a pty too: harness.KillAll kills
// its session's group, signals ignored or not, and the tools it started in
// sessions of their own, with their environment cleared. Not parallel: KillAll reaches every harness of the
// test binary.
func TestKillAllReachesThePTYHarness(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "escapee")
	script := `trap '' INT TERM HUP; setsid env -i /bin/sh -c 'echo $$ > "$0"; exec /bin/sleep 60' "$1" & sleep 60`
	p, err := startProc(context.Background(), procConfig{
		Path: "sh", Args: []string{"-c", script, "harness", pidFile},
		Env: os.Environ(), Grace: 100 * time.Millisecond,
	}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Stop(nil) })
	escapee := 0
	for deadline := time.Now().Add(5 * time.Second); escapee == 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the harness's tool did not start")
		}
		b, _ := os.ReadFile(pidFile)
		escapee, _ = strconv.Atoi(strings.TrimSpace(string(b)))
	}

	if n := child.KillAll(); n != 1 {
		t.Errorf("KillAll reached %d harnesses, want 1", n)
	}
	select {
	case <-p.Exited():
	case <-time.After(2 * time.Second):
		t.Fatal("the pty harness still runs 2s after KillAll")
	}
	for deadline := time.Now().Add(time.Second); len(harnesstest.Alive([]int{escapee})) > 0 || harnesstest.GroupAlive(p.PID()); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("left after KillAll: tool %v, group %v", harnesstest.Alive([]int{escapee}), harnesstest.GroupMembers(p.PID()))
		}
	}
	if n := child.KillAll(); n != 0 {
		t.Errorf("KillAll reached %d harnesses after the harness exited, want 0", n)
	}
}
