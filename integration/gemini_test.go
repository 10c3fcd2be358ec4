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
	"github.com/flowerhq/flower/scriptedgen"
	"github.com/flowerhq/flower/supervisor"
)

// geminiJob is a model for the Gemini CLI: in each session, work requests
// answered by work(session, n) (n from 1), writing requests with a whole
// handoff; compression requests are counted and answered.
type geminiJob struct {
	mu           sync.Mutex
	session, n   int
	compressions int
	work         func(session, n int) scriptedgen.Reply
}

func (j *geminiJob) reply(r *scriptedgen.Request) scriptedgen.Reply {
	j.mu.Lock()
	defer j.mu.Unlock()
	switch {
	case r.Compression:
		j.compressions++
		return scriptedgen.Reply{Text: "<state_snapshot>SUMMARY</state_snapshot>", Usage: scriptedgen.Usage{PromptTokens: 100000}}
	case r.Side:
		return scriptedgen.SideReply
	case strings.Contains(r.LastUserText, handoffwriter.PromptTag):
		j.session++
		j.n = 0
		return scriptedgen.Reply{Text: fmt.Sprintf("## doing\nDOING-MARK-%d\n## decided\n(空)\n## deadends\n(空)\n## next\nNEXT-MARK-%d\n## scene\n(空)\n", j.session, j.session),
			Usage: scriptedgen.Usage{PromptTokens: 150000, OutputTokens: 300}}
	}
	j.n++
	return j.work(j.session, j.n)
}

func geminiTool(ctx int, cmd string) scriptedgen.Reply {
	return scriptedgen.Reply{Calls: []scriptedgen.Call{scriptedgen.Shell(cmd)}, Usage: scriptedgen.Usage{PromptTokens: ctx, OutputTokens: 40}}
}

func geminiDone() scriptedgen.Reply {
	return scriptedgen.Reply{Text: "all done", Usage: scriptedgen.Usage{PromptTokens: 40000, OutputTokens: 10}}
}

// geminiEnv is flower's environment for a run on the real Gemini CLI
// against the scripted Gemini API at baseURL: a HOME whose user settings
// point the CLI there and compress at 0.2 of the window (the person's
// own), and the fake key.
func geminiEnv(t *testing.T, baseURL string) []string {
	t.Helper()
	home := t.TempDir()
	if err := scriptedgen.WriteHome(home); err != nil {
		t.Fatal(err)
	}
	settings := filepath.Join(home, ".gemini", "settings.json")
	b, err := os.ReadFile(settings)
	if err == nil {
		err = os.WriteFile(settings, []byte(strings.Replace(string(b), `"model": {`, `"model": {"compressionThreshold": 0.2, `, 1)), 0o600)
	}
	if err != nil {
		t.Fatal(err)
	}
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if k == "HOME" || strings.HasPrefix(k, "GEMINI") || strings.HasPrefix(k, "GOOGLE") || k == "FLOWER_HARNESS" {
			continue
		}
		env = append(env, kv)
	}
	env = append(env, "HOME="+home, "FLOWER_HARNESS_KIND=gemini", "XDG_STATE_HOME="+filepath.Join(home, "state"))
	return append(env, scriptedgen.EnvFor(baseURL)...)
}

