package integration_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/flowerhq/flower/handoffwriter"
	"github.com/flowerhq/flower/integration/itest"
	"github.com/flowerhq/flower/manifest"
	"github.com/flowerhq/flower/scriptedresp"
	"github.com/flowerhq/flower/supervisor"
)

// codexJob is a model for the Codex CLI: in each session, work requests
// answered by work(session, n) (n from 1), writing requests with a whole
// handoff.
type codexJob struct {
	mu      sync.Mutex
	session int
	n       int
	work    func(session, n int) scriptedresp.Reply
	seen    []*scriptedresp.Request
}

func (j *codexJob) reply(r *scriptedresp.Request) scriptedresp.Reply {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.seen = append(j.seen, r)
	if strings.Contains(r.LastUserText, handoffwriter.PromptTag) {
		j.session++
		j.n = 0
		return scriptedresp.Reply{Text: fmt.Sprintf("## doing\nDOING-MARK-%d\n## decided\n(空)\n## deadends\n(空)\n## next\nNEXT-MARK-%d\n## scene\n(空)\n", j.session, j.session),
			Usage: scriptedresp.Usage{InputTokens: 150000, OutputTokens: 300}}
	}
	j.n++
	return j.work(j.session, j.n)
}

func codexTool(ctx int, cmd string) scriptedresp.Reply {
	return scriptedresp.Reply{Calls: []scriptedresp.Call{{Cmd: cmd}}, Usage: scriptedresp.Usage{InputTokens: ctx, OutputTokens: 40}}
}

func codexDone() scriptedresp.Reply {
	return scriptedresp.Reply{Text: "all done", Usage: scriptedresp.Usage{InputTokens: 40000, OutputTokens: 10}}
}

// codexEnv is flower's environment for a run on the real Codex CLI
// against the scripted Responses API at baseURL: a HOME, CODEX_HOME with the person's config, and the
// fake key.
func codexEnv(t *testing.T, baseURL string, personConfig string) []string {
	t.Helper()
	home := t.TempDir()
	codexHome := filepath.Join(home, ".codex")
	if err := os.Mkdir(codexHome, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := scriptedresp.WriteCodexHome(codexHome, baseURL, personConfig); err != nil {
		t.Fatal(err)
	}
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if k == "HOME" || strings.HasPrefix(k, "CODEX") || k == "FLOWER_HARNESS" {
			continue
		}
		env = append(env, kv)
	}
	env = append(env, "HOME="+home, "CODEX_HOME="+codexHome, "FLOWER_HARNESS_KIND=codex", "XDG_STATE_HOME="+filepath.Join(home, "state"))
	return append(env, scriptedresp.KeyEnv()...)
}

// codexPersonConfig compacts at 100 000 of a window of 200 000.
const codexPersonConfig = "model_auto_compact_token_limit = 100000\nmodel_context_window = 200000\n"

// A job that needs three sessions, run by the flower command on the real
// Codex CLI with the person's own config compacting at 100 000 of
// 200 000: two whole handoffs, no compaction request reaches the model,
// each successor starts from its handoff file and the task, and flower's
// own hook is the one Codex was given.
func TestCodexJobOfThreeSessions(t *testing.T) {
	t.Parallel()
	bin := itest.CodexPath(t)
	j := &codexJob{work: func(session, n int) scriptedresp.Reply {
		if session == 2 && n == 2 {
			return codexDone()
		}
		return codexTool([]int{30000, 90000, 160000}[min(n-1, 2)], fmt.Sprintf("echo session %d round %d", session, n))
	}}
	api, err := scriptedresp.Start(j.reply)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = api.Close() })
	ws := t.TempDir()
	runDir := filepath.Join(ws, ".flower", "runs", "codex")
	code, out := runFlowerCLI(t, codexEnv(t, api.URL, codexPersonConfig), "--harness", bin, "-C", ws, "--run-dir", runDir, "TASK-MARK: port the parser")
	if code != 0 {
		t.Fatalf("flower exited %d:\n%s", code, out)
	}
	st := loadStep(t, runDir, "main")
	if st.Status != manifest.StatusSucceeded || len(st.Generations) != 3 {
		t.Fatalf("status %s, %d generations (errors %q):\n%s", st.Status, len(st.Generations), st.Errors, out)
	}
	for i, g := range st.Generations[:2] {
		if h := g.Handoff; h == nil || h.Degraded || h.Window != 180000 {
			t.Errorf("generation %d handoff %+v: want a whole one against the window of 180000", i+1, h)
		}
	}
	firsts := 0
	for _, q := range api.Requests() {
		if q.Compaction {
			t.Fatalf("request %d is a compaction request", q.Seq)
		}
		if len(q.Outputs) == 0 && strings.Contains(q.LastUserText, "taking over an ongoing task") {
			firsts++
			for _, want := range []string{fmt.Sprintf("DOING-MARK-%d", firsts), fmt.Sprintf("NEXT-MARK-%d", firsts), "TASK-MARK: port the parser"} {
				if !strings.Contains(q.LastUserText, want) {
					t.Errorf("successor %d's first prompt lacks %q", firsts+1, want)
				}
			}
		}
	}
	if firsts != 2 {
		t.Errorf("%d successors started from a handoff, want 2", firsts)
	}
}

