package integration_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/flowerhq/flower/manifest"
	"github.com/flowerhq/flower/scriptedapi"
)

// TestNotify covers DESIGN.md «Notify» on the real harness: a 3-generation
// run (a handoff at the threshold, then an overflow's degraded one, then
// the end) tells a --notify hook every event, in order; and a hook that
// hangs, exits 1 or is missing changes neither the run's outcome nor its
// end beyond the hook's bound.
func TestNotify(t *testing.T) {
	t.Parallel()
	threeGens := [][]scriptedapi.Reply{
		{bash(100_000, "echo one >> work.txt"), bash(155_000, "echo two >> work.txt")},
		{bash(100_000, "echo three >> work.txt"), scriptedapi.Overflow(250_123, 200_000)},
		{done(20_000)},
	}
	const bound = 2 * time.Second
	rows := []struct {
		name string
		// hook is the --notify command; %[1]s is a file of the test's.
		hook   string
		record bool     // the hook writes each event to the file
		log    []string // flower.log says one of these
	}{
		{name: "records every event", hook: `{ cat; echo "FLOWER_EVENT=$FLOWER_EVENT FLOWER_STEP=$FLOWER_STEP FLOWER_RUN_DIR=$FLOWER_RUN_DIR"; } >> %[1]s`, record: true},
		{name: "hangs", hook: `cat > /dev/null; sleep 300`, log: []string{"notify command timed out and was killed", "notify command killed at close"}},
		{name: "exits 1", hook: `echo refused >&2; exit 1`, log: []string{"notify command failed"}},
		{name: "missing", hook: `/nonexistent/flower-notify-hook`, log: []string{"notify command failed"}},
	}
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			t.Parallel()
			g := newGuarRun(t, headlessGuar{}, jobScript(threeGens, goodHandoff)())
			file := filepath.Join(t.TempDir(), "events")
			hook := row.hook
			if row.record {
				hook = fmt.Sprintf(hook, file)
			}
			h := g.run(guarTask, "--window", "200000", "--notify", hook, "--notify-timeout", bound.String())
			code := g.wait(h)
			exited := time.Now()
			st := g.step()
			if code != 0 || st.Status != manifest.StatusSucceeded || len(st.Generations) != 3 {
				t.Fatalf("exit %d, status %s, %d generations; want 0, succeeded, 3", code, st.Status, len(st.Generations))
			}
			if h1, h2 := st.Generations[0].Handoff, st.Generations[1].Handoff; h1 == nil || h1.Degraded || h2 == nil || !h2.Degraded {
				t.Fatalf("handoffs %+v, %+v: want a whole one, then a degraded one", h1, h2)
			}
			// The step's end waits for the hook at most its bound (and the
			// kill of its process group), never for the hook itself.
			if st.EndedAt == nil {
				t.Fatal("the step has no end time")
			}
			if late := exited.Sub(*st.EndedAt); late > bound+10*time.Second {
				t.Errorf("flower exited %s after the step ended; the hook's bound is %s", late, bound)
			}
			logText, err := os.ReadFile(filepath.Join(g.runDir, "flower.log"))
			if err != nil {
				t.Fatal(err)
			}
			if len(row.log) > 0 && !slices.ContainsFunc(row.log, func(s string) bool { return strings.Contains(string(logText), s) }) {
				t.Errorf("flower.log says none of %q", row.log)
			}
			if !row.record {
				return
			}
			checkNotified(t, g, file, st)
		})
	}
}

