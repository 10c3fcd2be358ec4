package workbench

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

func TestTaskPath(t *testing.T) {
	w := &Workbench{Dir: "/ws/.flower"}
	if got, want := w.TaskPath("干/活"), "/ws/.flower/notes/任务-干-活.md"; got != want {
		t.Errorf("TaskPath = %q, want %q", got, want)
	}
	var none *Workbench
	if p := none.TaskPath("x"); p != "" {
		t.Errorf("nil TaskPath = %q", p)
	}
	if p, err := none.FreezeTask("x", []byte("t"), t0); p != "" || err != nil {
		t.Errorf("nil FreezeTask = %q, %v", p, err)
	}
	if _, err := none.ReadTask("x"); !errors.Is(err, ErrNoWorkbench) {
		t.Errorf("nil ReadTask err = %v", err)
	}
}

func TestFreezeTaskWritesAndReads(t *testing.T) {
	w := openTemp(t)
	task := "port the parser\n不要动业务代码\n"
	path, err := w.FreezeTask("干活", []byte(task), t0)
	if err != nil {
		t.Fatal(err)
	}
	if path != w.TaskPath("干活") {
		t.Errorf("path %q, want %q", path, w.TaskPath("干活"))
	}
	if got := readFile(t, path); got != task {
		t.Errorf("file holds %q", got)
	}
	got, err := w.ReadTask("干活")
	if err != nil || string(got) != task {
		t.Errorf("ReadTask = %q, %v", got, err)
	}
	// Atomic: no temp file is left beside it.
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Errorf("notes holds %d entries, want the task file alone", len(entries))
	}
	if _, err := w.ReadTask("other"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("ReadTask of a step without a file: %v", err)
	}
}

// The same task frozen again (a second RunStep of the step) leaves the file,
// and whatever a person may rely on about it, alone.
func TestFreezeTaskSameTaskKeepsFile(t *testing.T) {
	w := openTemp(t)
	path, err := w.FreezeTask("s", []byte("same"), t0)
	if err != nil {
		t.Fatal(err)
	}
	before, _ := os.Stat(path)
	if _, err := w.FreezeTask("s", []byte("same"), t0); err != nil {
		t.Fatal(err)
	}
	after, _ := os.Stat(path)
	if !os.SameFile(before, after) {
		t.Errorf("the file was replaced although the task is the same")
	}
	if _, err := os.Stat(w.archiveDirOf(taskLabel)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("an archive was made for an unchanged task: %v", err)
	}
}

// A different task never clobbers the file: what was there (an earlier
// task, or a person's edit) goes to the archive first, each under its own
// name even within the same second.
func TestFreezeTaskNeverClobbers(t *testing.T) {
	w := openTemp(t)
	path, err := w.FreezeTask("s", []byte("first task"), t0)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("first task, edited by a person"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := w.FreezeTask("s", []byte("second task"), t0); err != nil {
		t.Fatal(err)
	}
	if _, err := w.FreezeTask("s", []byte("third task"), t0); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, path); got != "third task" {
		t.Errorf("current file %q", got)
	}
	dir := w.archiveDirOf(taskLabel)
	want := map[string]string{
		"s-20261130T112853Z.md":   "first task, edited by a person",
		"s-20261130T112853Z-2.md": "second task",
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != len(want) {
		t.Errorf("archive holds %d files, want %d", len(entries), len(want))
	}
	for name, body := range want {
		if got := readFile(t, filepath.Join(dir, name)); got != body {
			t.Errorf("%s holds %q, want %q", name, got, body)
		}
	}
	// The handoff archive is not mixed up with the task's.
	if got, err := w.Archive("s"); err != nil || len(got) != 0 {
		t.Errorf("handoff archive = %q, %v", got, err)
	}
}

func TestFreezeTaskErrors(t *testing.T) {
	w := openTemp(t)
	if err := os.Mkdir(w.TaskPath("d"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := w.FreezeTask("d", []byte("x"), t0); err == nil {
		t.Errorf("FreezeTask over a directory succeeded")
	}
}
