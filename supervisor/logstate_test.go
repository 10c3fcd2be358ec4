package supervisor

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"github.com/flowerhq/flower/harness/harnesstest"
	"github.com/flowerhq/flower/policy"
)

// Every record of the run's log carries the generation, the session id and
// the phase, and no secret from the environment: with the window given, and
// with the window the harness reports taking over from the guess (its
// record is written by the step too).
func TestLogRecordsCarryGenerationSessionPhase(t *testing.T) {
	for _, tc := range []struct {
		name    string
		handoff *policy.HandoffPolicy
		want    string // a record that must be there
		env     []string
	}{
		{"window given", nil, "", nil},
		// The context-usage answer is asked for once the first round is
		// back; the fake answers it when its turn is over, so the step may
		// end before the window it reports is adopted: that record must
		// carry the stamps all the same.
		{"window from the harness", policy.Switch(true), "window from the harness", []string{harnesstest.EnvFloor + "=1"}},
	} {
		t.Run(tc.name, func(t *testing.T) { logRecordsCarryGenerationSessionPhase(t, tc.handoff, tc.want, tc.env) })
	}
}

func logRecordsCarryGenerationSessionPhase(t *testing.T, handoff *policy.HandoffPolicy, want string, env []string) {
	const secret = "sk-ant-api03-LOGSECRET-abcdefghijklmnop"
	var buf bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	b := newBench(t, harnesstest.ModeStream, append([]string{harnesstest.EnvContext + "=155000", "ANTHROPIC_API_KEY=" + secret}, env...)...)
	rt := b.runtime(Options{Logger: logger, Handoff: handoff})
	st, err := rt.RunStep(context.Background(), "s", "a task")
	if err != nil {
		t.Fatalf("RunStep: %v", err)
	}
	handedOff := want == ""
	if handedOff && len(st.Generations) != 2 {
		t.Fatalf("%d generations, want 2 (one handoff)", len(st.Generations))
	}
	if strings.Contains(buf.String(), "LOGSECRET") {
		t.Fatalf("the API key reached the log")
	}
	phases := map[string]bool{}
	gens := map[float64]bool{}
	n := 0
	for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("not JSON: %q", line)
		}
		n++
		for _, k := range []string{"step", "gen", "session", "phase"} {
			if _, ok := rec[k]; !ok {
				t.Errorf("record %q lacks %q", rec["msg"], k)
			}
		}
		if rec["msg"] == want {
			want = ""
		}
		p, _ := rec["phase"].(string)
		phases[p] = true
		g, _ := rec["gen"].(float64)
		gens[g] = true
		if p == "writing" && rec["session"] == "" {
			t.Errorf("a writing-phase record without its session: %q", rec["msg"])
		}
	}
	if handedOff {
		for _, p := range []string{"starting", "working", "cutting", "writing"} {
			if !phases[p] {
				t.Errorf("no record in phase %q (saw %v)", p, phases)
			}
		}
		if !gens[1] || !gens[2] {
			t.Errorf("records of generations %v, want 1 and 2", gens)
		}
	}
	if want != "" {
		t.Errorf("no record %q", want)
	}
	t.Logf("%d records", n)
}
