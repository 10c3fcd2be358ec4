package integration_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/flowerhq/flower/integration/itest"
	"github.com/flowerhq/flower/manifest"
	"github.com/flowerhq/flower/scriptedresp"
	"github.com/flowerhq/flower/workbench"
)

// `flower -i --harness-kind codex` under tmux, as a person runs it: the
// real Codex CLI's own screen, its app-server flower's. The task given on
// the command line is the first turn, shown on the screen; the context
// crosses the threshold, the same session writes the handoff, a fresh
// screen starts from it and finishes the task; the person quits that
// screen, and the step has succeeded in two generations, with no
// compaction request on the way.
func TestCodexScreenHandoff(t *testing.T) {
	t.Parallel()
	bin := itest.CodexPath(t)
	j := &codexJob{work: func(session, n int) scriptedresp.Reply {
		if session == 1 {
			return scriptedresp.Reply{Text: "SUCCESSOR-SAYS all done", Usage: scriptedresp.Usage{InputTokens: 40000, OutputTokens: 10}}
		}
		return codexTool([]int{30000, 160000}[min(n-1, 1)], fmt.Sprintf("echo round %d", n))
	}}
	api, err := scriptedresp.Start(j.reply)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = api.Close() })
	ws := t.TempDir()
	runDir := filepath.Join(ws, ".flower", "runs", "screen")
	env := codexEnv(t, api.URL, codexPersonConfig)
	f, err := startTmuxFlower(t, env, nil, ws, []string{flowerBinary(t), "-i", "--harness", bin, "-C", ws, "--run-dir", runDir,
		"TASK-MARK: port the parser"})
	if err != nil {
		t.Fatal(err)
	}
	// flower's meter, in the window's title: Codex's footer takes none of
	// flower's figures.
	titles := watchTitles(t, f.socket)
	waitScreen(t, f, "SUCCESSOR-SAYS", 3*waitLimit)
	// flower's own prompts show as one line each (DESIGN.md «Codex
	// screen»); the model had them whole (below).
	screen := f.capture()
	if !strings.Contains(screen, "flower: you are taking over this task") || strings.Contains(screen, "the task begins") || strings.Contains(screen, "DOING-MARK-1") {
		t.Errorf("the successor's prompt did not show as one line:\n%s", screen)
	}
	meter := titles.saw("K/180K") // flower's figures, against the window it works with
	seen := titles.all()
	t.Logf("titles seen: %q", seen)
	if !meter {
		t.Errorf("flower's meter never showed in the title; titles seen: %q", seen)
	}
	// The person is done.
	quitCodexScreen(t, f, runDir)
	if f.exitCode() != 0 {
		t.Fatalf("flower exited %d:\n%s", f.exitCode(), f.output())
	}
	st := loadStep(t, runDir, "main")
	if st.Status != manifest.StatusSucceeded || len(st.Generations) != 2 {
		log, _ := os.ReadFile(workbench.LogFile(runDir))
		t.Fatalf("status %s, %d generations (errors %q):\n%s\nlog:\n%s", st.Status, len(st.Generations), st.Errors, f.output(), log)
	}
	if h := st.Generations[0].Handoff; h == nil || h.Degraded {
		t.Fatalf("the first generation's handoff: %+v", h)
	}
	sawTask, sawSuccessor := false, false
	for _, q := range api.Requests() {
		if q.Compaction {
			t.Fatalf("request %d is a compaction request", q.Seq)
		}
		sawTask = sawTask || strings.Contains(q.LastUserText, "TASK-MARK")
		sawSuccessor = sawSuccessor || (strings.Contains(q.LastUserText, "DOING-MARK-1") && strings.Contains(q.LastUserText, "TASK-MARK"))
	}
	if !sawTask || !sawSuccessor {
		t.Fatalf("the task reached the model %v, the successor's prompt with the handoff and the task %v", sawTask, sawSuccessor)
	}
}

