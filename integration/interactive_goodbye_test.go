package integration_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/flowerhq/flower/handoffwriter"
	"github.com/flowerhq/flower/manifest"
	"github.com/flowerhq/flower/scriptedapi"
)

// twoHandoffs is a scripted model whose first two generations each cross
// the threshold with a reply that ends the turn, so an interactive run has
// three generations.
type twoHandoffs struct {
	mu         sync.Mutex
	successors int
	then       string // the reply after the first round's tool result
	gen        int    // writing turns answered
}

func (s *twoHandoffs) reply(r *scriptedapi.Request) scriptedapi.Reply {
	if r.Kind != scriptedapi.KindMain {
		return scriptedapi.Harmless(r)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case strings.Contains(r.LastUserText, handoffwriter.PromptTag):
		s.gen++
		return goodHandoff(s.gen - 1)
	case strings.Contains(r.LastUserText, "You are taking over"):
		s.successors++
		if s.successors == 1 {
			// A fresh session whose first round is already past the
			// threshold would be futile: it first looks around.
			s.then = "SECOND-GEN-SAYS: past the threshold again."
			return bash(60_000, "true")
		}
		return scriptedapi.Reply{Text: "THIRD-GEN-SAYS: picking up from the handoff.", Usage: usage(20_000)}
	case strings.Contains(r.LastUserText, "TASK-MARK"):
		s.then = "FIRST-GEN-SAYS: past the threshold."
		return bash(60_000, "true")
	case s.then != "":
		text := s.then
		s.then = ""
		return scriptedapi.Reply{Text: text, Usage: usage(155_000)}
	}
	return scriptedapi.Harmless(r)
}

// TestInteractiveGoodbyeNamesNoRetiredSession: after an interactive run with
// two handoffs, the person's screen offers no way to resume a retired
// session (each harness flower ended said "claude --resume <its id>"), and
// does offer flower's own way on, which works as printed.
func TestInteractiveGoodbyeNamesNoRetiredSession(t *testing.T) {
	t.Parallel()
	script := &twoHandoffs{}
	srv := startServer(t, script.reply)
	r := interactiveRun{srv: srv, workspace: t.TempDir(), home: t.TempDir(), flower: buildFlower(t), harness: harnessPath(t),
		args: []string{"--window", "200000", "--", "--permission-mode", "dontAsk", "--allowedTools", "Bash"}}
	seedHarnessHome(t, r.home, r.workspace, scriptedapi.APIKey)
	p := startPane(t, r)
	p.harnessUp(r.home)
	p.keys("TASK-MARK do the work")
	p.press("Enter")
	p.waitText("THIRD-GEN-SAYS", 4*waitLimit)
	p.keys("/exit")
	p.press("Enter")
	p.waitText("FLOWER-EXIT=", 2*waitLimit)
	screen := p.capture()
	if !strings.Contains(screen, "FLOWER-EXIT=0") {
		t.Fatalf("flower did not exit 0")
	}

	st := onlyStep(t, r.workspace)
	if len(st.Generations) != 3 || len(st.Retired) != 2 || st.Status != manifest.StatusSucceeded {
		t.Fatalf("step %s: %d generations, retired %q; errors %q", st.Status, len(st.Generations), st.Retired, st.Errors)
	}
	live := st.SessionID
	if live == "" || live != st.Generations[2].SessionID {
		t.Fatalf("live session %q, generation 3's %q", live, st.Generations[2].SessionID)
	}
	for _, id := range st.Retired {
		if strings.Contains(screen, id) {
			t.Errorf("the screen names retired session %s", id)
		}
	}
	if strings.Contains(screen, "--resume") || strings.Contains(screen, "Resume this session") {
		t.Errorf("the screen shows a harness's resume line")
	}

	// flower's own line: the live session, and a command that works as it
	// stands.
	if !strings.Contains(screen, "flower: to continue this step (live session "+live+"), replace MESSAGE with what to do next:") {
		t.Errorf("the screen lacks flower's continue line for %s", live)
	}
	var command string
	for _, l := range strings.Split(screen, "\n") {
		if l = strings.TrimSpace(l); strings.HasPrefix(l, "flower continue ") {
			command = l
		}
	}
	runs := manifests(t, r.workspace)
	wantCmd := "flower continue --run-dir " + strings.TrimSuffix(runs[0], "/"+manifest.FileName) +
		" --step main MESSAGE -- --permission-mode dontAsk --allowedTools Bash"
	if command != wantCmd {
		t.Fatalf("continue command on the screen %q, want %q", command, wantCmd)
	}
	before := requestsWith(srv, "THIRD-GEN-SAYS", "CONTINUE-MARK")
	// The person replaces MESSAGE, as the line says, and runs the rest as
	// printed.
	typed := strings.Replace(strings.TrimPrefix(command, "flower"), " MESSAGE ", " 'CONTINUE-MARK add the changelog' ", 1)
	cont := exec.Command("bash", "-c", shellQuote(r.flower)+typed)
	cont.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + r.home, "XDG_STATE_HOME=" + os.Getenv("XDG_STATE_HOME"), "FLOWER_HARNESS=" + r.harness}, srv.Env()...) // the trust store the run kept its receipts in
	if out, err := cont.CombinedOutput(); err != nil {
		t.Fatalf("the printed command failed: %v\n%s", err, out)
	}
	if after := requestsWith(srv, "THIRD-GEN-SAYS", "CONTINUE-MARK"); after <= before {
		t.Errorf("the printed command did not resume generation 3's session with the message (%d requests with its history, %d before)", after, before)
	}
	if st := onlyStep(t, r.workspace); st.SessionID != live || len(st.Generations) != 3 || len(st.Retired) != 2 {
		t.Errorf("after continue: session %q (want %q), %d generations, retired %q", st.SessionID, live, len(st.Generations), st.Retired)
	}
}