// SIGKILL to flower while Codex runs a command: the app-server and the
// command go with flower, and flower continue resumes the same thread
// (Codex keeps it in CODEX_HOME) with the continue message.
func TestCodexKillThenContinue(t *testing.T) {
	t.Parallel()
	bin := itest.CodexPath(t)
	mark := filepath.Join(t.TempDir(), "started")
	j := &codexJob{work: func(session, n int) scriptedresp.Reply {
		switch n {
		case 1:
			return codexTool(30000, "echo one")
		case 2:
			return codexTool(40000, "touch "+mark+"; exec sleep 120")
		}
		return codexDone()
	}}
	api, err := scriptedresp.Start(j.reply)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = api.Close() })
	env := codexEnv(t, api.URL, codexPersonConfig)
	ws := t.TempDir()
	runDir := filepath.Join(ws, ".flower", "runs", "codex")
	args := []string{"--harness", bin, "-C", ws, "--run-dir", runDir}
	f := startFlower(t, env, append(args, "TASK-MARK: keep working")...)
	until(t, "the long command", func() bool { _, err := os.Stat(mark); return err == nil })
	left := f.descendants()
	if err := f.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	f.wait(10 * time.Second)
	took := allGone(t, left, 10*time.Second)
	t.Logf("flower's descendants %v gone %v after its SIGKILL", left, took)
	before := loadStep(t, runDir, "main")
	if before.Status != manifest.StatusRunning || before.SessionID == "" {
		t.Fatalf("at the kill: status %s, session %q", before.Status, before.SessionID)
	}
	// The run says its harness: continue goes on on Codex without being
	// told, and refuses another one.
	// No --harness: the run's harness kind picks codex on PATH.
	onPath := t.TempDir()
	if err := os.Symlink(bin, filepath.Join(onPath, "codex")); err != nil {
		t.Fatal(err)
	}
	var plain []string
	for _, kv := range env {
		switch k, v, _ := strings.Cut(kv, "="); k {
		case "FLOWER_HARNESS_KIND":
		case "PATH":
			plain = append(plain, "PATH="+onPath+string(os.PathListSeparator)+v)
		default:
			plain = append(plain, kv)
		}
	}
	if code, out := runFlowerCLI(t, plain, append([]string{"continue", "--harness-kind", "claude"}, args...)...); code != 2 || !strings.Contains(out, "started on --harness-kind codex") {
		t.Fatalf("continue on another harness: exit %d, want 2 and the run's harness named:\n%s", code, out)
	}
	seq := len(api.Requests())
	code, out := runFlowerCLI(t, plain, "continue", "-C", ws, "--run-dir", runDir)
	if code != 0 {
		t.Fatalf("flower continue exited %d:\n%s", code, out)
	}
	st := loadStep(t, runDir, "main")
	if st.Status != manifest.StatusSucceeded || len(st.Generations) != 1 || st.SessionID != before.SessionID {
		t.Fatalf("after continue: status %s, %d generations, session %q (was %q), errors %q", st.Status, len(st.Generations), st.SessionID, before.SessionID, st.Errors)
	}
	reqs := api.Requests()
	if len(reqs) <= seq {
		t.Fatal("continue sent no request")
	}
	// A resumed thread reaches the model with no compaction request of
	// Codex's own on the way.
	for _, q := range reqs {
		if q.Compaction {
			t.Errorf("request %d is a compaction request", q.Seq)
		}
	}
	resumed := reqs[seq]
	all := string(resumed.Body)
	for _, want := range []string{"TASK-MARK", "echo one", supervisor.ContinueMessage} {
		if !strings.Contains(all, want) {
			t.Errorf("the resumed thread's request lacks %q: not the same thread", want)
		}
	}
}