// `flower demo -i --harness-kind codex`: the scripted demo on the real
// Codex CLI's own screen, no key: three sessions, two handoffs, both
// announced in the title, the story checked as `flower demo` checks it,
// once the person quits the third screen.
func TestCodexDemoInteractive(t *testing.T) {
	t.Parallel()
	bin := itest.CodexPath(t)
	var env []string
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); k != "FLOWER_HARNESS" && k != "FLOWER_HARNESS_KIND" {
			env = append(env, kv)
		}
	}
	f, err := startTmuxFlower(t, env, nil, t.TempDir(), []string{flowerBinary(t), "demo", "-i", "--harness-kind", "codex", "--harness", bin, "--clean"})
	if err != nil {
		t.Fatal(err)
	}
	titles := watchTitles(t, f.socket)
	waitScreen(t, f, "Done. wordfreq.sh", 4*waitLimit)
	announced := map[string]bool{}
	for _, gen := range []string{"1", "2"} {
		announced[gen] = titles.saw("flower · <- gen " + gen + " handed off, to .flower/notes/交接-demo.md")
	}
	if !announced["1"] || !announced["2"] {
		t.Errorf("handoffs announced in the title: %v, want generations 1 and 2", announced)
	}
	quitCodexScreen(t, f, "")
	out := f.output()
	for _, want := range []string{"flower demo -i: 3 sessions, 2 handoffs", "FLOWER-EXIT=0", "(--clean)"} {
		if !strings.Contains(out, want) {
			t.Errorf("the screen after the demo lacks %q:\n%s", want, out)
		}
	}
}

// quitCodexScreen quits the Codex CLI's screen as a person does (Ctrl-C
// twice) and waits for flower to end; runDir's log is shown when it does
// not ("" for none).
func quitCodexScreen(t *testing.T, f *tmuxFlower, runDir string) {
	t.Helper()
	_, _ = f.tmux("send-keys", "-t", "it", "C-c")
	time.Sleep(300 * time.Millisecond)
	_, _ = f.tmux("send-keys", "-t", "it", "C-c")
	select {
	case <-f.exited():
	case <-time.After(2 * waitLimit):
		var log []byte
		if runDir != "" {
			log, _ = os.ReadFile(workbench.LogFile(runDir))
		}
		t.Fatalf("flower did not end after the screen was quit:\n%s\nlog:\n%s", f.capture(), log)
	}
}

// waitScreen waits for text on the pane.
func waitScreen(t *testing.T, f *tmuxFlower, text string, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !strings.Contains(f.capture(), text) {
		select {
		case <-f.exited():
			t.Fatalf("flower exited %d before %q showed:\n%s", f.exitCode(), text, f.output())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("%q did not show within %v:\n%s", text, within, f.capture())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// A key the API refuses, in the Codex CLI's own screen: the screen says
// so, and flower's meter in the title says the API refused the
// credentials; the person may log in and go on, so nothing is stopped,
// but the screen quit with no turn answered ends the step auth_failed,
// exit 7, with the line naming what to fix, never "succeeded" (as on
// Claude Code's screen).
func TestCodexScreenRefusedKey(t *testing.T) {
	t.Parallel()
	bin := itest.CodexPath(t)
	api, err := scriptedresp.Start(func(*scriptedresp.Request) scriptedresp.Reply { return scriptedresp.Unauthorized() })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = api.Close() })
	ws := t.TempDir()
	runDir := filepath.Join(ws, ".flower", "runs", "refused")
	f, err := startTmuxFlower(t, codexEnv(t, api.URL, ""), nil, ws, []string{flowerBinary(t), "-i", "--harness", bin, "-C", ws, "--run-dir", runDir, "TASK-MARK"})
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(2 * waitLimit)
	for {
		title, _ := f.tmux("display-message", "-p", "-t", "it", "#{pane_title}")
		if strings.Contains(title, "the API refused the credentials") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the title never said the key was refused (now %q):\n%s", title, f.capture())
		}
		time.Sleep(50 * time.Millisecond)
	}
	quitCodexScreen(t, f, runDir)
	out := f.output()
	if f.exitCode() != 7 || !strings.Contains(out, "env_key") {
		t.Fatalf("flower exited %d:\n%s", f.exitCode(), out)
	}
	if st := loadStep(t, runDir, "main"); st.Status != manifest.StatusAuthFailed {
		t.Fatalf("a refused key made the step %s", st.Status)
	}
}

