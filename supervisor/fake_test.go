package supervisor

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flowerhq/flower/harness"
	"github.com/flowerhq/flower/harness/harnesstest"
	"github.com/flowerhq/flower/manifest"
	"github.com/flowerhq/flower/policy"
)

// TestMain lets the test binary be the fake harness (package harnesstest).
func TestMain(m *testing.M) {
	harnesstest.Main()
	// The trust store of every Runtime without one of its own: never the
	// person's.
	removeState := harnesstest.PrivateState()
	code := m.Run()
	removeState()
	os.Exit(code)
}

// bench is one workspace and run directory driven by the fake harness.
type bench struct {
	t         *testing.T
	workspace string
	runDir    string
	log       string // the fake's log
	sessions  string // the fake's session store
	state     string // the fake's start counter
	env       []string

	mu     sync.Mutex
	events []Event
}

// newBench prepares a workspace for a fake in mode; extra is more of the
// fake's environment.
func newBench(t *testing.T, mode string, extra ...string) *bench {
	t.Helper()
	dir := t.TempDir()
	b := &bench{t: t, workspace: filepath.Join(dir, "ws"), log: filepath.Join(dir, "fake.log"),
		sessions: filepath.Join(dir, "sessions"), state: filepath.Join(dir, "starts")}
	b.runDir = filepath.Join(b.workspace, ".flower", "runs", "test")
	for _, d := range []string{b.workspace, b.sessions} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	b.env = harnesstest.Env(mode, append([]string{harnesstest.EnvLog + "=" + b.log, harnesstest.EnvFloor + "=1",
		harnesstest.EnvSessions + "=" + b.sessions, harnesstest.EnvState + "=" + b.state}, extra...)...)
	return b
}

// runtime builds a Runtime on the bench; opts fills in the rest. The
// policy is a 200k window (handoff at 150k) unless opts says otherwise.
func (b *bench) runtime(opts Options) *Runtime {
	b.t.Helper()
	rt, err := b.newRuntime(opts)
	if err != nil {
		b.t.Fatalf("New: %v", err)
	}
	return rt
}

func (b *bench) newRuntime(opts Options) (*Runtime, error) {
	if opts.Workspace == "" {
		opts.Workspace = b.workspace
	}
	if opts.RunDir == "" {
		opts.RunDir = b.runDir
	}
	opts.HarnessPath = os.Args[0]
	opts.Env = b.env
	opts.Workbench = true
	if opts.Front == nil {
		opts.Front = harness.Headless{}
	}
	if opts.Handoff == nil {
		opts.Handoff = &policy.HandoffPolicy{Enabled: true, Window: 200_000, MaxGenerations: 8}
	}
	if opts.Grace == 0 {
		opts.Grace = 300 * time.Millisecond
	}
	opts.OnEvent = func(ev Event) {
		b.mu.Lock()
		defer b.mu.Unlock()
		b.events = append(b.events, ev)
	}
	return New(opts)
}

func (b *bench) notices() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []string
	for _, ev := range b.events {
		if ev.Kind == KindNotice {
			out = append(out, ev.Text)
		}
	}
	return out
}

// starts returns the fake's start entries, in order.
func (b *bench) starts() []harnesstest.LogEntry {
	var out []harnesstest.LogEntry
	for _, e := range harnesstest.ReadLog(b.log) {
		if e.Event == "start" {
			out = append(out, e)
		}
	}
	return out
}

// firstPrompts returns, per start, the first user text it was sent ("" if
// none), in start order.
func (b *bench) firstPrompts() []string {
	var out []string
	idx := map[int]int{}
	for _, e := range harnesstest.ReadLog(b.log) {
		switch e.Event {
		case "start":
			idx[e.PID] = len(out)
			out = append(out, "")
		case "user":
			if i, ok := idx[e.PID]; ok && out[i] == "" {
				out[i] = e.Text
			}
		}
	}
	return out
}

// prompted returns the starts that were sent a prompt, with their first
// prompts: a successor started early that was not needed got none.
func (b *bench) prompted() ([]harnesstest.LogEntry, []string) {
	var starts []harnesstest.LogEntry
	var prompts []string
	for i, p := range b.firstPrompts() {
		if p != "" {
			starts = append(starts, b.starts()[i])
			prompts = append(prompts, p)
		}
	}
	return starts, prompts
}

func resumeOf(e harnesstest.LogEntry) string {
	if i := slices.Index(e.Args, "--resume"); i >= 0 && i+1 < len(e.Args) {
		return e.Args[i+1]
	}
	return ""
}

// onDisk loads the step from manifest.json, failing if the file is not a
// valid manifest.
func (b *bench) onDisk(step string) *manifest.StepResult {
	b.t.Helper()
	m, err := manifest.Load(manifest.Path(b.runDir))
	if err != nil {
		b.t.Fatalf("manifest on disk: %v", err)
	}
	st := m.Step(step)
	if st == nil {
		b.t.Fatalf("manifest on disk has no step %s", step)
	}
	return st
}

func (b *bench) handoffPath(step string) string {
	return filepath.Join(b.workspace, ".flower", "notes", "交接-"+step+".md")
}

// waitFor polls cond for up to 10s: the fake harness is another process,
// which says what it did only in its log file, and a file tells nobody when
// it is written.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// runUntilHung runs step in the background until the fake has received
// `turns` user turns in total, then cancels it and returns its result.
func (b *bench) runUntilHung(rt *Runtime, step, task string, turns int) (*manifest.StepResult, error) {
	b.t.Helper()
	ctx, cancel := context.WithCancelCause(context.Background())
	type res struct {
		st  *manifest.StepResult
		err error
	}
	done := make(chan res, 1)
	go func() {
		st, err := rt.RunStep(ctx, step, task)
		done <- res{st, err}
	}()
	waitFor(b.t, "the fake to hang", func() bool {
		n := 0
		for _, e := range harnesstest.ReadLog(b.log) {
			if e.Event == "user" {
				n++
			}
		}
		if n < turns {
			return false
		}
		// The live session's id has reached the manifest (a generation
		// just retired still names its own).
		m, err := manifest.Load(manifest.Path(b.runDir))
		return err == nil && m.Step(step) != nil && m.Step(step).SessionID != ""
	})
	cancel(context.Canceled)
	select {
	case r := <-done:
		return r.st, r.err
	case <-time.After(10 * time.Second): // a bound on the wait, not a pace
		b.t.Fatal("RunStep did not return 10s after cancel")
		return nil, nil
	}
}

func hasError(st *manifest.StepResult, sub string) bool {
	for _, e := range st.Errors {
		if strings.Contains(e, sub) {
			return true
		}
	}
	return false
}
