package integration_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flowerhq/flower/handoffwriter"
	"github.com/flowerhq/flower/scriptedapi"
)

// statusLineScript grows the context turn by turn: 60K, then 155K (past
// the handoff threshold at the turn's end), the handoff, then 20K and 40K
// in generation 2.
type statusLineScript struct {
	mu      sync.Mutex
	writing int
}

func (s *statusLineScript) reply(r *scriptedapi.Request) scriptedapi.Reply {
	if r.Kind != scriptedapi.KindMain {
		return scriptedapi.Harmless(r)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch text := r.LastUserText; {
	case strings.Contains(text, handoffwriter.PromptTag):
		s.writing++
		return goodHandoff(0)
	case strings.Contains(text, "You are taking over"):
		return scriptedapi.Reply{Text: "SUCCESSOR-SAYS hello", Usage: usage(20_000)}
	case strings.Contains(text, "GROW-ONE"):
		return scriptedapi.Reply{Text: "ONE-DONE", Usage: usage(60_000)}
	case strings.Contains(text, "GROW-TWO"):
		return scriptedapi.Reply{Text: "TWO-DONE", Usage: usage(155_000)}
	case strings.Contains(text, "GROW-THREE"):
		return scriptedapi.Reply{Text: "THREE-DONE", Usage: usage(40_000)}
	}
	return scriptedapi.Harmless(r)
}

// belowInput reports whether the screen's last input box (the "❯" line
// between two rules) has a line with want under it, after the person's own
// status line (a line with theirs, unless "") and within the lines the
// harness shows there.
func belowInput(screen, want, theirs string) bool {
	lines := strings.Split(screen, "\n")
	prompt := -1
	for i, l := range lines {
		if strings.HasPrefix(l, "❯") {
			prompt = i
		}
	}
	if prompt < 1 || prompt+2 >= len(lines) || !strings.HasPrefix(lines[prompt-1], "───") {
		return false
	}
	rule := prompt + 1
	for rule < len(lines) && !strings.HasPrefix(lines[rule], "───") {
		rule++ // a multi-line input
	}
	for i := rule + 1; i < len(lines) && i <= rule+4; i++ {
		if strings.Contains(lines[i], want) {
			return strings.Contains(strings.Join(lines[rule+1:i], "\n"), theirs)
		}
	}
	return false
}

// TestStatusLineUnderTmux: flower's segment shows on the harness's own
// status line under the input box, after the person's own status line,
// live as the context grows, in generation 1 and again in generation 2,
// where it first announces the handoff and its file.
func TestStatusLineUnderTmux(t *testing.T) {
	t.Parallel()
	script := &statusLineScript{}
	srv := startServer(t, script.reply)
	r := interactiveRun{srv: srv, workspace: t.TempDir(), home: t.TempDir(), flower: buildFlower(t), harness: harnessPath(t),
		args: []string{"--lang", "zh", "--window", "200000", "--max-budget-usd", "5", "--", "--permission-mode", "dontAsk"}}
	seedHarnessHome(t, r.home, r.workspace, scriptedapi.APIKey)
	// The person's own status line, in their user settings.
	if err := os.MkdirAll(filepath.Join(r.home, ".claude"), 0o755); err != nil {
		t.Fatal(err)
	}
	own := `{"statusLine":{"type":"command","command":"grep -q session_id && echo THEIRS-LINE"}}`
	if err := os.WriteFile(filepath.Join(r.home, ".claude", "settings.json"), []byte(own), 0o600); err != nil {
		t.Fatal(err)
	}
	p := startPane(t, r)
	t.Cleanup(func() { // what flower wrote, should the screen not show it
		if !t.Failed() {
			return
		}
		m, _ := filepath.Glob(filepath.Join(r.workspace, ".flower", "runs", "*", "statusline.json"))
		for _, f := range m {
			b, _ := os.ReadFile(f)
			t.Logf("%s: %s", f, b)
			lb, _ := os.ReadFile(filepath.Join(filepath.Dir(f), "flower.log"))
			for _, l := range strings.Split(string(lb), "\n") {
				if strings.Contains(l, `"msg":"event"`) && !strings.Contains(l, `"kind":"text"`) {
					t.Logf("log: %s", l)
				}
			}
		}
	})
	p.harnessUp(r.home)
	seen := func(what, want string) {
		t.Helper()
		p.waitFor(what+" under the input box", waitLimit, func() bool { return belowInput(p.tmux("capture-pane", "-p", "-t", "it"), want, "THEIRS-LINE") })
	}
	prompt := func(text string) {
		p.keys(text)
		time.Sleep(300 * time.Millisecond)
		p.press("Enter")
	}

	seen("generation 1 starting", "flower · 第 1 代 · 启动中 · $0.00 · 预算 $5.00")
	prompt("GROW-ONE")
	p.waitText("ONE-DONE", waitLimit)
	seen("generation 1's meter", "flower · 第 1 代 · 上下文 60.0K/200K · 还有约 90K 到换代 · 本轮完成 · $")
	prompt("GROW-TWO")
	// While flower cuts and types the handoff prompt (its Ctrl-C makes
	// the harness flash "Press Ctrl-C again to exit"), its line says why.
	writing := false
	p.waitFor("the successor", 2*waitLimit, func() bool {
		screen := p.capture()
		writing = writing || belowInput(p.tmux("capture-pane", "-p", "-t", "it"), "flower · 第 1 代 · 上下文 155.0K/200K · 写交接中", "THEIRS-LINE")
		return strings.Contains(screen, "SUCCESSOR-SAYS")
	})
	if !writing {
		t.Errorf("the status line never said the handoff was being written")
	}
	seen("the handoff's announcement", "<- 第 1 代已交接,交接写在 .flower/notes/交接-main.md · 在做:Generation 1 was adding")
	seen("generation 2's meter", "flower · 第 2 代 · 上下文 20.0K/200K · 还有约 130K 到换代 · 本轮完成 · $")
	prompt("GROW-THREE")
	p.waitText("THREE-DONE", waitLimit)
	seen("generation 2's meter, grown", "flower · 第 2 代 · 上下文 40.0K/200K · 还有约 110K 到换代 · 本轮完成 · $")
	p.waitFor("the announcement to go", 2*waitLimit, func() bool { return !strings.Contains(p.tmux("capture-pane", "-p", "-t", "it"), "已交接") })

	p.press("C-u")
	p.keys("/exit")
	time.Sleep(500 * time.Millisecond)
	p.press("Enter")
	p.waitText("TTY-", 2*waitLimit)
	if screen := p.capture(); !strings.Contains(screen, "FLOWER-EXIT=0") {
		t.Errorf("flower did not end cleanly")
	}
	if script.writing != 1 {
		t.Errorf("%d writing turns, want 1", script.writing)
	}
}

// meterOnScreen finds flower's meter under the input box: generation and
// context.
var meterOnScreen = regexp.MustCompile(`flower · 第 (\d) 代 · 上下文 ([\d.]+K)/200K`)

// TestDemoInteractive: `flower demo -i` plays the scripted demo in the
// real harness's own screen, with no key: flower's meter under the input
// box, live in each generation, both handoffs announced there, and the
// story checked at the end as `flower demo` checks it.
func TestDemoInteractive(t *testing.T) {
	t.Parallel()
	r := interactiveRun{workspace: t.TempDir(), home: t.TempDir()}
	r.argv = []string{buildFlower(t), "demo", "-i", "--lang", "zh", "--clean", "--harness", harnessPath(t)}
	p := startPane(t, r)
	figures := map[string]map[string]bool{} // generation → the context figures seen
	announced := map[string]bool{}
	deadline := time.Now().Add(4 * waitLimit)
	for !strings.Contains(p.tmux("capture-pane", "-p", "-t", "it"), "Done. wordfreq.sh") {
		if time.Now().After(deadline) {
			t.Fatalf("the demo did not finish within %v; figures seen %v", 4*waitLimit, figures)
		}
		screen := p.tmux("capture-pane", "-p", "-t", "it")
		for _, m := range meterOnScreen.FindAllStringSubmatch(screen, -1) {
			if belowInput(screen, m[0], "") {
				if figures[m[1]] == nil {
					figures[m[1]] = map[string]bool{}
				}
				figures[m[1]][m[2]] = true
			}
		}
		for _, gen := range []string{"1", "2"} {
			want := fmt.Sprintf("<- 第 %s 代已交接,交接写在 .flower/notes/交接-demo.md · 在做:", gen)
			announced[gen] = announced[gen] || belowInput(screen, want, "")
		}
		time.Sleep(100 * time.Millisecond)
	}
	for _, gen := range []string{"1", "2", "3"} {
		if len(figures[gen]) < 2 {
			t.Errorf("generation %s: context figures %v under the input box, want it to move", gen, figures[gen])
		}
	}
	if !announced["1"] || !announced["2"] {
		t.Errorf("handoffs announced on the status line: %v, want generations 1 and 2", announced)
	}
	p.keys("/exit")
	time.Sleep(500 * time.Millisecond)
	p.press("Enter")
	p.waitText("TTY-", 2*waitLimit)
	screen := p.capture()
	for _, want := range []string{"flower demo -i: 3 sessions, 2 handoffs", "FLOWER-EXIT=0", "TTY-RESTORED", "(--clean)"} {
		if !strings.Contains(screen, want) {
			t.Errorf("the screen after the demo lacks %q", want)
		}
	}
}
