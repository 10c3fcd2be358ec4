package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flowerhq/flower/demo"
	"github.com/flowerhq/flower/handoff"
	"github.com/flowerhq/flower/handoffwriter"
	"github.com/flowerhq/flower/integration/itest"
	"github.com/flowerhq/flower/interactive"
	"github.com/flowerhq/flower/manifest"
	"github.com/flowerhq/flower/registry"
)

// demoScreenLines are the status lines the demo must show, each at least twice
// (once per handoff). scripts/demo-tmux.sh checks the same patterns.
var demoScreenLines = []string{
	`(?m)^# 上下文 .*K/200K · 还有约 .*K 到换代$`,
	`(?m)^# 上下文 .*K/200K —— 写交接准备换代$`,
	`(?m)^  - 现在在做  \S`,
	`(?m)^  - 已定的事  \S`,
	`(?m)^  - 走不通的  \S`,
	`(?m)^  - 下一步    \S`,
	`(?m)^<- 交接写在 .*交接-demo\.md$`,
	`(?m)^<- 新会话接手,上下文从 .*K 重新开始$`,
}

// runDemo runs `flower demo ARGS` in-process. HOME is an empty directory
// that must stay empty, and the environment carries credentials and a
// Bedrock switch the demo must not pass on (with Bedrock on, the harness
// would not talk to the scripted model at all).
func runDemo(t *testing.T, args ...string) (stdout, stderr string, home string, err error) {
	t.Helper()
	t.Setenv("FLOWER_HARNESS", realHarness(t))
	home = t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("TMPDIR", t.TempDir())
	t.Setenv("ANTHROPIC_AUTH_TOKEN", "canary-token-must-not-travel")
	t.Setenv("CLAUDE_CODE_USE_BEDROCK", "1")
	// The labels follow the locale: Chinese here, unless --lang says otherwise.
	t.Setenv("LC_ALL", "")
	t.Setenv("LC_MESSAGES", "")
	t.Setenv("LANG", "zh_CN.UTF-8")
	var out, errOut bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	err = run(ctx, append([]string{"flower", "demo"}, args...), strings.NewReader(""), &out, &errOut)
	return out.String(), errOut.String(), home, err
}

// TestDemo runs the demo and checks its story; flower ps lists it while it
// runs, and flower show names where each generation's handoff is now.
func TestDemo(t *testing.T) {
	start := time.Now()
	listed := watchRegistry(t)
	stdout, stderr, home, err := runDemo(t, "--pace", "0")
	t.Logf("demo took %v", time.Since(start))
	if err != nil {
		t.Fatalf("demo: %v\nstderr:\n%s", err, stderr)
	}
	for _, pat := range demoScreenLines {
		if n := len(regexp.MustCompile(pat).FindAllString(stderr, -1)); n < 2 {
			t.Errorf("stderr matches %s %d times, want at least 2", pat, n)
		}
	}
	m := regexp.MustCompile(`(?m)^workspace: (\S+) \(kept; remove it with rm -rf (\S+)\)$`).FindStringSubmatch(stderr)
	if m == nil {
		t.Fatalf("no workspace line in stderr:\n%s", stderr)
	}
	ws, root := m[1], m[2]
	if !strings.HasPrefix(ws, root+string(filepath.Separator)) {
		t.Errorf("the rm -rf hint %s does not hold the workspace %s", root, ws)
	}
	for _, f := range demo.Files {
		if _, err := os.Stat(filepath.Join(ws, f)); err != nil {
			t.Errorf("the agent's file: %v", err)
		}
	}
	if seen := listed(); !slices.Contains(seen, ws) {
		t.Errorf("flower ps listed %q while the demo ran, want its workspace %s", seen, ws)
	}
	if !strings.Contains(stderr, "flower demo: flower ps lists it while it runs") {
		t.Errorf("the demo does not say where to see it")
	}
	// The last generation ran the agent's own tests, and they passed.
	if out, err := exec.Command("sh", filepath.Join(ws, "test.sh")).CombinedOutput(); err != nil || !strings.Contains(string(out), "PASS") {
		t.Errorf("sh test.sh in the workspace: %v\n%s", err, out)
	}
	if !strings.Contains(stdout, "[Write]") || !strings.Contains(stdout, "PASS") {
		t.Errorf("stdout lacks the tool calls or the closing text:\n%s", stdout)
	}

	man, err := manifest.Load(filepath.Join(ws, ".flower", "runs", "latest", "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	st := man.Step(demo.Step)
	if st == nil {
		t.Fatalf("no step %q in the manifest", demo.Step)
	}
	if st.Status != manifest.StatusSucceeded || len(st.Generations) != 3 {
		t.Fatalf("step %s with %d generations, want succeeded with 3; errors: %q", st.Status, len(st.Generations), st.Errors)
	}
	for _, g := range st.Generations[:2] {
		h := g.Handoff
		if h == nil || h.Degraded || h.Context < 150_000 || h.Path == "" {
			t.Errorf("generation %d: handoff %+v, want a complete one past 150K with a file", g.N, h)
		}
	}
	if st.Generations[2].Handoff != nil {
		t.Errorf("the last generation handed off")
	}
	b, err := os.ReadFile(st.HandoffPath)
	if err != nil {
		t.Fatal(err)
	}
	if h := handoffwriter.Parse(string(b)); !h.Complete() || h.IsDegraded() {
		t.Errorf("the handoff on disk is not a complete one:\n%s", b)
	}
	checkShowFiles(t, ws, st)

	// The person's HOME is untouched and the canary credential went nowhere.
	if ents, err := os.ReadDir(home); err != nil || len(ents) != 0 {
		t.Errorf("HOME %s holds %d entries after the demo (%v), want none", home, len(ents), err)
	}
	_ = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if b, _ := os.ReadFile(p); bytes.Contains(b, []byte("canary-token")) {
				t.Errorf("%s holds the parent's credential", p)
			}
		}
		return nil
	})
}

