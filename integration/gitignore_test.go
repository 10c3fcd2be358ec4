package integration_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/flowerhq/flower/manifest"
	"github.com/flowerhq/flower/scriptedapi"
)

// flower in a git working tree, as people run it: what it writes stays out
// of `git status`, so an agent's `git add -A` cannot commit it.

// gitWorkspace is an empty git repository.
func gitWorkspace(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatalf("these tests need git: %v", err)
	}
	ws := t.TempDir()
	if out, err := exec.Command("git", "init", "-q", ws).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v\n%s", err, out)
	}
	return ws
}

// gitStatus is `git status --porcelain` with every untracked file listed,
// sorted.
func gitStatus(t *testing.T, repo string) []string {
	t.Helper()
	out, err := exec.Command("git", "-C", repo, "-c", "core.quotepath=false", "status", "--porcelain", "-uall").CombinedOutput()
	if err != nil {
		t.Fatalf("git status: %v\n%s", err, out)
	}
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if l != "" {
			lines = append(lines, l)
		}
	}
	sort.Strings(lines)
	return lines
}

// threeGenerations runs flower on the real harness in ws: two handoffs, and
// the agent writes work.txt, a file of its own, in every generation.
func threeGenerations(t *testing.T, ws string, extra ...string) *manifest.StepResult {
	t.Helper()
	work := []scriptedapi.Reply{bash(100_000, "echo one >> work.txt"), bash(155_000, "echo two >> work.txt")}
	j := &job{plans: [][]scriptedapi.Reply{work, work, {bash(30_000, "echo three >> work.txt"), done(40_000)}}, handoff: goodHandoff}
	srv := startServer(t, j.script)
	env := harnessEnv(t, srv, "FLOWER_HARNESS="+harnessPath(t))
	args := append([]string{"-C", ws, "--window", "200000"}, extra...)
	code, out := runFlowerCLI(t, env, append(args, "TASK-MARK: do the work", "--", "--allowedTools", "Bash")...)
	if code != 0 {
		t.Fatalf("flower exited %d:\n%s", code, out)
	}
	m, err := manifest.Load(manifest.Path(filepath.Join(ws, ".flower", "runs", "latest")))
	if len(extra) > 0 {
		m, err = manifest.Load(manifest.Path(extra[len(extra)-1]))
	}
	if err != nil {
		t.Fatal(err)
	}
	st := m.Step("main")
	if st == nil || st.Status != manifest.StatusSucceeded || len(st.Generations) != 3 || len(st.Retired) != 2 {
		t.Fatalf("want a step that succeeded in 3 generations; got %+v", st)
	}
	return st
}

// After three generations git sees the agent's work and nothing of flower's:
// not the run's log, manifest or lock, not the handoffs or their archive.
func TestGitStatusShowsNothingOfFlower(t *testing.T) {
	t.Parallel()
	ws := gitWorkspace(t)
	st := threeGenerations(t, ws)
	if got := gitStatus(t, ws); len(got) != 1 || got[0] != "?? work.txt" {
		t.Errorf("git status %q, want only the agent's work.txt", got)
	}
	// The files are there all the same.
	for _, p := range []string{st.HandoffPath, filepath.Join(ws, ".flower", "runs", "latest", "flower.log")} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("flower's file: %v", err)
		}
	}
	archived, _ := filepath.Glob(filepath.Join(ws, ".flower", "notes", "archive", "交接", "main-*.md"))
	if len(archived) != 1 {
		t.Errorf("archive holds %d handoffs, want 1", len(archived))
	}
}

// A .flower/.gitignore the person wrote is theirs: flower leaves it byte for
// byte, and git follows it (here: runs ignored, handoffs kept).
func TestPersonsGitignoreLeftAlone(t *testing.T) {
	t.Parallel()
	ws := gitWorkspace(t)
	gi := filepath.Join(ws, ".flower", ".gitignore")
	if err := os.MkdirAll(filepath.Dir(gi), 0o755); err != nil {
		t.Fatal(err)
	}
	const mine = "# mine: keep the handoffs, not the runs\n/runs/\n"
	if err := os.WriteFile(gi, []byte(mine), 0o600); err != nil {
		t.Fatal(err)
	}
	threeGenerations(t, ws)
	b, err := os.ReadFile(gi)
	fi, serr := os.Stat(gi)
	if err != nil || serr != nil || string(b) != mine || fi.Mode().Perm() != 0o600 {
		t.Fatalf(".flower/.gitignore now %q (%v, %v), want the person's untouched", b, err, serr)
	}
	got := gitStatus(t, ws)
	want := []string{"?? .flower/.gitignore", "?? .flower/notes/archive/交接/", "?? .flower/notes/交接-main.md", "?? .flower/notes/任务-main.md", "?? work.txt"}
	if len(got) != len(want) {
		t.Fatalf("git status %q, want %q", got, want)
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("git status %q, want %q", got, want)
			break
		}
	}
}

// A run dir flower makes outside the workbench ignores itself too.
func TestRunDirOutsideWorkbenchIgnored(t *testing.T) {
	t.Parallel()
	ws := gitWorkspace(t)
	runDir := filepath.Join(ws, "flower-runs", "r1")
	threeGenerations(t, ws, "--run-dir", runDir)
	if got := gitStatus(t, ws); len(got) != 1 || got[0] != "?? work.txt" {
		t.Errorf("git status %q, want only the agent's work.txt", got)
	}
	if _, err := os.Stat(filepath.Join(runDir, "flower.log")); err != nil {
		t.Errorf("the run's log: %v", err)
	}
}