// requestsWith counts the main-thread requests whose history holds every
// one of texts.
func requestsWith(srv *scriptedapi.Server, texts ...string) int {
	n := 0
	for _, r := range srv.Requests() {
		all := r.Kind == scriptedapi.KindMain
		for _, text := range texts {
			all = all && strings.Contains(r.AllText, text)
		}
		if all {
			n++
		}
	}
	return n
}

// TestInteractiveExitInDefaultRenderer: with the harness's default
// renderer, which draws on the person's own screen (no alternate screen),
// a person's /exit makes the harness print its resume hint right there.
// flower's closing line takes its place all the same.
func TestInteractiveExitInDefaultRenderer(t *testing.T) {
	t.Parallel()
	srv := startServer(t, func(r *scriptedapi.Request) scriptedapi.Reply {
		if r.Kind != scriptedapi.KindMain {
			return scriptedapi.Harmless(r)
		}
		return scriptedapi.Reply{Text: "DEFAULT-RENDERER-SAYS: hello.", Usage: usage(20_000)}
	})
	r := interactiveRun{srv: srv, workspace: t.TempDir(), home: t.TempDir(), flower: buildFlower(t), harness: harnessPath(t)}
	seedHarnessHome(t, r.home, r.workspace, scriptedapi.APIKey)
	// The person's own choice of renderer (a fresh install gets the
	// fullscreen one, on the alternate screen).
	if err := os.MkdirAll(filepath.Join(r.home, ".claude"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(r.home, ".claude", "settings.json"), []byte(`{"tui":"default"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	p := startPane(t, r)
	p.harnessUp(r.home)
	p.keys("say hello")
	p.press("Enter")
	p.waitText("DEFAULT-RENDERER-SAYS", 2*waitLimit)
	if alt := strings.TrimSpace(p.tmux("display-message", "-p", "-t", "it", "#{alternate_on}")); alt != "0" {
		t.Fatalf("the harness is on the alternate screen (alternate_on %s): not the default renderer", alt)
	}
	p.keys("/exit")
	p.press("Enter")
	p.waitText("FLOWER-EXIT=", 2*waitLimit)
	screen := p.capture()
	if !strings.Contains(screen, "FLOWER-EXIT=0") {
		t.Fatalf("flower did not exit 0")
	}
	if strings.Contains(screen, "Resume this session") || strings.Contains(screen, "--resume") {
		t.Errorf("the screen shows the harness's resume hint")
	}
	st := onlyStep(t, r.workspace)
	if st.SessionID == "" || !strings.Contains(screen, "flower: to continue this step (live session "+st.SessionID+")") {
		t.Errorf("the screen lacks flower's continue line for session %q", st.SessionID)
	}
}