func TestDemoClean(t *testing.T) {
	stdout, stderr, _, err := runDemo(t, "--pace", "0", "--clean", "--quiet", "--lang", "en")
	if err != nil {
		t.Fatalf("demo: %v\nstderr:\n%s", err, stderr)
	}
	if stdout != "" {
		t.Errorf("--quiet printed on stdout:\n%s", stdout)
	}
	if n := strings.Count(stderr, "<- handoff written to "); n != 2 {
		t.Errorf("%d English handoff lines, want 2:\n%s", n, stderr)
	}
	m := regexp.MustCompile(`(?m)^flower demo: removed (\S+) \(--clean\)$`).FindStringSubmatch(stderr)
	if m == nil {
		t.Fatalf("no removal line:\n%s", stderr)
	}
	if _, err := os.Stat(m[1]); !os.IsNotExist(err) {
		t.Errorf("%s still exists after --clean (%v)", m[1], err)
	}
	if strings.Contains(stderr, "kept; remove it") {
		t.Errorf("--clean still says the workspace was kept")
	}
}

// A demo that cannot start says why and leaves no directory behind.
func TestDemoUsageErrors(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	for _, args := range [][]string{{"extra"}, {"--pace", "-1s"}, {"--harness", filepath.Join(tmp, "no-such-claude")}} {
		var out, errOut bytes.Buffer
		err := run(context.Background(), append([]string{"flower", "demo"}, args...), strings.NewReader(""), &out, &errOut)
		if exitCode(err) != exitUsage {
			t.Errorf("demo %q: exit %d (%v), want %d", args, exitCode(err), err, exitUsage)
		}
		if ents, _ := os.ReadDir(tmp); len(ents) != 0 {
			t.Errorf("demo %q left %s behind", args, ents[0].Name())
		}
	}
}

// TestDemoUnderTmux is `make demo` as a person sees it: bin/flower demo, at
// its default pace, in a real terminal. scripts/demo-tmux.sh captures the
// screen and checks it holds the status lines twice each and the exit status 0.
// tmux is required: without it the demo's screen goes unchecked, so the test
// fails rather than skips.
func TestDemoUnderTmux(t *testing.T) {
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Fatal("tmux is required to check the demo's screen (apt-get install tmux)")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "flower")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	cmd := exec.Command(filepath.Join("..", "..", "scripts", "demo-tmux.sh"))
	// Under a Chinese locale, the design's own status lines.
	cmd.Env = append(os.Environ(), "FLOWER_BIN="+bin, "FLOWER_HARNESS="+realHarness(t), "TMPDIR="+dir, "DEMO_TMUX_TIMEOUT=150",
		"LC_ALL=", "LC_MESSAGES=", "LANG=zh_CN.UTF-8")
	start := time.Now()
	out, err := cmd.CombinedOutput()
	t.Logf("demo-tmux.sh took %v:\n%s", time.Since(start), out)
	if err != nil {
		t.Fatalf("demo-tmux.sh: %v", err)
	}
	if !strings.Contains(string(out), "labels: zh\n") {
		t.Errorf("the script did not check the Chinese labels")
	}
	if !strings.Contains(string(out), "ok   flower demo exited 0") {
		t.Errorf("the script passed without checking the exit status")
	}
}

