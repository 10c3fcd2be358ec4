package integration_test

// DESIGN.md «Handoff on request»: during a long turn (a tool that runs on),
// a person asks for a handoff; the running flower cuts at the boundary and
// hands off as usual, reason requested. Headless through flower handoff
// now; interactive through flower handoff now and through Ctrl-\ on the
// screen.

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flowerhq/flower/harness/harnesstest"
	"github.com/flowerhq/flower/manifest"
	"github.com/flowerhq/flower/scriptedapi"
)

func TestHandoffNow(t *testing.T) {
	t.Parallel()
	rows := []struct {
		name  string
		front guarFront
		ask   string // "command" or "key"
	}{
		{"command", headlessGuar{}, "command"},
		{"command", interactiveGuar{}, "command"},
		{"key", interactiveGuar{}, "key"},
	}
	for _, row := range rows {
		t.Run(row.name+"/"+row.front.name(), func(t *testing.T) {
			t.Parallel()
			script := jobScript([][]scriptedapi.Reply{{bash(40_000, "timeout 120 tail -f /dev/null; echo late >> work.txt"), done(41_000)}, {done(20_000)}}, goodHandoff)
			g := newGuarRun(t, row.front, script())
			// No step runs yet: handoff now says so and posts nothing.
			if err := os.MkdirAll(g.runDir, 0o755); err != nil {
				t.Fatal(err)
			}
			if out, err := exec.Command(g.flower, "handoff", "now", "--run-dir", g.runDir, "--step", guarStep).CombinedOutput(); err == nil ||
				!strings.Contains(string(out), "not running") {
				t.Errorf("handoff now with nothing running: %v, %q; want a refusal", err, out)
			}
			h := g.run(guarTask, "--window", "200000")
			toolRunning(t, g, h)
			switch row.ask {
			case "command":
				cmd := exec.Command(g.flower, "handoff", "now", "-C", g.ws)
				cmd.Env = g.env
				out, err := cmd.CombinedOutput()
				if err != nil || !strings.Contains(string(out), "hands off at the next message boundary") {
					t.Fatalf("flower handoff now: %v\n%s", err, out)
				}
			case "key":
				tf := h.(*tmuxFlower)
				if _, err := tf.tmux("send-keys", "-t", "it", `C-\`); err != nil {
					t.Fatal(err)
				}
			}
			until(t, "a second generation", func() bool {
				m, err := manifest.Load(manifest.Path(g.runDir))
				return err == nil && m.Step(guarStep) != nil && len(m.Step(guarStep).Generations) > 1
			})
			code := g.wait(h)
			st := g.step()
			if code != 0 || len(st.Generations) != 2 || st.Generations[0].Handoff == nil || st.Generations[0].Handoff.Reason != manifest.ReasonRequested {
				t.Fatalf("exit %d, %d generations, generation 1's handoff %+v; errors %q: want one handoff, reason requested",
					code, len(st.Generations), st.Generations[0].Handoff, st.Errors)
			}
			if h := st.Generations[0].Handoff; h.Degraded || h.Context != 40_000 {
				t.Errorf("handoff %+v: want a written handoff at the session's 40K", h)
			}
			if b, _ := os.ReadFile(filepath.Join(g.ws, "work.txt")); strings.Contains(string(b), "late") {
				t.Errorf("the tool ran to its end: the cut was not at the boundary")
			}
			_, first := g.sessions()
			if q := first[st.Generations[1].SessionID]; !strings.Contains(q.AllText, "NEXT-MARK-1") {
				t.Errorf("the successor's first request lacks the handoff")
			}
			g.checkLineage(st)
		})
	}
}

// TestTemporalHandoffNow: a step on Temporal, its generation in a long
// tool call on a worker; flower handoff now --temporal signals the
// workflow, and the worker's engine hands off at the boundary.
func TestTemporalHandoffNow(t *testing.T) {
	ts := startTemporal(t)
	script := jobScript([][]scriptedapi.Reply{{bash(40_000, "timeout 120 tail -f /dev/null; echo late >> work.txt"), done(41_000)}, {done(20_000)}}, goodHandoff)
	srv := startServer(t, script())
	queue, id := randomID("q"), randomID("step")
	ws := t.TempDir()
	worker := ts.startWorker(t, srv, queue, "worker-a", "--window", "200000")
	sub := startFlower(t, harnessEnv(t, srv), "submit", "--temporal", ts.addr, "--task-queue", queue, "-C", ws,
		"--id", id, "--wait", "Build the shim. TASK-MARK")
	untilT(t, "the tool to run on the worker", func() bool {
		return hasProcess(harnesstest.Descendants(worker.cmd.Process.Pid), "tail")
	})
	if code, out := runFlowerCLI(t, nil, "handoff", "now", "--temporal", ts.addr, id); code != 0 || !strings.Contains(out, "next message boundary") {
		t.Fatalf("flower handoff now --temporal exited %d:\n%s", code, out)
	}
	if code := sub.wait(temporalLimit); code != 0 {
		t.Fatalf("flower submit --wait exited %d:\n%s", code, sub.output())
	}
	st := ts.status(t, id)
	gens := st.Record.Generations
	if len(gens) != 2 || gens[0].Handoff == nil || gens[0].Handoff.Reason != manifest.ReasonRequested || gens[0].Handoff.Degraded {
		t.Fatalf("generations %+v: want a written handoff, reason requested", gens)
	}
	if st.HandoffsAsked != 1 {
		t.Errorf("the workflow counted %d handoffs asked for, want 1", st.HandoffsAsked)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "work.txt")); strings.Contains(string(b), "late") {
		t.Errorf("the tool ran to its end: the cut was not at the boundary")
	}
}

// TestHandoffKeyBetweenTurns: Ctrl-\ on the interactive screen while no
// turn runs (the person has not typed the next one): nothing to interrupt,
// the writing turn starts at once, and the successor takes over.
func TestHandoffKeyBetweenTurns(t *testing.T) {
	t.Parallel()
	script := jobScript([][]scriptedapi.Reply{{done(45_000)}, {done(20_000)}}, goodHandoff)
	g := newGuarRun(t, interactiveGuar{}, script())
	g.mu.Lock()
	g.hold = true
	g.mu.Unlock()
	h := g.run(guarTask, "--window", "200000")
	tf := h.(*tmuxFlower)
	until(t, "the first turn's end", func() bool { return g.finished() && harnessState(g.home, harnessChild(h.pid(), g.harness)) == "idle" })
	if _, err := tf.tmux("send-keys", "-t", "it", `C-\`); err != nil {
		t.Fatal(err)
	}
	// The person stays quiet until the successor has asked its model:
	// till then the first session, told the job is done, is the latest,
	// and an /exit typed at it while it writes would cut the handoff.
	until(t, "the successor's first request", func() bool {
		m, err := manifest.Load(manifest.Path(g.runDir))
		if err != nil || m.Step(guarStep) == nil || len(m.Step(guarStep).Generations) < 2 {
			return false
		}
		gens := m.Step(guarStep).Generations
		_, first := g.sessions()
		_, asked := first[gens[1].SessionID]
		return gens[0].Handoff != nil && gens[1].SessionID != "" && asked
	})
	g.mu.Lock()
	g.hold = false
	g.mu.Unlock()
	code := g.wait(h)
	st := g.step()
	if code != 0 || len(st.Generations) != 2 || st.Generations[0].Handoff == nil || st.Generations[0].Handoff.Reason != manifest.ReasonRequested ||
		st.Generations[0].Handoff.Degraded {
		t.Fatalf("exit %d, %d generations, generation 1's handoff %+v; errors %q: want one written handoff, reason requested",
			code, len(st.Generations), st.Generations[0].Handoff, st.Errors)
	}
	_, first := g.sessions()
	if q := first[st.Generations[1].SessionID]; !strings.Contains(q.AllText, "NEXT-MARK-1") {
		t.Errorf("the successor's first request lacks the handoff")
	}
}

// TestHarnessNeverBindsTheHandoffKey: the fact «Handoff on request» rests
// on, read from the harness itself: Ctrl-\ is on the harness's list of keys
// it refuses to bind, and none of its default bindings uses it (the
// harness's code is JavaScript embedded in its executable).
func TestHarnessNeverBindsTheHandoffKey(t *testing.T) {
	f, err := os.Open(harnessPath(t))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	reserved := []byte(`key:"ctrl+\\",reason:"Terminal quit signal (SIGQUIT)",severity:"error"`)
	bound := []byte(`"ctrl+\\":`)
	var sawReserved, sawBound bool
	buf := make([]byte, 8<<20)
	keep := 0
	for {
		n, err := f.Read(buf[keep:])
		chunk := buf[:keep+n]
		sawReserved = sawReserved || bytes.Contains(chunk, reserved)
		sawBound = sawBound || bytes.Contains(chunk, bound)
		if err != nil {
			break
		}
		keep = copy(buf, chunk[len(chunk)-len(reserved):])
	}
	if !sawReserved || sawBound {
		t.Errorf("the harness reserves Ctrl-\\: %v; binds it: %v; want reserved and never bound", sawReserved, sawBound)
	}
}