// The step's deadline cuts a Codex session in its long command as it
// cuts a Claude Code one: the handoff is written, flower exits 5, and
// flower show and flower ps read the run as any other.
func TestCodexDeadlineThenShow(t *testing.T) {
	t.Parallel()
	bin := itest.CodexPath(t)
	j := &codexJob{work: func(session, n int) scriptedresp.Reply {
		if n == 1 {
			return codexTool(30000, "echo one")
		}
		return codexTool(40000, "exec sleep 120")
	}}
	api, err := scriptedresp.Start(j.reply)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = api.Close() })
	env := codexEnv(t, api.URL, codexPersonConfig)
	ws := t.TempDir()
	runDir := filepath.Join(ws, ".flower", "runs", "codex")
	start := time.Now()
	code, out := runFlowerCLI(t, env, "--harness", bin, "-C", ws, "--run-dir", runDir, "--max-duration", "4s", "TASK-MARK: keep going")
	if code != 5 || time.Since(start) > time.Minute {
		t.Fatalf("flower exited %d after %v, want 5 (the deadline) well before the command's end:\n%s", code, time.Since(start), out)
	}
	st := loadStep(t, runDir, "main")
	if st.Status != manifest.StatusDeadline || len(st.Generations) != 1 {
		t.Fatalf("status %s, %d generations (errors %q)", st.Status, len(st.Generations), st.Errors)
	}
	if h := st.Generations[0].Handoff; h == nil || h.Degraded || h.Reason != manifest.ReasonDeadline {
		t.Fatalf("handoff %+v: want a whole one for the deadline", h)
	}
	code, shown := runFlowerCLI(t, env, "show", runDir)
	if code != 0 || !strings.Contains(shown, st.Generations[0].SessionID[:8]) {
		t.Errorf("flower show exited %d, or does not show the Codex thread %s:\n%s", code, st.Generations[0].SessionID, shown)
	}
}

// A key the API refuses, on the real Codex CLI: the step ends auth_failed
// with exit 7 and a line in Codex's words (its key variable, masked, and
// `codex login`), never Claude Code's.
func TestCodexRefusedKey(t *testing.T) {
	t.Parallel()
	bin := itest.CodexPath(t)
	api, err := scriptedresp.Start(func(*scriptedresp.Request) scriptedresp.Reply { return scriptedresp.Unauthorized() })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = api.Close() })
	ws := t.TempDir()
	runDir := filepath.Join(ws, ".flower", "runs", "codex")
	code, out := runFlowerCLI(t, append(codexEnv(t, api.URL, codexPersonConfig), "OPENAI_API_KEY=sk-test-openai-0123456789"),
		"--harness", bin, "-C", ws, "--run-dir", runDir, "say hello")
	if code != 7 {
		t.Fatalf("flower exited %d, want 7:\n%s", code, out)
	}
	if !strings.Contains(out, "codex login") || strings.Contains(out, "claude") || strings.Contains(out, "ANTHROPIC") || strings.Contains(out, "sk-test-openai-0123456789") {
		t.Errorf("the line is not in Codex's words, or shows the key:\n%s", out)
	}
	if st := loadStep(t, runDir, "main"); st.Status != manifest.StatusAuthFailed {
		t.Errorf("status %s, errors %q", st.Status, st.Errors)
	}
}

// A model provider whose endpoint refuses the connection, on the real
// Codex CLI: Codex says it reconnects, the engine checks the base_url its
// config gives, and the step stops unreachable with exit 8, naming it,
// where Codex alone would wait for the network for ever.
func TestCodexRefusedEndpoint(t *testing.T) {
	t.Parallel()
	bin := itest.CodexPath(t)
	api, err := scriptedresp.Start(func(*scriptedresp.Request) scriptedresp.Reply { return codexDone() })
	if err != nil {
		t.Fatal(err)
	}
	closed := api.URL
	_ = api.Close()
	ws := t.TempDir()
	runDir := filepath.Join(ws, ".flower", "runs", "codex")
	start := time.Now()
	code, out := runFlowerCLI(t, codexEnv(t, closed, codexPersonConfig), "--harness", bin, "-C", ws, "--run-dir", runDir, "say hello")
	t.Logf("refused endpoint on Codex: exit %d after %v", code, time.Since(start))
	if code != 8 || !strings.Contains(out, "the API endpoint "+closed+" refused the connection") || !strings.Contains(out, "base_url") {
		t.Fatalf("flower exited %d, want 8 and the endpoint named:\n%s", code, out)
	}
	if st := loadStep(t, runDir, "main"); st.Status != manifest.StatusUnreachable {
		t.Errorf("status %s, errors %q", st.Status, st.Errors)
	}
}