// demo -i needs a terminal: without one it is refused as a usage error
// before anything is made on disk.
func TestDemoInteractiveNeedsTerminal(t *testing.T) {
	_, _, _, err := runDemo(t, "-i")
	if !errors.Is(err, interactive.ErrNotTerminal) || exitCode(err) != 2 {
		t.Fatalf("demo -i without a terminal: %v (exit %d), want a usage error", err, exitCode(err))
	}
	if left, _ := os.ReadDir(os.Getenv("TMPDIR")); len(left) > 0 {
		t.Errorf("demo -i left %d entries behind", len(left))
	}
}

// watchRegistry lists flower ps's registry every few milliseconds until
// the test ends; the function it returns gives the workspaces seen so far.
func watchRegistry(t *testing.T) func() []string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "ps")
	t.Setenv(registry.EnvDir, dir)
	var mu sync.Mutex
	var seen []string
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			entries, _ := registry.List(dir)
			mu.Lock()
			for _, e := range entries {
				if !slices.Contains(seen, e.Workspace) {
					seen = append(seen, e.Workspace)
				}
			}
			mu.Unlock()
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}()
	t.Cleanup(func() { close(stop); <-done })
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(seen)
	}
}

// checkShowFiles: flower show names, for each generation that handed off,
// the file that holds its handoff now: the archive for all but the last,
// each holding the document its successor launched from.
func checkShowFiles(t *testing.T, ws string, st *manifest.StepResult) {
	t.Helper()
	out, _, err := runInProcess(context.Background(), "show", "-C", ws)
	if err != nil {
		t.Fatal(err)
	}
	for i, g := range st.Generations[:2] {
		row := regexp.MustCompile(`(?m)^  ` + strconv.Itoa(g.N) + `  .*  (\S+)$`).FindStringSubmatch(out)
		if row == nil {
			t.Errorf("no row for generation %d in:\n%s", g.N, out)
			continue
		}
		file := row[1]
		archived := strings.HasPrefix(file, filepath.Join(".flower", "notes", "archive", "交接")+"/")
		if last := i == 1; archived == last {
			t.Errorf("generation %d's file %s: archived %v, want %v", g.N, file, archived, !last)
		}
		b, err := os.ReadFile(filepath.Join(ws, file))
		if err != nil || handoff.Digest(b) != g.Handoff.SHA256Launched {
			t.Errorf("generation %d's file %s does not hold what its successor launched from (%v)", g.N, file, err)
		}
	}
}

// The demo on the real Codex CLI (make codex's pinned copy): the same story
// against a scripted Responses API on 127.0.0.1, each tool a shell command;
// two whole handoffs, three sessions, the agent's tests pass, and neither
// the person's HOME nor their CODEX_HOME is touched, nor their key used.
func TestDemoOnCodex(t *testing.T) {
	codex := itest.CodexPath(t)
	person := t.TempDir()
	conf := filepath.Join(person, "config.toml")
	const theirs = "model = \"their-model\"\n"
	if err := os.WriteFile(conf, []byte(theirs), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("CODEX_HOME", person)
	t.Setenv("OPENAI_API_KEY", "canary-openai-key-must-not-travel")
	t.Setenv("FLOWER_PS_DIR", t.TempDir())
	stdout, stderr, home, err := runDemo(t, "--harness-kind", "codex", "--harness", codex, "--pace", "0", "--lang", "en")
	if err != nil {
		t.Fatalf("demo: %v\nstderr:\n%s", err, stderr)
	}
	if n := strings.Count(stderr, "<- handoff written to "); n != 2 {
		t.Errorf("%d handoff lines, want 2:\n%s", n, stderr)
	}
	m := regexp.MustCompile(`(?m)^workspace: (\S+) \(kept; remove it with rm -rf (\S+)\)$`).FindStringSubmatch(stderr)
	if m == nil {
		t.Fatalf("no workspace line in stderr:\n%s", stderr)
	}
	ws, root := m[1], m[2]
	if out, err := exec.Command("sh", filepath.Join(ws, "test.sh")).CombinedOutput(); err != nil || !strings.Contains(string(out), "PASS") {
		t.Errorf("sh test.sh in the workspace: %v\n%s", err, out)
	}
	if !strings.Contains(stdout, "[commandExecution]") || !strings.Contains(stdout, "PASS") {
		t.Errorf("stdout lacks the commands or the closing text:\n%s", stdout)
	}
	man, err := manifest.Load(filepath.Join(ws, ".flower", "runs", "latest", "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	st := man.Step(demo.Step)
	if st == nil || st.Status != manifest.StatusSucceeded || len(st.Generations) != 3 || man.HarnessKind != "codex" {
		t.Fatalf("step %+v (harness %q), want succeeded with 3 generations on codex", st, man.HarnessKind)
	}
	for i, g := range st.Generations {
		if h := g.Handoff; i < 2 && (h == nil || h.Degraded || h.Context < 150_000 || h.Path == "") {
			t.Errorf("generation %d: handoff %+v, want a complete one past 150K with a file", g.N, h)
		}
		if len(g.Compactions)+len(g.BlockedCompactions) != 0 {
			t.Errorf("generation %d: compactions recorded: %+v %+v", g.N, g.Compactions, g.BlockedCompactions)
		}
	}
	if ents, err := os.ReadDir(home); err != nil || len(ents) != 0 {
		t.Errorf("HOME %s holds %d entries after the demo (%v), want none", home, len(ents), err)
	}
	if b, _ := os.ReadFile(conf); string(b) != theirs {
		t.Errorf("the person's config.toml changed:\n%s", b)
	}
	if ents, _ := os.ReadDir(person); len(ents) != 1 {
		t.Errorf("the person's CODEX_HOME holds %d entries, want their config alone", len(ents))
	}
	_ = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if b, _ := os.ReadFile(p); bytes.Contains(b, []byte("canary-openai-key")) {
				t.Errorf("%s holds the parent's key", p)
			}
		}
		return nil
	})
}

