package workbench

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// gitStatus is `git status --porcelain -uall` of repo, one entry a line.
func gitStatus(t *testing.T, repo string) string {
	t.Helper()
	out, err := exec.Command("git", "-C", repo, "-c", "core.quotepath=false", "status", "--porcelain", "-uall").CombinedOutput()
	if err != nil {
		t.Fatalf("git status: %v\n%s", err, out)
	}
	return strings.TrimSpace(string(out))
}

func gitRepo(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed: the ignore rules cannot be checked against it")
	}
	repo := t.TempDir()
	if out, err := exec.Command("git", "init", "-q", repo).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v\n%s", err, out)
	}
	return repo
}

func touch(t *testing.T, paths ...string) {
	t.Helper()
	for _, p := range paths {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// What a run leaves in the workbench is invisible to git; the one line the
// file's comment names brings the handoffs back, and only them.
func TestWorkbenchIgnoredByGit(t *testing.T) {
	repo := gitRepo(t)
	dir := filepath.Join(repo, ".flower")
	w, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := MkdirRun(filepath.Join(dir, "runs", "20261130-112853"), dir); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Freeze("main", []byte("doc 1"), t0); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Freeze("main", []byte("doc 2"), t0); err != nil {
		t.Fatal(err)
	}
	touch(t, filepath.Join(dir, "runs", "20261130-112853", "flower.log"), filepath.Join(dir, "runs", "20261130-112853", "manifest.json"))
	if err := os.Symlink("20261130-112853", filepath.Join(dir, "runs", "latest")); err != nil {
		t.Fatal(err)
	}
	if got := gitStatus(t, repo); got != "" {
		t.Fatalf("git status shows the workbench:\n%s", got)
	}
	if _, err := os.Stat(filepath.Join(dir, "runs", "20261130-112853", GitignoreName)); err == nil {
		t.Errorf("a run dir inside the workbench got a .gitignore of its own")
	}

	gi := filepath.Join(dir, GitignoreName)
	if !strings.Contains(readFile(t, gi), "!/notes/") {
		t.Fatalf("the .gitignore does not say how to keep the handoffs:\n%s", readFile(t, gi))
	}
	f, err := os.OpenFile(gi, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("!/notes/\n"); err != nil {
		t.Fatal(err)
	}
	f.Close()
	var got []string
	for _, l := range strings.Split(gitStatus(t, repo), "\n") {
		got = append(got, strings.TrimPrefix(l, "?? "))
	}
	if len(got) != 2 || got[0] != ".flower/notes/archive/交接/main-20261130T112853Z.md" || got[1] != ".flower/notes/交接-main.md" {
		t.Errorf("with notes un-ignored git status shows %q, want the handoff and its archive only", got)
	}
}

// A .gitignore already in the workbench is the person's: Open leaves it
// byte for byte, mode included.
func TestOpenKeepsPersonsGitignore(t *testing.T) {
	dir := filepath.Join(t.TempDir(), ".flower")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	gi := filepath.Join(dir, GitignoreName)
	const mine = "# mine\nruns/\n"
	if err := os.WriteFile(gi, []byte(mine), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(dir); err != nil {
		t.Fatal(err)
	}
	if err := MkdirRun(filepath.Join(dir, "runs", "r"), dir); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(gi)
	if err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, gi); got != mine || fi.Mode().Perm() != 0o600 {
		t.Errorf(".gitignore now %q mode %v, want the person's untouched", got, fi.Mode().Perm())
	}
}

func TestMkdirRunOutsideWorkbench(t *testing.T) {
	repo := gitRepo(t)
	wb := filepath.Join(repo, ".flower")

	// Created by flower, two levels deep: ignored.
	created := filepath.Join(repo, "out", "run1")
	if err := MkdirRun(created, wb); err != nil {
		t.Fatal(err)
	}
	touch(t, filepath.Join(created, "flower.log"), filepath.Join(created, "manifest.json"))
	if !strings.Contains(readFile(t, filepath.Join(created, GitignoreName)), "/*") {
		t.Errorf("the run dir's .gitignore does not ignore it")
	}
	if _, err := os.Stat(wb); err == nil {
		t.Errorf("a run dir elsewhere made a workbench")
	}

	// A folder the person had: theirs, nothing written.
	theirs := filepath.Join(repo, "logs")
	if err := os.Mkdir(theirs, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := MkdirRun(theirs, wb); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(theirs, GitignoreName)); err == nil {
		t.Errorf("flower wrote a .gitignore into a folder it did not create")
	}
	touch(t, filepath.Join(theirs, "flower.log"))
	if got := gitStatus(t, repo); got != "?? logs/flower.log" {
		t.Errorf("git status %q, want only the person's own folder", got)
	}

	// A relative run dir is judged by where it really is.
	t.Chdir(repo)
	if err := MkdirRun(filepath.Join(".flower", "runs", "x"), wb); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(wb, GitignoreName)); err != nil {
		t.Errorf("a relative run dir inside the workbench did not make it ignored: %v", err)
	}
	if _, err := os.Stat(filepath.Join(wb, "runs", "x", GitignoreName)); err == nil {
		t.Errorf("a relative run dir inside the workbench got its own .gitignore")
	}
}

func TestWithin(t *testing.T) {
	for _, tc := range []struct {
		dir, path string
		want      bool
	}{
		{"/w/.flower", "/w/.flower", true},
		{"/w/.flower", "/w/.flower/runs/x", true},
		{"/w/.flower", "/w/.flowers/x", false},
		{"/w/.flower", "/w/..flower", false},
		{"/w/.flower", "/w", false},
		{"/w/.flower", "/elsewhere/run", false},
	} {
		if got := within(tc.dir, tc.path); got != tc.want {
			t.Errorf("within(%q, %q) = %v, want %v", tc.dir, tc.path, got, tc.want)
		}
	}
}