// checkNotified reads what the recording hook got: each event's JSON line,
// then the line of its variables.
func checkNotified(t *testing.T, g *guarRun, file string, st *manifest.StepResult) {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines)%2 != 0 {
		t.Fatalf("hook output has %d lines, want pairs:\n%s", len(lines), b)
	}
	type ev struct {
		Kind        string  `json:"kind"`
		Step        string  `json:"step"`
		RunDir      string  `json:"run_dir"`
		Generation  int     `json:"generation"`
		Path        string  `json:"path"`
		Degraded    bool    `json:"degraded"`
		Why         string  `json:"why"`
		Status      string  `json:"status"`
		CostUSD     float64 `json:"cost_usd"`
		Generations int     `json:"generations"`
		Dropped     int     `json:"dropped"`
	}
	var got []ev
	for i := 0; i < len(lines); i += 2 {
		var e ev
		if err := json.Unmarshal([]byte(lines[i]), &e); err != nil {
			t.Fatalf("event %q: %v", lines[i], err)
		}
		if want := fmt.Sprintf("FLOWER_EVENT=%s FLOWER_STEP=%s FLOWER_RUN_DIR=%s", e.Kind, guarStep, g.runDir); lines[i+1] != want {
			t.Errorf("hook variables %q, want %q", lines[i+1], want)
		}
		if strings.Contains(lines[i], scriptedapi.APIKey) || strings.Contains(lines[i], "GUAR-TASK-MARK") {
			t.Errorf("event carries the API key or the task: %s", lines[i])
		}
		got = append(got, e)
	}
	var kinds []string
	for _, e := range got {
		kinds = append(kinds, e.Kind)
	}
	if strings.Join(kinds, ",") != "handoff,handoff,step_end" {
		t.Fatalf("events %v, want handoff, handoff, step_end", kinds)
	}
	notes := filepath.Join(g.ws, ".flower", "notes", "交接-"+guarStep+".md")
	for i, e := range got[:2] {
		if e.Generation != i+1 || e.Path != notes || e.Degraded != (i == 1) || e.Step != guarStep || e.RunDir != g.runDir {
			t.Errorf("handoff event %d = %+v; want generation %d, path %s, degraded %v", i, e, i+1, notes, i == 1)
		}
	}
	if !strings.Contains(got[1].Why, "overflow") {
		t.Errorf("the degraded handoff's why %q does not name the overflow", got[1].Why)
	}
	if end := got[2]; end.Status != manifest.StatusSucceeded || end.Generations != 3 || end.CostUSD != st.CostUSD || end.CostUSD <= 0 {
		t.Errorf("step_end = %+v; want succeeded, 3 generations, cost %v", end, st.CostUSD)
	}
	for _, e := range got {
		if e.Dropped != 0 {
			t.Errorf("event %+v says events were dropped", e)
		}
	}
}

// TestNotifyRelay: in relay mode (flower started in the harness's place)
// FLOWER_NOTIFY is --notify: the step's end reaches the hook.
func TestNotifyRelay(t *testing.T) {
	t.Parallel()
	srv := startServer(t, scriptedapi.Sequence(done(20_000)))
	ws := t.TempDir()
	file := filepath.Join(t.TempDir(), "events")
	runDir := filepath.Join(ws, ".flower", "runs", "relay")
	env := harnessEnv(t, srv, "FLOWER_HARNESS="+harnessPath(t), "FLOWER_STEP=relay", "FLOWER_RUN_DIR="+runDir,
		"FLOWER_NOTIFY=cat >> "+file, "FLOWER_NOTIFY_TIMEOUT=5s")
	seedHarnessHome(t, homeOf(env), ws, scriptedapi.APIKey)
	r := startRelayMode(t, ws, env, "say done")
	for r.out.Scan() {
		if gjson.Get(r.out.Text(), "type").String() == "result" {
			break
		}
	}
	if err := r.wait(t); err != nil {
		t.Fatalf("relay exited: %v\n%s", err, r.stderr.String())
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("the hook never ran: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	last := gjson.Parse(lines[len(lines)-1])
	if last.Get("kind").String() != "step_end" || last.Get("step").String() != "relay" || last.Get("status").String() != manifest.StatusSucceeded {
		t.Errorf("the hook's last event %s, want the relay step's end, succeeded", lines[len(lines)-1])
	}
}
