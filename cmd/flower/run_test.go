package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/flowerhq/flower/manifest"
	"github.com/flowerhq/flower/scriptedapi"
	"github.com/flowerhq/flower/workbench"
)

// Bad input: one clear line on stderr, exit 2, and no harness started.
func TestRunUsageErrors(t *testing.T) {
	ws := t.TempDir()
	task := filepath.Join(ws, "task.md")
	if err := os.WriteFile(task, []byte("do it"), 0o644); err != nil {
		t.Fatal(err)
	}
	harness := os.Args[0] // never started: each case fails before
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"unknown flag", []string{"--bogus", "x"}, "unknown flag --bogus (see flower --help)"},
		{"two tasks", []string{"a", "b"}, "harness arguments go after --"},
		{"task and file", []string{"-f", task, "x"}, "not both"},
		{"unreadable task file", []string{"-f", filepath.Join(ws, "missing.md")}, "missing.md"},
		{"empty task", []string{"   "}, "the task is empty"},
		{"bad compact", []string{"--compact", "sometimes", "x"}, "sometimes"},
		{"bad lang", []string{"--lang", "fr", "x"}, "fr"},
		{"negative window", []string{"--window", "-5", "x"}, "--window must be at least 1, got -5"},
		{"zero window", []string{"--window", "0", "x"}, "--window must be at least 1, got 0 (leave it out"},
		{"zero headroom", []string{"--headroom", "0", "x"}, "--headroom must be at least 1, got 0"},
		{"negative headroom", []string{"--headroom", "-1", "x"}, "--headroom must be at least 1, got -1"},
		{"zero max generations", []string{"--max-generations", "0", "x"}, "--max-generations must be at least 1"},
		{"zero max attempts", []string{"--max-attempts", "0", "x"}, "--max-attempts must be at least 1"},
		{"negative task carry", []string{"--task-carry", "-1", "x"}, "--task-carry must not be negative"},
		{"negative turn timeout", []string{"--turn-timeout", "-5s", "x"}, "--turn-timeout must not be negative, got -5s"},
		{"missing harness", []string{"--harness", "/nonexistent/claude", "x"}, "/nonexistent/claude"},
		{"workspace is a file", []string{"-C", task, "x"}, "is not a directory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"flower", "-C", ws, "--harness", harness}, tt.args...)
			if tt.name == "workspace is a file" || tt.name == "missing harness" {
				args = append([]string{"flower"}, tt.args...)
			}
			var stdout, stderr strings.Builder
			err := run(context.Background(), args, strings.NewReader(""), &stdout, &stderr)
			if code := exitCode(err); code != exitUsage {
				t.Fatalf("exit %d (%v), want %d", code, err, exitUsage)
			}
			if msg := err.Error(); !strings.Contains(msg, tt.want) || strings.Contains(msg, "\n") {
				t.Errorf("error %q: want one line containing %q", msg, tt.want)
			}
			if _, err := os.Stat(filepath.Join(ws, ".flower", "runs")); err == nil {
				t.Errorf("a run dir was made for a bad invocation")
			}
		})
	}
}

func TestSplitHarnessArgs(t *testing.T) {
	own, h := splitHarnessArgs([]string{"flower", "--window", "2", "task", "--", "--allowedTools", "Bash", "--", "x"})
	if strings.Join(own, " ") != "flower --window 2 task" || strings.Join(h, " ") != "--allowedTools Bash -- x" {
		t.Errorf("split %q / %q", own, h)
	}
	own, h = splitHarnessArgs([]string{"flower", "task"})
	if len(own) != 2 || h != nil {
		t.Errorf("no --: %q / %q", own, h)
	}
}

var (
	buildOnce sync.Once
	builtBin  string
	buildErr  error
)

// flowerBinary builds cmd/flower once per test run: these tests run flower as
// a person does, a process of its own with its own environment.
func flowerBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "flower-bin-")
		if err != nil {
			buildErr = err
			return
		}
		builtBin = filepath.Join(dir, "flower")
		out, err := exec.Command("go", "build", "-o", builtBin, ".").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return builtBin
}

// realHarness finds the pinned harness the Makefile installs.
func realHarness(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("needs the real harness: make test runs this, make unit does not")
	}
	if p := os.Getenv("FLOWER_HARNESS"); p != "" {
		return p
	}
	if p := cachedHarness(); isExecutable(p) {
		return p
	}
	t.Fatalf("no harness at %s: run `make test` (it installs the pinned harness) or set FLOWER_HARNESS", cachedHarness())
	return ""
}