// A job that needs three sessions, run by the flower command on the real
// Gemini CLI whose person's settings compress at 0.2 of the window: two
// whole handoffs, no compression request reaches the model, and each
// successor starts from its handoff file and the task.
func TestGeminiJobOfThreeSessions(t *testing.T) {
	t.Parallel()
	bin := itest.GeminiPath(t)
	j := &geminiJob{work: func(session, n int) scriptedgen.Reply {
		if session == 2 && n == 2 {
			return geminiDone()
		}
		return geminiTool([]int{300000, 700000, 1010000}[min(n-1, 2)], fmt.Sprintf("echo session %d round %d", session, n))
	}}
	api, err := scriptedgen.Start(j.reply)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = api.Close() })
	ws := t.TempDir()
	runDir := filepath.Join(ws, ".flower", "runs", "gemini")
	code, out := runFlowerCLI(t, geminiEnv(t, api.URL), "--harness", bin, "-C", ws, "--run-dir", runDir, "TASK-MARK: port the parser", "--", "--approval-mode", "yolo")
	if code != 0 {
		t.Fatalf("flower exited %d:\n%s", code, out)
	}
	st := loadStep(t, runDir, "main")
	if st.Status != manifest.StatusSucceeded || len(st.Generations) != 3 {
		t.Fatalf("status %s, %d generations (errors %q):\n%s", st.Status, len(st.Generations), st.Errors, out)
	}
	for i, g := range st.Generations[:2] {
		if h := g.Handoff; h == nil || h.Degraded || h.Reason != manifest.ReasonThreshold || h.Window != 1048576 {
			t.Errorf("generation %d handoff %+v: want a whole one at the threshold of 1048576", i+1, h)
		}
	}
	if j.compressions > 0 {
		t.Errorf("%d compression requests reached the model", j.compressions)
	}
	firsts := 0
	for _, q := range api.Main() {
		if len(q.Responses) == 0 && strings.Contains(q.LastUserText, "taking over an ongoing task") {
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
	if m, err := os.ReadFile(filepath.Join(runDir, "manifest.json")); err != nil || !strings.Contains(string(m), `"harness_kind":"gemini"`) && !strings.Contains(string(m), `"harness_kind": "gemini"`) {
		t.Errorf("the manifest does not say the run's harness: %v", err)
	}
}

// SIGKILL to flower while the Gemini CLI runs a command: the CLI and the
// command go with flower, and flower continue resumes the same session
// (the CLI keeps it in the person's ~/.gemini) with the continue message.
func TestGeminiKillThenContinue(t *testing.T) {
	t.Parallel()
	bin := itest.GeminiPath(t)
	mark := filepath.Join(t.TempDir(), "started")
	j := &geminiJob{work: func(session, n int) scriptedgen.Reply {
		switch n {
		case 1:
			return geminiTool(30000, "echo one")
		case 2:
			return geminiTool(40000, "touch "+mark+"; exec sleep 120")
		}
		return geminiDone()
	}}
	api, err := scriptedgen.Start(j.reply)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = api.Close() })
	env := geminiEnv(t, api.URL)
	ws := t.TempDir()
	runDir := filepath.Join(ws, ".flower", "runs", "gemini")
	args := []string{"--harness", bin, "-C", ws, "--run-dir", runDir}
	f := startFlower(t, env, append(args, "TASK-MARK: keep working", "--", "--approval-mode", "yolo")...)
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
	seq := len(api.Main())
	start := time.Now()
	code, out := runFlowerCLI(t, env, append([]string{"continue"}, args...)...)
	if code != 0 {
		t.Fatalf("flower continue exited %d:\n%s", code, out)
	}
	t.Logf("continue took %v (a resume waits out the session's first minute)", time.Since(start).Round(time.Millisecond))
	st := loadStep(t, runDir, "main")
	if st.Status != manifest.StatusSucceeded || len(st.Generations) != 1 || st.SessionID != before.SessionID {
		t.Fatalf("after continue: status %s, %d generations, session %q (was %q), errors %q", st.Status, len(st.Generations), st.SessionID, before.SessionID, st.Errors)
	}
	main := api.Main()
	if len(main) <= seq {
		t.Fatal("continue sent no request")
	}
	if j.compressions > 0 {
		t.Errorf("%d compression requests reached the model", j.compressions)
	}
	resumed := string(main[seq].Body)
	for _, want := range []string{"TASK-MARK", "echo one", supervisor.ContinueMessage} {
		if !strings.Contains(resumed, want) {
			t.Errorf("the resumed session's request lacks %q: not the same session", want)
		}
	}
}

// A key the API refuses, on the real Gemini CLI: the step ends auth_failed
// with exit 7 and a line in Gemini's words (its key variable, masked),
// never Claude Code's, never the key.
func TestGeminiRefusedKey(t *testing.T) {
	t.Parallel()
	bin := itest.GeminiPath(t)
	api, err := scriptedgen.Start(func(*scriptedgen.Request) scriptedgen.Reply { return scriptedgen.Unauthorized() })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = api.Close() })
	ws := t.TempDir()
	runDir := filepath.Join(ws, ".flower", "runs", "gemini")
	code, out := runFlowerCLI(t, geminiEnv(t, api.URL), "--harness", bin, "-C", ws, "--run-dir", runDir, "say hello")
	if code != 7 {
		t.Fatalf("flower exited %d, want 7:\n%s", code, out)
	}
	if !strings.Contains(out, "GEMINI_API_KEY") || strings.Contains(out, "claude") || strings.Contains(out, "ANTHROPIC") || strings.Contains(out, scriptedgen.APIKey) {
		t.Errorf("the line is not in Gemini's words, or shows the key:\n%s", out)
	}
	if st := loadStep(t, runDir, "main"); st.Status != manifest.StatusAuthFailed {
		t.Errorf("status %s, errors %q", st.Status, st.Errors)
	}
}
