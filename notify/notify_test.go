package notify_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/flowerhq/flower/notify"
)

// logBuf is a slog destination the test can read while the notifier writes.
type logBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func newNotifier(t *testing.T, cmd string, timeout time.Duration, queue int, env []string) (*notify.Notifier, *logBuf) {
	t.Helper()
	var lb logBuf
	n := notify.New(notify.Options{Command: cmd, Timeout: timeout, Queue: queue, Env: env,
		Logger: slog.New(slog.NewJSONHandler(&lb, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if n == nil {
		t.Fatal("New returned nil for a command")
	}
	t.Cleanup(func() { n.Close(time.Second) })
	return n, &lb
}

// waitFile waits until path exists (the hook says it started).
func waitFile(t *testing.T, path string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if _, err := os.Stat(path); err == nil {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("%s never appeared", path)
}

// readEvents reads the JSON lines a hook appended to path.
func readEvents(t *testing.T, path string) []map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("hook got %q: %v", line, err)
		}
		out = append(out, m)
	}
	return out
}

func TestNoCommandNoNotifier(t *testing.T) {
	if n := notify.New(notify.Options{Command: "  "}); n != nil {
		t.Fatal("New with no command returned a Notifier")
	}
	var n *notify.Notifier
	n.Send(notify.Event{Kind: notify.KindStepEnd}) // a nil Notifier does nothing
	n.Close(0)
}

// TestDeliversInOrder: one event per run of the command, on stdin, in the
// order sent, with FLOWER_EVENT/STEP/RUN_DIR set and the harness's
// credentials removed from the environment.
func TestDeliversInOrder(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "events")
	env := []string{"PATH=" + os.Getenv("PATH"), "ANTHROPIC_API_KEY=sk-ant-secret-0123456789", "CLAUDE_CODE_OAUTH_TOKEN=sk-ant-oat-secret", "KEEP=me"}
	cmd := fmt.Sprintf(`{ cat; echo "$FLOWER_EVENT|$FLOWER_STEP|$FLOWER_RUN_DIR|$KEEP|${ANTHROPIC_API_KEY-unset}|${CLAUDE_CODE_OAUTH_TOKEN-unset}" >> %s.env; } >> %s`, out, out)
	n, _ := newNotifier(t, cmd, 5*time.Second, 0, env)
	kinds := []notify.Kind{notify.KindHandoff, notify.KindHandoff, notify.KindGenerationLimit, notify.KindStepEnd}
	for i, k := range kinds {
		n.Send(notify.Event{Kind: k, Step: "main", RunDir: "/runs/x", Generation: i + 1})
	}
	n.Close(20 * time.Second)
	got := readEvents(t, out)
	if len(got) != len(kinds) {
		t.Fatalf("hook ran %d times, want %d", len(got), len(kinds))
	}
	for i, m := range got {
		if m["kind"] != string(kinds[i]) || m["generation"] != float64(i+1) || m["step"] != "main" || m["time"] == "" {
			t.Errorf("event %d = %v, want kind %s generation %d", i, m, kinds[i], i+1)
		}
	}
	envs, _ := os.ReadFile(out + ".env")
	lines := strings.Split(strings.TrimSpace(string(envs)), "\n")
	for i, l := range lines {
		if want := fmt.Sprintf("%s|main|/runs/x|me|unset|unset", kinds[i]); l != want {
			t.Errorf("hook %d env %q, want %q", i, l, want)
		}
	}
}

// TestHangingHookIsBounded: a hook that never ends (and starts a child that
// would outlive it) is killed, process group and all, at the bound; Send
// never waits for it, and Close waits at most its own bound.
func TestHangingHookIsBounded(t *testing.T) {
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "pid")
	const bound = 500 * time.Millisecond
	n, logs := newNotifier(t, fmt.Sprintf(`sleep 300 & echo $! > %s.tmp; mv %s.tmp %s; wait`, pidFile, pidFile, pidFile), bound, 0, nil)
	start := time.Now()
	for range 3 {
		n.Send(notify.Event{Kind: notify.KindHandoff, Step: "main"})
	}
	if took := time.Since(start); took > 100*time.Millisecond {
		t.Errorf("Send took %s with a hanging hook", took)
	}
	waitFile(t, pidFile)
	b, _ := os.ReadFile(pidFile)
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	closeStart := time.Now()
	n.Close(bound)
	// Close's bound, plus the kill and the WaitDelay a pipe-holding
	// grandchild may cost.
	if took := time.Since(closeStart); took > bound+1500*time.Millisecond {
		t.Errorf("Close took %s, bound %s", took, bound)
	}
	// The hook's child died with its group.
	deadline := time.Now().Add(5 * time.Second)
	for syscall.Kill(pid, 0) == nil {
		if time.Now().After(deadline) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("the hook's child %d outlived the kill", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if l := logs.String(); !strings.Contains(l, "notify command timed out and was killed") && !strings.Contains(l, "notify command killed at close") {
		t.Errorf("no timeout in the log:\n%s", l)
	}
}

// TestFailingAndMissingHooksAreLogged: a hook that exits 1, or names a
// program that does not exist, is logged with its output, and the next
// event is still delivered.
func TestFailingAndMissingHooksAreLogged(t *testing.T) {
	for _, c := range []struct{ name, cmd, want string }{
		{"exit 1", `echo "webhook said no" >&2; exit 1`, "webhook said no"},
		{"missing", `flower-no-such-program-xyz`, "not found"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			out := filepath.Join(dir, "events")
			// The first event fails; the second writes its kind.
			cmd := fmt.Sprintf(`if [ "$FLOWER_EVENT" = step_end ]; then cat >> %s; else %s; fi`, out, c.cmd)
			n, logs := newNotifier(t, cmd, 5*time.Second, 0, nil)
			n.Send(notify.Event{Kind: notify.KindHandoff, Step: "main"})
			n.Send(notify.Event{Kind: notify.KindStepEnd, Step: "main", Status: "succeeded"})
			n.Close(20 * time.Second)
			if got := readEvents(t, out); len(got) != 1 || got[0]["status"] != "succeeded" {
				t.Errorf("events after the failure: %v", got)
			}
			l := logs.String()
			if !strings.Contains(l, "notify command failed") || !strings.Contains(l, c.want) {
				t.Errorf("log lacks the failure and %q:\n%s", c.want, l)
			}
		})
	}
}

// TestFullQueueDropsAndSays: with the hook busy and the queue full, Send
// drops, logs each drop, and the next delivered event counts them.
func TestFullQueueDropsAndSays(t *testing.T) {
	dir := t.TempDir()
	started, gate, out := filepath.Join(dir, "started"), filepath.Join(dir, "go"), filepath.Join(dir, "events")
	cmd := fmt.Sprintf(`touch %s; while [ ! -e %s ]; do sleep 0.01; done; cat >> %s`, started, gate, out)
	n, logs := newNotifier(t, cmd, 20*time.Second, 2, nil)
	n.Send(notify.Event{Kind: notify.KindHandoff, Step: "main", Generation: 1})
	waitFile(t, started) // the first is being delivered; the queue is empty
	for g := 2; g <= 6; g++ {
		n.Send(notify.Event{Kind: notify.KindHandoff, Step: "main", Generation: g})
	}
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	n.Close(20 * time.Second)
	got := readEvents(t, out)
	if len(got) != 3 {
		t.Fatalf("delivered %d events, want 3 (one running, two queued): %v", len(got), got)
	}
	for i, want := range []struct{ gen, dropped float64 }{{1, 0}, {2, 3}, {3, 0}} {
		d, _ := got[i]["dropped"].(float64)
		if got[i]["generation"] != want.gen || d != want.dropped {
			t.Errorf("event %d = %v, want generation %v dropped %v", i, got[i], want.gen, want.dropped)
		}
	}
	if c := strings.Count(logs.String(), "notify queue full: event dropped"); c != 3 {
		t.Errorf("%d drops logged, want 3:\n%s", c, logs.String())
	}
}