// A Codex screen killed in the middle of a turn is started again by the
// engine's retry on the same thread (`codex resume` on the new screen),
// its first turn the engine's: one generation, the same session, one
// failed attempt, and the model goes on in the thread with the task and
// the killed command in it.
func TestCodexScreenResumesAfterACrash(t *testing.T) {
	t.Parallel()
	bin := itest.CodexPath(t)
	mark := filepath.Join(t.TempDir(), "started")
	j := &codexJob{work: func(session, n int) scriptedresp.Reply {
		if n == 1 {
			return codexTool(30000, "touch "+mark+"; exec sleep 120")
		}
		return scriptedresp.Reply{Text: "RESUMED-SAYS all done", Usage: scriptedresp.Usage{InputTokens: 40000, OutputTokens: 10}}
	}}
	api, err := scriptedresp.Start(j.reply)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = api.Close() })
	ws := t.TempDir()
	runDir := filepath.Join(ws, ".flower", "runs", "screen")
	f, err := startTmuxFlower(t, codexEnv(t, api.URL, codexPersonConfig), nil, ws, []string{flowerBinary(t), "-i", "--harness", bin, "-C", ws, "--run-dir", runDir, "TASK-MARK: keep working"})
	if err != nil {
		t.Fatal(err)
	}
	until(t, "the long command", func() bool { _, err := os.Stat(mark); return err == nil })
	before := loadStep(t, runDir, "main")
	seq := len(api.Requests())
	screen := codexScreenPID(t, ws)
	if err := syscall.Kill(screen, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitScreen(t, f, "RESUMED-SAYS", 2*waitLimit)
	quitCodexScreen(t, f, runDir)
	if f.exitCode() != 0 {
		t.Fatalf("flower exited %d:\n%s", f.exitCode(), f.output())
	}
	st := loadStep(t, runDir, "main")
	if st.Status != manifest.StatusSucceeded || len(st.Generations) != 1 || st.SessionID != before.SessionID || before.SessionID == "" || st.Attempts != 1 {
		t.Fatalf("after the crash: status %s, %d generations, attempts %d, session %q (was %q), errors %q",
			st.Status, len(st.Generations), st.Attempts, st.SessionID, before.SessionID, st.Errors)
	}
	var resumed *scriptedresp.Request
	for _, q := range api.Requests()[seq:] {
		if !q.Title && resumed == nil {
			resumed = &q
		}
		if q.Compaction {
			t.Errorf("request %d is a compaction request", q.Seq)
		}
	}
	if resumed == nil || !strings.Contains(string(resumed.Body), "TASK-MARK") || !strings.Contains(string(resumed.Body), "exec sleep 120") {
		t.Fatalf("the request after the crash is not in the same thread: %v", resumed)
	}
}

// codexScreenPID is the Codex screen running in ws: a codex started with
// --remote there.
func codexScreenPID(t *testing.T, ws string) int {
	t.Helper()
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		cmd, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil || !strings.Contains(string(cmd), "\x00--remote\x00") {
			continue
		}
		if cwd, _ := os.Readlink("/proc/" + e.Name() + "/cwd"); cwd == ws {
			pid, _ := strconv.Atoi(e.Name())
			return pid
		}
	}
	t.Fatalf("no Codex screen runs in %s", ws)
	return 0
}