// cliEnv is a clean environment for a flower process against the scripted
// server: nothing inherited that could reach a real API.
func cliEnv(t *testing.T, srv *scriptedapi.Server, extra ...string) []string {
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "TMPDIR=" + os.TempDir(), "FLOWER_HARNESS=" + realHarness(t)}
	env = append(env, srv.Env()...)
	return append(env, extra...)
}

// The whole CLI on the real harness: harness arguments after -- reach it
// (Write is allowed, so the file is really written), the handoff shows as the
// status lines, -v masks the key, and the exit code is 0.
func TestCLIEndToEnd(t *testing.T) {
	t.Parallel()
	const secret = "sk-ant-api03-SUPERSECRETVALUE-0123456789"
	ws := t.TempDir()
	var mu sync.Mutex
	gen, i := 0, 0
	srv, err := scriptedapi.Start(func(r *scriptedapi.Request) scriptedapi.Reply {
		if r.Kind != scriptedapi.KindMain {
			return scriptedapi.Harmless(r)
		}
		mu.Lock()
		defer mu.Unlock()
		u := func(n int) scriptedapi.Usage {
			return scriptedapi.Usage{InputTokens: 100, CacheReadInputTokens: n - 100}
		}
		switch {
		case strings.Contains(r.LastUserText, "<<flower:handoff-request>>"):
			gen, i = 1, 0
			return scriptedapi.Reply{Usage: u(156_000), Text: "## 现在在做 (doing)\nWriting notes.txt.\n\n## 下一步 (next)\nCheck notes.txt exists.\n"}
		case gen == 0 && i == 0:
			i++
			return scriptedapi.Reply{Usage: u(100_000), Text: "Writing the notes.", ToolUses: []scriptedapi.ToolUse{{Name: "Write",
				Input: map[string]any{"file_path": filepath.Join(ws, "notes.txt"), "content": "written through --allowedTools\n"}}}}
		case gen == 0:
			return scriptedapi.Reply{Usage: u(155_000), Text: "More.", ToolUses: []scriptedapi.ToolUse{{Name: "Write",
				Input: map[string]any{"file_path": filepath.Join(ws, "more.txt"), "content": "more\n"}}}}
		default:
			return scriptedapi.Reply{Usage: u(30_000), Text: "Done: notes.txt is there."}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	cmd := exec.Command(flowerBinary(t), "-v", "--lang", "zh", "-C", ws, "--window", "200000", "Write the notes.", "--", "--allowedTools", "Write")
	cmd.Env = cliEnv(t, srv, "ANTHROPIC_API_KEY="+secret)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("flower: %v\nstderr:\n%s", err, stderr.String())
	}
	if b, err := os.ReadFile(filepath.Join(ws, "notes.txt")); err != nil || !strings.Contains(string(b), "--allowedTools") {
		t.Errorf("notes.txt: %q, %v: the harness arguments after -- did not reach the harness", b, err)
	}
	errOut := stderr.String()
	for _, want := range []string{
		"# 上下文 155.0K/200K —— 写交接准备换代",
		"  - 现在在做  Writing notes.txt.",
		"  - 下一步    Check notes.txt exists.",
		"<- 交接写在 " + filepath.Join(ws, ".flower", "notes", "交接-main.md"),
		"<- 新会话接手,上下文从 155.0K 重新开始",
		"sk-a", // -v shows the key's first four characters
	} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
	for _, out := range []string{stdout.String(), errOut} {
		if strings.Contains(out, "SUPERSECRET") {
			t.Errorf("the API key leaked:\n%s", out)
		}
	}
	if !strings.Contains(stdout.String(), "Done: notes.txt is there.") {
		t.Errorf("stdout lacks the assistant's text:\n%s", stdout.String())
	}
	// The run's files: the latest link, the manifest, the log without the key.
	runDir, err := filepath.EvalSymlinks(filepath.Join(ws, ".flower", "runs", "latest"))
	if err != nil {
		t.Fatal(err)
	}
	m, err := manifest.Load(manifest.Path(runDir))
	if err != nil {
		t.Fatal(err)
	}
	if st := m.Step("main"); st == nil || st.Status != manifest.StatusSucceeded || len(st.Generations) != 2 {
		t.Fatalf("manifest step: %+v", st)
	}
	for _, name := range []string{"flower.log", "manifest.json"} {
		b, _ := os.ReadFile(filepath.Join(runDir, name))
		if len(b) == 0 || strings.Contains(string(b), "SUPERSECRET") {
			t.Errorf("%s is empty or holds the key", name)
		}
	}
	// Every record of a run with a handoff, each key once.
	b, _ := os.ReadFile(filepath.Join(runDir, "flower.log"))
	logKeysOnce(t, b)
}

// generationLimitServer is a scripted model whose sessions each climb past
// a 30000-token window's threshold in their second round and write a good
// handoff when asked: with --max-generations 2, the limit stops the run.
func generationLimitServer(t *testing.T) *scriptedapi.Server {
	t.Helper()
	var mu sync.Mutex
	round := 0
	srv, err := scriptedapi.Start(func(r *scriptedapi.Request) scriptedapi.Reply {
		if r.Kind != scriptedapi.KindMain {
			return scriptedapi.Harmless(r)
		}
		mu.Lock()
		defer mu.Unlock()
		if strings.Contains(r.LastUserText, "<<flower:handoff-request>>") {
			round = 0
			return scriptedapi.Reply{Usage: scriptedapi.Usage{InputTokens: 21_000}, Text: "## doing\nLooping.\n\n## next\nLoop again.\n"}
		}
		round++
		n := 5_000
		if round > 1 {
			n = 20_000
		}
		return scriptedapi.Reply{Usage: scriptedapi.Usage{InputTokens: n}, Text: "step", ToolUses: []scriptedapi.ToolUse{{Name: "Bash", Input: map[string]any{"command": "true", "description": "x"}}}}
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return srv
}

// Exit code 3 and the runaway guard's message when the generation limit stops a run.
func TestCLIGenerationLimitExitCode(t *testing.T) {
	t.Parallel()
	srv := generationLimitServer(t)
	cmd := exec.Command(flowerBinary(t), "-q", "-C", t.TempDir(), "--window", "30000", "--max-generations", "2", "Loop forever.", "--", "--allowedTools", "Bash")
	cmd.Env = cliEnv(t, srv)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != exitLimit {
		t.Fatalf("exit %v, want %d\n%s", err, exitLimit, stderr.String())
	}
	if !strings.Contains(stderr.String(), "start-up floor") || !strings.Contains(stderr.String(), "--no-handoff") {
		t.Errorf("stderr lacks the runaway guard's advice:\n%s", stderr.String())
	}
}

// continue and rerun supervise headless; -i there is refused, not ignored.
func TestContinueAndRerunRefuseInteractive(t *testing.T) {
	for _, cmd := range []string{"continue", "rerun"} {
		var stdout, stderr strings.Builder
		err := run(context.Background(), []string{"flower", cmd, "-i", "-C", t.TempDir()}, strings.NewReader(""), &stdout, &stderr)
		if exitCode(err) != exitUsage || !strings.Contains(err.Error(), "runs headless") {
			t.Errorf("%s -i: %v", cmd, err)
		}
	}
}

// DESIGN.md «Input caps»: a task over its cap is refused before anything
// runs, one near it is warned of, and -f reads only a regular file.
func TestTaskCap(t *testing.T) {
	ctx := context.Background()
	ws := t.TempDir()
	missing := filepath.Join(t.TempDir(), "no-harness")
	_, _, err := runInProcess(ctx, "run", "-C", ws, "--harness", missing, strings.Repeat("x", workbench.MaxTask+1))
	if exitCode(err) != exitUsage || !strings.Contains(err.Error(), "over 1 MiB, the cap for a task") {
		t.Errorf("a task over the cap: exit %d, %v", exitCode(err), err)
	}
	if _, err := os.Stat(filepath.Join(ws, ".flower")); err == nil {
		t.Errorf("a refused task made the workbench")
	}
	_, stderr, _ := runInProcess(ctx, "run", "-C", ws, "--harness", missing, strings.Repeat("x", workbench.MaxTask/4*3))
	if !strings.Contains(stderr, "near the cap of 1 MiB for a task") {
		t.Errorf("no warning near the cap:\n%s", stderr)
	}
	big := filepath.Join(t.TempDir(), "task.md")
	if err := os.WriteFile(big, make([]byte, 3<<19), 0o644); err != nil {
		t.Fatal(err)
	}
	_, _, err = runInProcess(ctx, "run", "-C", ws, "--harness", missing, "-f", big)
	if exitCode(err) != exitUsage || !strings.Contains(err.Error(), "over 1 MiB, the cap for a task") {
		t.Errorf("-f with a 1.5 MiB file: exit %d, %v", exitCode(err), err)
	}
	_, _, err = runInProcess(ctx, "run", "-C", ws, "--harness", missing, "-f", "/dev/zero")
	if exitCode(err) != exitUsage || !strings.Contains(err.Error(), "/dev/zero is not a regular file") {
		t.Errorf("-f /dev/zero: exit %d, %v", exitCode(err), err)
	}
}
