package integration_test

import (
	"bufio"
	"encoding/json"
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
	r := startRelayMode(t, ws, env, guarTask, "--allowedTools", "Bash")
	results := 0
	for r.out.Scan() {
		if gjson.Get(r.out.Text(), "type").String() == "result" {
			results++
			_ = r.stdin.Close()
		}
	}
	werr := r.wait(t)
	var ee *exec.ExitError
	if !errors.As(werr, &ee) || ee.ExitCode() != 4 {
		t.Errorf("relay exited %v, want exit 4 (the budget's):\n%s", werr, r.stderr.String())
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
		t.Errorf("cost %v: want more than the budget of 0.001 (the response that reached it and the exempt writing turn are paid)", st.CostUSD)
	}
}

// relayMode is flower started in the harness's place, as the Agent SDK
// starts it, with one user message written to it.
type relayMode struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	out    *bufio.Scanner
	stderr *strings.Builder
}

func startRelayMode(t *testing.T, ws string, env []string, prompt string, args ...string) *relayMode {
	t.Helper()
	cmd := exec.Command(flowerBinary(t), append([]string{"-p", "--input-format", "stream-json", "--output-format", "stream-json", "--verbose"}, args...)...)
	cmd.Dir, cmd.Env = ws, env
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	r := &relayMode{cmd: cmd, stdin: stdin, out: bufio.NewScanner(stdout), stderr: &strings.Builder{}}
	r.out.Buffer(nil, 64<<20)
	cmd.Stderr = r.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	msg, _ := json.Marshal(map[string]any{"type": "user", "message": map[string]any{"role": "user", "content": prompt}})
	if _, err := stdin.Write(append(msg, '\n')); err != nil {
		t.Fatal(err)
	}
	return r
}

// wait waits for the relay to exit, its output read to the end.
func (r *relayMode) wait(t *testing.T) error {
	t.Helper()
	_ = r.stdin.Close()
	for r.out.Scan() {
	}
	waited := make(chan error, 1)
	go func() { waited <- r.cmd.Wait() }()
	select {
	case err := <-waited:
		return err
	case <-time.After(waitLimit):
		t.Fatalf("relay still running %s after its input closed", waitLimit)
		return nil
	}
}
