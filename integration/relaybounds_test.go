package integration_test

import (
	"bufio"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/flowerhq/flower/manifest"
	"github.com/flowerhq/flower/scriptedapi"
)

// TestRelayBudget: in relay mode (flower started in the harness's place)
// FLOWER_MAX_BUDGET_USD is --max-budget-usd. The first response already
// costs more than the budget: the turn is cut at the message boundary, the
// session writes its handoff (the writing turn is exempt), and the step
// ends as budget_reached with the budget's exit code; the application gets
// one result for its turn.
func TestRelayBudget(t *testing.T) {
	t.Parallel()
	srv := startServer(t, jobScript([][]scriptedapi.Reply{{bash(100_000, "echo one >> work.txt"), done(110_000)}}, goodHandoff)())
	ws := t.TempDir()
	runDir := filepath.Join(ws, ".flower", "runs", "relay")
	env := harnessEnv(t, srv, "FLOWER_HARNESS="+harnessPath(t), "FLOWER_STEP=relay", "FLOWER_RUN_DIR="+runDir,
		"FLOWER_MAX_BUDGET_USD=0.001")
	seedHarnessHome(t, homeOf(env), ws, scriptedapi.APIKey)
	cmd := exec.Command(flowerBinary(t), "-p", "--input-format", "stream-json", "--output-format", "stream-json", "--verbose",
		"--allowedTools", "Bash")
	cmd.Dir, cmd.Env = ws, env
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	if _, err := io.WriteString(stdin, `{"type":"user","message":{"role":"user","content":"`+guarTask+`"}}`+"\n"); err != nil {
		t.Fatal(err)
	}
	results := 0
	sc := bufio.NewScanner(stdout)
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		if gjson.Get(sc.Text(), "type").String() == "result" {
			results++
			_ = stdin.Close()
		}
	}
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	var werr error
	select {
	case werr = <-waited:
	case <-time.After(waitLimit):
		t.Fatalf("relay still running %s after its result", waitLimit)
	}
	var ee *exec.ExitError
	if !errors.As(werr, &ee) || ee.ExitCode() != 4 {
		t.Errorf("relay exited %v, want exit 4 (the budget's):\n%s", werr, stderr.String())
	}
	if results != 1 {
		t.Errorf("the application got %d results, want one for its turn", results)
	}
	m, err := manifest.Load(filepath.Join(runDir, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	st := m.Step("relay")
	if st == nil || st.Status != manifest.StatusBudget {
		t.Fatalf("step %+v: want status %s", st, manifest.StatusBudget)
	}
	if len(st.Generations) != 1 || st.Generations[0].Handoff == nil || st.Generations[0].Handoff.Reason != "budget" || st.Generations[0].Handoff.Degraded {
		t.Fatalf("generations %+v: want one, handed off whole for the budget", st.Generations)
	}
	doc, err := os.ReadFile(st.Generations[0].Handoff.Path)
	if err != nil || !strings.Contains(string(doc), "DOING-MARK-") {
		t.Errorf("the handoff file %q (%v) is not the session's document:\n%s", st.Generations[0].Handoff.Path, err, doc)
	}
	if st.CostUSD <= 0.001 {
		t.Errorf("cost %v: the step spent past its budget of 0.001 only by the writing turn and the cut response", st.CostUSD)
	}
}
