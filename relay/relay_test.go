package relay_test

import (
	"bufio"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/flowerhq/flower/harness/harnesstest"
	"github.com/flowerhq/flower/policy"
	"github.com/flowerhq/flower/relay"
	"github.com/flowerhq/flower/supervisor"
)

// The test binary is the fake harness too (TestMain, in main_test.go).

// hangGuard bounds a relay run on the fake harness; the real harness and the
// real SDK are in integration/sdk.
const hangGuard = time.Minute

// app is the application's side of a relay run.
type app struct {
	in    *io.PipeWriter
	lines chan gjson.Result
}

// startRelay runs one step of the relay on the fake harness, whose first
// turn reports context (the window is 200k, the handoff at 150k); the
// application gives the harness's flags and extra, and the fake logs to
// fakeLog.
func startRelay(t *testing.T, firstContext, fakeLog string, extra ...string) (*app, <-chan error) {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	args := append([]string{"--output-format", "stream-json", "--verbose", "--input-format", "stream-json"}, extra...)
	rl := relay.New(relay.Config{In: inR, Out: outW, Args: args})
	rt, err := supervisor.New(supervisor.Options{
		Workspace: t.TempDir(), Workbench: true, Front: rl, OnEvent: rl.Event,
		Handoff:     &policy.HandoffPolicy{Enabled: true, Window: 200_000, Headroom: 50_000, MaxGenerations: 4},
		HarnessPath: os.Args[0], HarnessArgs: args, Env: harnesstest.Env(harnesstest.ModeStream, harnesstest.EnvContext+"="+firstContext, harnesstest.EnvFloor+"=1", harnesstest.EnvLog+"="+fakeLog),
	})
	if err != nil {
		t.Fatal(err)
	}
	a := &app{in: inW, lines: make(chan gjson.Result, 1000)}
	go func() {
		sc := bufio.NewScanner(outR)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			a.lines <- gjson.Parse(sc.Text())
		}
		close(a.lines)
	}()
	done := make(chan error, 1)
	rl.Start()
	go func() {
		st, err := rt.RunStep(context.Background(), "main", "")
		sid := ""
		if st != nil {
			sid = st.SessionID
		}
		rl.Finish(sid, err)
		outW.Close()
		done <- err
	}()
	return a, done
}

func (a *app) send(t *testing.T, line string) {
	t.Helper()
	if _, err := io.WriteString(a.in, line+"\n"); err != nil {
		t.Fatal(err)
	}
}

// until reads lines up to the first that matches, and returns them all.
func (a *app) until(t *testing.T, match func(gjson.Result) bool) []gjson.Result {
	t.Helper()
	var got []gjson.Result
	deadline := time.After(hangGuard)
	for {
		select {
		case l, ok := <-a.lines:
			if !ok {
				t.Fatalf("the relay's output ended before the line wanted; got %v", got)
			}
			got = append(got, l)
			if match(l) {
				return got
			}
		case <-deadline:
			t.Fatalf("hang guard: no line wanted within %v; got %v", hangGuard, got)
		}
	}
}

func isType(typ string) func(gjson.Result) bool {
	return func(l gjson.Result) bool { return l.Get("type").String() == typ }
}

// A handoff under the relay on the fake harness (which also runs it under
// the race detector): the app's initialize is answered once, a line that is
// not JSON is skipped, the writing turn stays hidden, the one result is
// the successor's, with flower's summary, and the successor's budgets are
// what the cut turn left (the writing turn exempt).
func TestRelayHandsOffOnFakeHarness(t *testing.T) {
	fakeLog := filepath.Join(t.TempDir(), "fake.log")
	a, done := startRelay(t, "160000", fakeLog, "--max-turns=10", "--max-budget-usd=1")
	a.send(t, `{"type":"control_request","request_id":"app-init","request":{"subtype":"initialize","hooks":{}}}`)
	a.send(t, `this is not JSON`)
	a.send(t, `{"type":"user","session_id":"","parent_tool_use_id":null,"message":{"role":"user","content":"the task"}}`)
	lines := a.until(t, isType("result"))
	a.in.Close()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("the step failed: %v", err)
		}
	case <-time.After(hangGuard):
		t.Fatal("hang guard: the step did not end after the app closed its input")
	}
	for l := range a.lines {
		lines = append(lines, l)
	}
	var inits []string
	answers, dones, results := 0, 0, 0
	var result gjson.Result
	for _, l := range lines {
		if len(inits) > 0 && l.Get("session_id").String() == inits[0] && strings.Contains(l.Raw, harnesstest.HandoffMark) {
			t.Errorf("the app saw the writing turn: %s", l.Raw)
		}
		switch {
		case l.Get("type").String() == "control_response":
			if l.Get("response.request_id").String() != "app-init" {
				t.Errorf("the app got an answer to a request it did not make: %s", l.Raw)
			}
			answers++
		case l.Get("subtype").String() == "init":
			if id := l.Get("session_id").String(); len(inits) == 0 || inits[len(inits)-1] != id {
				inits = append(inits, id)
			}
		case l.Get("subtype").String() == relay.SubtypeHandoff && l.Get("phase").String() == "done":
			dones++
		case l.Get("type").String() == "result":
			results++
			result = l
		}
	}
	if answers != 1 {
		t.Errorf("the app's initialize was answered %d times, want once (the replay's answer is flower's)", answers)
	}
	if len(inits) != 2 || dones != 1 || results != 1 {
		t.Fatalf("sessions %v, done lines %d, results %d: want two sessions, one done line, one result", inits, dones, results)
	}
	if result.Get("session_id").String() != inits[1] || result.Get("flower.retired.0").String() != inits[0] ||
		result.Get("flower.generations").Int() != 2 {
		t.Errorf("result %s: want the successor's, retiring the first session", result.Raw)
	}
	// Both harnesses cost 0.01 per turn: the first two turns (work, writing),
	// the successor one.
	if c := result.Get("total_cost_usd").Float(); c < 0.029 || c > 0.031 {
		t.Errorf("total_cost_usd %v, want the sum over both harnesses, 0.03", c)
	}
	// The cut turn was one turn costing 0.01; the writing turn's do not
	// count against the application's budgets.
	var starts [][]string
	for _, e := range harnesstest.ReadLog(fakeLog) {
		if e.Event == "start" {
			starts = append(starts, e.Args)
		}
	}
	if len(starts) != 2 {
		t.Fatalf("harness starts %v, want two", starts)
	}
	if succ := strings.Join(starts[1], " "); !strings.Contains(succ, "--max-turns=9") || !strings.Contains(succ, "--max-budget-usd=0.99") {
		t.Errorf("the successor's arguments %q: want --max-turns=9 and --max-budget-usd=0.99", succ)
	}
}
