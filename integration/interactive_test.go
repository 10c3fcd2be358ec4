package integration_test

import (
	"encoding/json"
	"fmt"
	"github.com/tidwall/gjson"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/flowerhq/flower/handoffwriter"
	"github.com/flowerhq/flower/integration/pagecheck"
	"github.com/flowerhq/flower/manifest"
	"github.com/flowerhq/flower/scriptedapi"
	"github.com/flowerhq/flower/transcript"
)

// The interactive mode end to end: the flower binary runs the real harness's
// terminal UI in a pty inside a tmux pane, a person's keys are tmux
// send-keys, and the screen is tmux capture-pane.

// buildFlower builds the flower command into a temp dir.
func buildFlower(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "flower")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/flower")
	cmd.Dir = ".."
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build flower: %v\n%s", err, out)
	}
	return bin
}

// seedHarnessHome writes the $HOME/.claude.json that keeps the harness's
// first-run screens from trapping an unattended run (see the package doc of
// interactive): onboarding done, the workspace trusted, the API key approved
// (the harness stores its last 20 characters).
func seedHarnessHome(t *testing.T, home, workspace, apiKey string) {
	t.Helper()
	key := apiKey
	if len(key) > 20 {
		key = key[len(key)-20:]
	}
	cfg := map[string]any{
		"hasCompletedOnboarding": true,
		"customApiKeyResponses":  map[string]any{"approved": []string{key}, "rejected": []string{}},
		"projects":               map[string]any{workspace: map[string]any{"hasTrustDialogAccepted": true}},
	}
	b, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, ".claude.json"), b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// pane is one tmux pane on a tmux server of the test's own.
type pane struct {
	t      *testing.T
	socket string
	dir    string // where the pane's script leaves its files
}

// interactiveRun describes one flower run in a pane.
type interactiveRun struct {
	srv       *scriptedapi.Server
	workspace string
	home      string
	flower    string   // the binary
	harness   string   // --harness
	args      []string // flower's arguments after -i
	argv      []string // the whole command line, instead of flower -i … args
}

// startPane starts a tmux server and runs r in a 120x40 pane through a
// script that records flower's pid and exit code and whether the terminal's
// mode after flower is the mode before it.
func startPane(t *testing.T, r interactiveRun) *pane {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Fatalf("the interactive tests need tmux: %v", err)
	}
	p := &pane{t: t, socket: fmt.Sprintf("flower-it-%d-%d", os.Getpid(), time.Now().UnixNano()), dir: t.TempDir()}
	argv := r.argv
	if argv == nil {
		argv = append([]string{r.flower, "-i", "--harness", r.harness, "-C", r.workspace}, r.args...)
	}
	var q []string
	for _, a := range argv {
		q = append(q, shellQuote(a))
	}
	var env []string
	if r.srv != nil {
		for _, kv := range r.srv.Env() {
			env = append(env, "export "+shellQuote(kv))
		}
	}
	script := fmt.Sprintf(`#!/bin/bash
unset ANTHROPIC_AUTH_TOKEN ANTHROPIC_MODEL ANTHROPIC_DEFAULT_OPUS_MODEL CLAUDE_CONFIG_DIR DISABLE_AUTO_COMPACT
export HOME=%s
%s
cd %s
before=$(stty -g)
bash -c 'echo $$ > %s; exec "$@"' flower %s
echo "FLOWER-EXIT=$?"
if [ "$(stty -g)" = "$before" ]; then echo TTY-RESTORED; else echo TTY-CHANGED; fi
sleep 600
`, shellQuote(r.home), strings.Join(env, "\n"), shellQuote(r.workspace), shellQuote(p.file("pid")), strings.Join(q, " "))
	path := p.file("run.sh")
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	p.tmux("-f", "/dev/null", "new-session", "-d", "-s", "it", "-x", "120", "-y", "40", path)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("pane at the end:\n%s", p.capture())
		}
		_ = tmuxCommand(p.socket, "kill-server").Run()
	})
	return p
}