// The demo on the real Gemini CLI (make gemini's pinned copy): the same
// story against a scripted Gemini API on 127.0.0.1; two whole handoffs,
// three sessions, the agent's tests pass, and neither the person's HOME nor
// their Gemini home is touched, nor their key used.
func TestDemoOnGemini(t *testing.T) {
	bin := itest.GeminiPath(t)
	person := t.TempDir()
	settings := filepath.Join(person, ".gemini", "settings.json")
	const theirs = `{"model":{"name":"their-model","compressionThreshold":0.1}}`
	if err := os.MkdirAll(filepath.Dir(settings), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(settings, []byte(theirs), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GEMINI_CLI_HOME", person)
	t.Setenv("GEMINI_API_KEY", "canary-gemini-key-must-not-travel")
	t.Setenv("FLOWER_PS_DIR", t.TempDir())
	stdout, stderr, _, err := runDemo(t, "--harness-kind", "gemini", "--harness", bin, "--pace", "0", "--lang", "en")
	if err != nil {
		t.Fatalf("demo: %v\nstderr:\n%s", err, stderr)
	}
	if n := strings.Count(stderr, "<- handoff written to "); n != 2 {
		t.Errorf("%d handoff lines, want 2:\n%s", n, stderr)
	}
	m := regexp.MustCompile(`(?m)^workspace: (\S+) \(kept; remove it with rm -rf (\S+)\)$`).FindStringSubmatch(stderr)
	if m == nil {
		t.Fatalf("no workspace line in stderr:\n%s", stderr)
	}
	ws, root := m[1], m[2]
	if out, err := exec.Command("sh", filepath.Join(ws, "test.sh")).CombinedOutput(); err != nil || !strings.Contains(string(out), "PASS") {
		t.Errorf("sh test.sh in the workspace: %v\n%s", err, out)
	}
	if !strings.Contains(stdout, "[execute]") || !strings.Contains(stdout, "PASS") {
		t.Errorf("stdout lacks the commands or the closing text:\n%s", stdout)
	}
	man, err := manifest.Load(filepath.Join(ws, ".flower", "runs", "latest", "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	st := man.Step(demo.Step)
	if st == nil || st.Status != manifest.StatusSucceeded || len(st.Generations) != 3 || man.HarnessKind != "gemini" {
		t.Fatalf("step %+v (harness %q), want succeeded with 3 generations on gemini", st, man.HarnessKind)
	}
	for i, g := range st.Generations {
		if h := g.Handoff; i < 2 && (h == nil || h.Degraded || h.Context < 150_000 || h.Path == "") {
			t.Errorf("generation %d: handoff %+v, want a complete one past 150K with a file", g.N, h)
		}
		if len(g.Compactions)+len(g.BlockedCompactions) != 0 {
			t.Errorf("generation %d: compactions recorded: %+v %+v", g.N, g.Compactions, g.BlockedCompactions)
		}
	}
	if b, _ := os.ReadFile(settings); string(b) != theirs {
		t.Errorf("the person's settings changed:\n%s", b)
	}
	if ents, _ := os.ReadDir(filepath.Join(person, ".gemini")); len(ents) != 1 {
		t.Errorf("the person's Gemini home holds %d entries, want their settings alone", len(ents))
	}
	_ = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if b, _ := os.ReadFile(p); bytes.Contains(b, []byte("canary-gemini-key")) {
				t.Errorf("%s holds the parent's key", p)
			}
		}
		return nil
	})
}