// tmuxCommand runs tmux on the test's own server in UTF-8, as a person's
// terminal would be: without a UTF-8 locale (CI may have none) tmux turns
// the Chinese status lines in titles and panes into underscores.
func tmuxCommand(socket string, args ...string) *exec.Cmd {
	cmd := exec.Command("tmux", append([]string{"-u", "-L", socket}, args...)...)
	cmd.Env = append(os.Environ(), "LANG=C.UTF-8", "LC_ALL=C.UTF-8")
	return cmd
}

func (p *pane) file(name string) string { return filepath.Join(p.dir, name) }

func (p *pane) tmux(args ...string) string {
	p.t.Helper()
	out, err := tmuxCommand(p.socket, args...).CombinedOutput()
	if err != nil {
		p.t.Fatalf("tmux %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// keys types literal text into the pane, as a person would.
func (p *pane) keys(text string) { p.tmux("send-keys", "-t", "it", "-l", text) }

// press sends named keys (Enter, C-u, …).
func (p *pane) press(keys ...string) { p.tmux(append([]string{"send-keys", "-t", "it"}, keys...)...) }

// capture is the pane's text with its scrollback, wrapped lines joined.
func (p *pane) capture() string { return p.tmux("capture-pane", "-p", "-J", "-S", "-", "-t", "it") }

// ttyMode is `stty -a` of the pane's terminal, the person's terminal.
func (p *pane) ttyMode() string {
	tty := strings.TrimSpace(p.tmux("display-message", "-p", "-t", "it", "#{pane_tty}"))
	out, err := exec.Command("stty", "-a", "-F", tty).CombinedOutput()
	if err != nil {
		p.t.Fatalf("stty -F %s: %v\n%s", tty, err, out)
	}
	return string(out)
}

// waitFor polls cond until it holds or the limit passes.
func (p *pane) waitFor(what string, limit time.Duration, cond func() bool) {
	p.t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			p.t.Fatalf("no %s within %v", what, limit)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (p *pane) waitText(text string, limit time.Duration) {
	p.t.Helper()
	p.waitFor(fmt.Sprintf("%q on the screen", text), limit, func() bool { return strings.Contains(p.capture(), text) })
}

// flowerPID is the pid the pane's script recorded.
func (p *pane) flowerPID() int {
	p.t.Helper()
	var pid int
	p.waitFor("flower's pid", waitLimit, func() bool {
		b, err := os.ReadFile(p.file("pid"))
		if err != nil {
			return false
		}
		pid, err = strconv.Atoi(strings.TrimSpace(string(b)))
		return err == nil
	})
	return pid
}

// harnessUp waits for the harness's prompt in the pane.
func (p *pane) harnessUp(home string) {
	p.t.Helper()
	p.waitFor("the harness's state file", waitLimit, func() bool {
		m, _ := filepath.Glob(filepath.Join(home, ".claude", "sessions", "*.json"))
		return len(m) > 0
	})
	p.waitText("❯", waitLimit)
}

// rawMode reports whether stty output describes raw mode.
func rawMode(stty string) bool {
	return strings.Contains(stty, "-icanon") && strings.Contains(stty, "-echo ")
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// interactiveScript is the scripted model of the handoff test.
type interactiveScript struct {
	mu        sync.Mutex
	stage     int // 0: task, 1: tool result, then done
	writing   []scriptedapi.Request
	successor []scriptedapi.Request
	continued []scriptedapi.Request
}

func (s *interactiveScript) reply(r *scriptedapi.Request) scriptedapi.Reply {
	if r.Kind != scriptedapi.KindMain {
		return scriptedapi.Harmless(r)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case strings.Contains(r.LastUserText, "CONTINUE-MARK"):
		s.continued = append(s.continued, *r)
		return scriptedapi.Reply{Text: "CONTINUED-OK", Usage: usage(25_000)}
	case strings.Contains(r.LastUserText, handoffwriter.PromptTag):
		s.writing = append(s.writing, *r)
		return goodHandoff(0)
	case strings.Contains(r.LastUserText, "You are taking over"):
		s.successor = append(s.successor, *r)
		return scriptedapi.Reply{Text: "SUCCESSOR-SAYS: picking up from the handoff.", Usage: usage(20_000)}
	case s.stage == 0 && strings.Contains(r.LastUserText, "TASK-MARK"):
		s.stage = 1
		// 140k: past the near notice (130k), short of the handoff (150k).
		return bash(140_000, "echo one")
	case s.stage == 1 && len(r.LastToolResults) > 0:
		s.stage = 2
		// 155k while a tool is about to run: mid-turn, flower must
		// interrupt. The delay keeps the near notice up long enough to
		// be seen in the title.
		rep := bash(155_000, "timeout 30 tail -f /dev/null")
		rep.Delay = 2 * time.Second
		return rep
	}
	return scriptedapi.Harmless(r)
}

// TestInteractiveHandoffUnderTmux is the interactive mode's whole story: a
// person types a task into the real harness's screen, the scripted usage
// crosses the threshold while a tool runs, flower interrupts, types the
// handoff prompt (the person's keys held back meanwhile), writes the
// handoff, restarts the harness with the prompt block from disk, and gives
// the terminal back as it found it.
func TestInteractiveHandoffUnderTmux(t *testing.T) {
	t.Parallel()
	script := &interactiveScript{}
	srv := startServer(t, script.reply)
	r := interactiveRun{srv: srv, workspace: t.TempDir(), home: t.TempDir(), flower: buildFlower(t), harness: harnessPath(t),
		args: []string{"--lang", "zh", "--window", "200000", "--", "--permission-mode", "dontAsk", "--allowedTools", "Bash"}}
	seedHarnessHome(t, r.home, r.workspace, scriptedapi.APIKey)
	p := startPane(t, r)
	p.harnessUp(r.home)
	if mode := p.ttyMode(); !rawMode(mode) {
		t.Fatalf("the terminal is not raw while the harness runs:\n%s", mode)
	}

	// Titles, as a person glancing at the window would see them.
	titles := watchTitles(t, p.socket)
	sawTitle := titles.saw

	const task = "TASK-MARK build the shim"
	p.keys(task)
	time.Sleep(300 * time.Millisecond)
	p.press("Enter")

	// The writing phase shows in the title; keys typed now must be held.
	p.waitFor("the writing title", 2*waitLimit, func() bool { return sawTitle("写交接准备换代") })
	p.keys("INTERLOPER")
	p.waitText("SUCCESSOR-SAYS", 2*waitLimit)
	if !sawTitle("上下文 140.0K/200K · 还有约 10K 到换代") {
		all := titles.all()
		t.Errorf("the near notice never showed in the title; titles seen: %q", all)
	}
	// The held keys went to the new harness, not into the handoff prompt.
	p.waitFor("INTERLOPER in the new harness's input", waitLimit, func() bool {
		for _, l := range strings.Split(p.capture(), "\n") {
			// The prompt marker is followed by a no-break space.
			if strings.HasPrefix(l, "❯") && strings.TrimSpace(strings.TrimPrefix(l, "❯")) == "INTERLOPER" {
				return true
			}
		}
		return false
	})

	script.mu.Lock()
	writing, successor := script.writing, script.successor
	script.mu.Unlock()
	if len(writing) != 1 || len(successor) != 1 {
		t.Fatalf("%d writing turns and %d successor starts reached the server, want 1 and 1", len(writing), len(successor))
	}
	// flower's long prompts reach the model whole, as a file the harness
	// attached (its Read rendering, each line numbered), and the screen as
	// one short line and the harness's "Read …" (DESIGN.md «Quiet screen»).
	want := strings.TrimSpace(handoffwriter.HandoffPrompt(155_000, 200_000))
	if got := unnumbered(writing[0].LastUserText); !strings.Contains(got, want) || strings.Contains(got, "INTERLOPER") || strings.Contains(got, "pasted_content") {
		t.Errorf("the handoff prompt did not arrive verbatim and alone:\n%s", clip(got, 3000))
	}
	// The successor's first prompt is the prompt block read from disk.
	notes := filepath.Join(r.workspace, ".flower", "notes", "交接-main.md")
	doc, err := os.ReadFile(notes)
	if err != nil {
		t.Fatalf("handoff file: %v", err)
	}
	if !strings.Contains(string(doc), "DOING-MARK-1") || !strings.Contains(string(doc), "DEADEND-MARK-1") {
		t.Errorf("handoff file lacks the writing turn's document:\n%s", doc)
	}
	if s := successor[0].LastUserText; !strings.Contains(s, "You are taking over") || !strings.Contains(s, "NEXT-MARK-1") {
		t.Errorf("successor's first prompt is not the prompt block:\n%s", clip(s, 2000))
	}
	// It carries the task the person typed, verbatim, as a headless run's does.
	if s := unnumbered(successor[0].LastUserText); !strings.Contains(s, handoffwriter.TaskBegin+"\n"+task+"\n"+handoffwriter.TaskEnd) {
		t.Errorf("successor's first prompt does not carry the typed task:\n%s", clip(s, 3000))
	}
	shown := p.capture()
	for _, noise := range []string{handoffwriter.PromptTag, "Dead ends are the most valuable", "You are taking over", handoffwriter.TaskBegin} {
		if strings.Contains(shown, noise) {
			t.Errorf("the screen shows flower's prompt (%q):\n%s", noise, shown)
		}
	}
	// The successor's screen is the one left to see; generation 1's
	// writing line is in its transcript (below).
	for _, want := range []string{"flower: you are taking over this task", "main-2-first-", "Read .flower/runs/"} {
		if !strings.Contains(shown, want) {
			t.Errorf("the screen lacks %q:\n%s", want, shown)
		}
	}

	// The successor's status line shows the chain's cost: generation 1's,
	// booked as its harness exited, with its own.
	chainCost := regexp.MustCompile(`第 2 代 · [^\n]*\$(0\.0[1-9]|0\.[1-9]|[1-9])`)
	p.waitFor("the chain's cost on generation 2's status line", waitLimit, func() bool { return chainCost.MatchString(p.capture()) })

	// The person ends the session; flower ends with it.
	p.press("C-u")
	p.keys("/exit")
	time.Sleep(500 * time.Millisecond)
	p.press("Enter")
	p.waitText("TTY-", 2*waitLimit) // the line after FLOWER-EXIT: both are on screen then
	screen := p.capture()
	for _, want := range []string{"FLOWER-EXIT=0", "TTY-RESTORED",
		"# 上下文 140.0K/200K · 还有约 10K 到换代", "# 上下文 155.0K/200K —— 写交接准备换代",
		"<- 交接写在 ", "交接-main.md", "<- 新会话接手"} {
		if !strings.Contains(screen, want) {
			t.Errorf("screen after exit lacks %q", want)
		}
	}
	if mode := p.ttyMode(); rawMode(mode) {
		t.Errorf("terminal still raw after flower exited:\n%s", mode)
	}

	// The manifest tells the same story.
	runs := manifests(t, r.workspace)
	if len(runs) != 1 {
		t.Fatalf("manifests %q, want 1", runs)
	}
	m, err := manifest.Load(runs[0])
	if err != nil {
		t.Fatal(err)
	}
	st := m.Step("main")
	if st == nil {
		t.Fatalf("no step main in %s", runs[0])
	}
	if st.Status != manifest.StatusSucceeded || len(st.Generations) != 2 || st.Task != task {
		t.Fatalf("step: status %s, %d generations, task %q; errors %q", st.Status, len(st.Generations), st.Task, st.Errors)
	}
	g1, g2 := st.Generations[0], st.Generations[1]
	if g1.SessionID == "" || g2.SessionID == "" || g1.SessionID == g2.SessionID {
		t.Errorf("sessions %q then %q", g1.SessionID, g2.SessionID)
	}
	if len(st.Retired) != 1 || st.Retired[0] != g1.SessionID || st.SessionID != g2.SessionID {
		t.Errorf("retired %q, session %q (generations %q, %q)", st.Retired, st.SessionID, g1.SessionID, g2.SessionID)
	}
	h := g1.Handoff
	if h == nil || h.Degraded || h.Reason != manifest.ReasonThreshold || h.Context != 155_000 || h.Path != notes || h.SHA256Written != h.SHA256Launched {
		t.Errorf("handoff record %+v", h)
	}
	if g2.Handoff != nil || st.Context != 20_000 || st.NumTurns < 4 {
		t.Errorf("last generation: handoff %+v, step context %d, turns %d", g2.Handoff, st.Context, st.NumTurns)
	}
	if st.CostUSD <= 0 {
		t.Errorf("cost %v: the harness's cost-state lines were not booked", st.CostUSD)
	}
	log, err := os.ReadFile(filepath.Join(filepath.Dir(runs[0]), "flower.log"))
	if err != nil || !strings.Contains(string(log), `"msg":"handoff written"`) {
		t.Errorf("flower.log lacks the handoff (%v)", err)
	}
	// The cut came while the tool ran: flower pressed Esc, and the harness
	// noted the interrupt in generation 1's transcript.
	if !strings.Contains(string(log), `"msg":"handoff due: cutting at the message boundary"`) || !strings.Contains(string(log), `"how":"interrupt"`) {
		t.Errorf("flower.log does not show the interrupt")
	}
	// Every record says where in the run it was written
	phases := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(string(log)), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("flower.log line is not JSON: %q", line)
		}
		for _, k := range []string{"step", "gen", "session", "phase"} {
			if _, ok := rec[k]; !ok {
				t.Errorf("log record %q lacks %q", rec["msg"], k)
			}
		}
		p, _ := rec["phase"].(string)
		phases[p] = true
	}
	if !phases["working"] || !phases["cutting"] || !phases["writing"] {
		t.Errorf("log phases %v: want working, cutting and writing", phases)
	}
	tr, err := os.ReadFile(transcript.FilePath(filepath.Join(r.home, ".claude"), r.workspace, g1.SessionID))
	if err != nil || !strings.Contains(string(tr), "[Request interrupted by user for tool use]") {
		t.Errorf("generation 1's transcript shows no interrupt (%v)", err)
	}
	// The writing turn's prompt, as typed on generation 1's screen: one
	// line naming the request's file, which the harness attached.
	var typedLine string
	for _, line := range strings.Split(string(tr), "\n") {
		if c := gjson.Get(line, "message.content"); gjson.Get(line, "type").String() == "user" && c.Type == gjson.String && strings.Contains(c.String(), "main-1-writing-") {
			typedLine = c.String()
		}
	}
	if !strings.HasPrefix(typedLine, "flower: your context window is nearly full.") || strings.Contains(typedLine, "\n") || strings.Contains(typedLine, handoffwriter.PromptTag) ||
		!strings.Contains(string(tr), `"type":"attachment"`) {
		t.Errorf("generation 1's writing prompt was not one short line with its request attached: %q", typedLine)
	}

	// Continuation works for an interactive run as for a headless one: the
	// live successor (generation 2), never the retired generation 1, is
	// resumed with its history, and the lineage goes on in the manifest.
	cont := exec.Command(r.flower, "continue", "-C", r.workspace, "--harness", r.harness, "CONTINUE-MARK go on")
	cont.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + r.home, "XDG_STATE_HOME=" + os.Getenv("XDG_STATE_HOME")}, srv.Env()...) // the trust store the run kept its receipts in
	out, err := cont.CombinedOutput()
	if err != nil {
		t.Fatalf("flower continue: %v\n%s", err, out)
	}
	script.mu.Lock()
	continued := append([]scriptedapi.Request(nil), script.continued...)
	script.mu.Unlock()
	if len(continued) == 0 {
		t.Fatalf("the continuation never reached the model:\n%s", out)
	}
	if c := continued[0]; !strings.Contains(c.AllText, "SUCCESSOR-SAYS") || strings.Contains(c.AllText, "echo one") {
		t.Errorf("the continuation did not resume generation 2's session (its history is missing, or generation 1's is there)")
	}
	m, err = manifest.Load(runs[0])
	if err != nil {
		t.Fatal(err)
	}
	if st := m.Step("main"); st.Status != manifest.StatusSucceeded || len(st.Generations) != 2 || st.SessionID != g2.SessionID || len(st.Retired) != 1 {
		t.Errorf("after continue: status %s, %d generations, session %q (want %q), retired %q", st.Status, len(st.Generations), st.SessionID, g2.SessionID, st.Retired)
	}

	// The run's page, in headless chromium, as a headless run's (DESIGN.md «Run page»).
	page := pagecheck.Start(t).RunPage(t, r.flower, filepath.Dir(runs[0]), "zh", filepath.Join(t.ArtifactDir(), "interactive.png"))
	if n := page.Count("svg.chart .mark.handoff"); n != 1 {
		t.Errorf("%d handoff marks on the interactive run's chart, want 1", n)
	}
}

// TestInteractiveSignalRestoresTerminal: SIGTERM to flower while the
// harness owns the terminal ends the run and gives the terminal back.
func TestInteractiveSignalRestoresTerminal(t *testing.T) {
	t.Parallel()
	srv := startServer(t, scriptedapi.Harmless)
	r := interactiveRun{srv: srv, workspace: t.TempDir(), home: t.TempDir(), flower: buildFlower(t), harness: harnessPath(t)}
	seedHarnessHome(t, r.home, r.workspace, scriptedapi.APIKey)
	p := startPane(t, r)
	p.harnessUp(r.home)
	if mode := p.ttyMode(); !rawMode(mode) {
		t.Fatalf("the terminal is not raw while the harness runs:\n%s", mode)
	}
	// flower stop sends the SIGTERM, to the step lock's holder: the
	// interactive flower in the pane. No prompt was typed, so the session
	// holds nothing to resume and no continue line is due (the mid-turn
	// test checks that one).
	stop := exec.Command(r.flower, "stop", "-C", r.workspace)
	if out, err := stop.CombinedOutput(); err != nil || !strings.Contains(string(out), fmt.Sprintf("flower pid %d", p.flowerPID())) ||
		!strings.Contains(string(out), "stopped (interrupted)") {
		t.Fatalf("flower stop: %v\n%s", err, out)
	}
	p.waitText("TTY-", 2*waitLimit) // the line after FLOWER-EXIT: both are on screen then
	screen := p.capture()
	if !strings.Contains(screen, "FLOWER-EXIT=130") || !strings.Contains(screen, "TTY-RESTORED") {
		t.Errorf("want exit 130 and the terminal restored")
	}
	st := onlyStep(t, r.workspace)
	if st.Status != manifest.StatusInterrupted {
		t.Errorf("status %s, want interrupted; errors %q", st.Status, st.Errors)
	}
	// The harness went with flower.
	p.waitFor("the harness to exit", waitLimit, func() bool {
		m, _ := filepath.Glob(filepath.Join(r.home, ".claude", "sessions", "*.json"))
		return len(m) == 0
	})
}

// TestInteractiveHarnessErrorRestoresTerminal: a harness that fails while
// the terminal is raw makes flower fail, with the terminal restored.
func TestInteractiveHarnessErrorRestoresTerminal(t *testing.T) {
	t.Parallel()
	srv := startServer(t, scriptedapi.Harmless)
	broken := filepath.Join(t.TempDir(), "claude")
	// Long enough to be seen running with the terminal raw, then a crash.
	if err := os.WriteFile(broken, []byte("#!/bin/sh\necho starting\nsleep 3\necho 'claude: broken' >&2\nexit 3\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	r := interactiveRun{srv: srv, workspace: t.TempDir(), home: t.TempDir(), flower: buildFlower(t), harness: broken}
	p := startPane(t, r)
	p.waitText("starting", waitLimit)
	if mode := p.ttyMode(); !rawMode(mode) {
		t.Fatalf("the terminal is not raw while the harness runs:\n%s", mode)
	}
	p.waitText("TTY-", 2*waitLimit) // the line after FLOWER-EXIT: both are on screen then
	screen := p.capture()
	if !strings.Contains(screen, "FLOWER-EXIT=1") || !strings.Contains(screen, "TTY-RESTORED") {
		t.Errorf("want exit 1 and the terminal restored")
	}
	if st := onlyStep(t, r.workspace); st.Status != manifest.StatusFailed {
		t.Errorf("status %s, want failed; errors %q", st.Status, st.Errors)
	}
}

func onlyStep(t *testing.T, workspace string) *manifest.StepResult {
	t.Helper()
	runs := manifests(t, workspace)
	if len(runs) != 1 {
		t.Fatalf("manifests %q, want 1", runs)
	}
	m, err := manifest.Load(runs[0])
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Steps) != 1 {
		t.Fatalf("%d steps, want 1", len(m.Steps))
	}
	return m.Steps[0]
}

// manifests lists the run dirs' manifests (not the "latest" link).
func manifests(t *testing.T, workspace string) []string {
	t.Helper()
	all, err := filepath.Glob(filepath.Join(workspace, ".flower", "runs", "*", manifest.FileName))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, p := range all {
		if filepath.Base(filepath.Dir(p)) != "latest" {
			out = append(out, p)
		}
	}
	return out
}

// TestInteractiveSIGKILLLeavesNothing: flower killed with SIGKILL while the
// interactive harness runs a tool. The tool runs in a session of its own
// (the harness does that with Bash, and the tool calls setsid again) with
// its environment cleared, out of reach of the harness's group, of
// Pdeathsig and of any tag; the guard must still take it, within seconds
// (DESIGN.md «Signals and orphans»).
func TestInteractiveSIGKILLLeavesNothing(t *testing.T) {
	t.Parallel()
	const marker = "timeout 97 tail -f /dev/null"
	srv := startServer(t, func(r *scriptedapi.Request) scriptedapi.Reply {
		if r.Kind == scriptedapi.KindMain && len(r.LastToolResults) == 0 {
			return scriptedapi.Reply{Text: "waiting", Usage: scriptedapi.Usage{InputTokens: 20_000},
				ToolUses: []scriptedapi.ToolUse{{Name: "Bash", Input: map[string]any{"command": "setsid env -i " + marker, "description": "wait"}}}}
		}
		return scriptedapi.Harmless(r)
	})
	r := interactiveRun{srv: srv, workspace: t.TempDir(), home: t.TempDir(), flower: buildFlower(t), harness: harnessPath(t),
		args: []string{"--", "--permission-mode", "dontAsk", "--allowedTools", "Bash"}}
	seedHarnessHome(t, r.home, r.workspace, scriptedapi.APIKey)
	p := startPane(t, r)
	p.harnessUp(r.home)
	p.keys("start the long tool")
	time.Sleep(300 * time.Millisecond)
	p.press("Enter")
	var tool []int
	p.waitFor("the tool to run", waitLimit, func() bool { tool = pidsWithCmdline(marker); return len(tool) > 0 })
	if err := syscall.Kill(p.flowerPID(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	p.waitFor("the tool to go with flower", 10*time.Second, func() bool { return len(pidsWithCmdline(marker)) == 0 })
	t.Logf("the tool (pids %v) was gone %v after flower's SIGKILL", tool, time.Since(start))
}

// pidsWithCmdline lists the live (not zombie) processes whose command line
// contains s.
func pidsWithCmdline(s string) []int {
	var pids []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmd, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil || !strings.Contains(strings.ReplaceAll(string(cmd), "\x00", " "), s) {
			continue
		}
		if st, err := os.ReadFile("/proc/" + e.Name() + "/stat"); err == nil {
			if i := strings.LastIndexByte(string(st), ')'); i > 0 && strings.HasPrefix(strings.TrimSpace(string(st[i+1:])), "Z") {
				continue
			}
		}
		pids = append(pids, pid)
	}
	return pids
}

// TestInteractiveSignalMidTurn: SIGTERM to flower (flower stop sends it)
// while the harness runs a tool ends the turn at the boundary, and the harness then exits on its own
// (DESIGN.md «Signals and orphans»), rather than after the grace periods
// at flower's hand.
func TestInteractiveSignalMidTurn(t *testing.T) {
	t.Parallel()
	const tool = "timeout 93 tail -f /dev/null"
	srv := startServer(t, func(r *scriptedapi.Request) scriptedapi.Reply {
		if r.Kind == scriptedapi.KindMain && len(r.LastToolResults) == 0 {
			return bash(20_000, tool)
		}
		return scriptedapi.Harmless(r)
	})
	r := interactiveRun{srv: srv, workspace: t.TempDir(), home: t.TempDir(), flower: buildFlower(t), harness: harnessPath(t),
		args: []string{"--", "--permission-mode", "dontAsk", "--allowedTools", "Bash"}}
	seedHarnessHome(t, r.home, r.workspace, scriptedapi.APIKey)
	p := startPane(t, r)
	p.harnessUp(r.home)
	p.keys("start the long tool")
	time.Sleep(300 * time.Millisecond)
	p.press("Enter")
	p.waitFor("the tool to run", waitLimit, func() bool { return len(pidsWithCmdline(tool)) > 0 })
	// The session is known once the front has found the harness's
	// transcript; a loaded machine may run the tool before that.
	p.waitFor("the session to be known", waitLimit, func() bool {
		runs, _ := filepath.Glob(filepath.Join(r.workspace, ".flower", "runs", "2*", manifest.FileName))
		if len(runs) != 1 {
			return false
		}
		m, err := manifest.Load(runs[0])
		return err == nil && len(m.Steps) == 1 && m.Steps[0].SessionID != ""
	})
	// flower stop sends the SIGTERM, to the step lock's holder: the
	// interactive flower in the pane. No prompt was typed, so the session
	// holds nothing to resume and no continue line is due (the mid-turn
	// test checks that one).
	stop := exec.Command(r.flower, "stop", "-C", r.workspace)
	if out, err := stop.CombinedOutput(); err != nil || !strings.Contains(string(out), fmt.Sprintf("flower pid %d", p.flowerPID())) ||
		!strings.Contains(string(out), "stopped (interrupted)") {
		t.Fatalf("flower stop: %v\n%s", err, out)
	}
	p.waitText("TTY-", 2*waitLimit)
	if screen := p.capture(); !strings.Contains(screen, "FLOWER-EXIT=130") || !strings.Contains(screen, "TTY-RESTORED") {
		t.Errorf("want exit 130 and the terminal restored")
	}
	st := onlyStep(t, r.workspace)
	if st.Status != manifest.StatusInterrupted || st.SessionID == "" {
		t.Errorf("status %s, session %q: want interrupted with its session", st.Status, st.SessionID)
	}
	log, err := os.ReadFile(filepath.Join(filepath.Dir(manifests(t, r.workspace)[0]), "flower.log"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(log), "the harness did not exit after the interrupt") {
		t.Errorf("flower had to stop the harness: it did not exit on its own after the turn")
	}
}

// numberedLine is a line as the harness's Read tool renders a file: its
// number, a tab, the text.
var numberedLine = regexp.MustCompile(`(?m)^ *\d+\t`)

// unnumbered is text with the Read rendering's line numbers taken off, so
// that a file the harness attached reads as it is on disk.
func unnumbered(text string) string { return numberedLine.ReplaceAllString(text, "") }
