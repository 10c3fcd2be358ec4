package workbench

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/flowerhq/flower/safefile"
)

// runs/latest: flower's own link is replaced, atomically, leaving no temp
// name; anything else in its place is refused and left alone.
func TestLinkLatest(t *testing.T) {
	runs := filepath.Join(t.TempDir(), ".flower", "runs")
	for _, d := range []string{"a", "b"} {
		if err := os.MkdirAll(filepath.Join(runs, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range []string{"a", "b"} {
		if err := LinkLatest(filepath.Join(runs, d)); err != nil {
			t.Fatalf("LinkLatest(%s): %v", d, err)
		}
		if got, err := LatestTarget(runs); err != nil || got != filepath.Join(runs, d) {
			t.Errorf("LatestTarget = %s, %v; want %s", got, err, d)
		}
	}
	if entries, _ := os.ReadDir(runs); len(entries) != 3 {
		t.Errorf("runs holds %d entries, want a, b and latest", len(entries))
	}

	latest := filepath.Join(runs, LatestName)
	if err := os.Remove(latest); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(latest, 0o755); err != nil {
		t.Fatal(err)
	}
	err := LinkLatest(filepath.Join(runs, "a"))
	if !errors.Is(err, safefile.ErrUnsafe) || !strings.Contains(err.Error(), latest+" is a directory") {
		t.Errorf("LinkLatest over a planted directory: %v", err)
	}
	if fi, err := os.Lstat(latest); err != nil || !fi.IsDir() {
		t.Errorf("the planted directory was touched: %v", err)
	}
	if entries, _ := os.ReadDir(runs); len(entries) != 3 {
		t.Errorf("runs holds %d entries: a temp link was left", len(entries))
	}
}

func TestLatestTargetRefusesLinksOut(t *testing.T) {
	runs := filepath.Join(t.TempDir(), "runs")
	if err := os.MkdirAll(runs, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, to := range []string{t.TempDir(), "../elsewhere", ".."} {
		latest := filepath.Join(runs, LatestName)
		_ = os.Remove(latest)
		if err := os.Symlink(to, latest); err != nil {
			t.Fatal(err)
		}
		if _, err := LatestTarget(runs); !errors.Is(err, safefile.ErrUnsafe) {
			t.Errorf("latest → %s: %v, want a refusal", to, err)
		}
	}
}

// Territory.Check names the first thing that is not flower's.
func TestTerritoryCheck(t *testing.T) {
	ws := t.TempDir()
	victim := t.TempDir()
	wb := filepath.Join(ws, ".flower")
	run := filepath.Join(wb, "runs", "r")
	if err := os.MkdirAll(run, 0o755); err != nil {
		t.Fatal(err)
	}
	ter := Territory{Workspace: ws, RunDir: run, Step: "main"}
	if err := ter.Check(); err != nil {
		t.Fatalf("a clean workbench: %v", err)
	}
	locks := filepath.Join(wb, "locks")
	if err := os.Symlink(victim, locks); err != nil {
		t.Fatal(err)
	}
	if err := ter.Check(); err == nil || !strings.Contains(err.Error(), locks+" is a symbolic link") {
		t.Errorf("a folder of the workbench that is a link: %v", err)
	}
	if err := os.Remove(locks); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(victim, "x"), filepath.Join(run, "step-main.lock")); err != nil {
		t.Fatal(err)
	}
	if err := ter.Check(); err == nil || !strings.Contains(err.Error(), "step-main.lock is a symbolic link") {
		t.Errorf("a lock that is a link: %v", err)
	}
}

func TestSetAside(t *testing.T) {
	w, err := Open(filepath.Join(t.TempDir(), ".flower"))
	if err != nil {
		t.Fatal(err)
	}
	if dst, err := w.SetAsideHandoff("s", time.Now()); err != nil || dst != "" {
		t.Errorf("nothing to set aside: %q, %v", dst, err)
	}
	if err := os.WriteFile(w.HandoffPath("s"), []byte("planted"), 0o644); err != nil {
		t.Fatal(err)
	}
	dst, err := w.SetAsideHandoff("s", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(dst); string(b) != "planted" {
		t.Errorf("archived %q", b)
	}
	if _, err := os.Lstat(w.HandoffPath("s")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("still in place: %v", err)
	}
}

// The workbench's .gitignore may be a person's file or link, but never a
// FIFO (git would block on it); a notes file flower writes never has a
// second name; and freezing a handoff leaves no name shared with the
// archive.
func TestTerritorySpecialFilesAndHardLinks(t *testing.T) {
	ws := t.TempDir()
	w, err := Open(DirOf(ws))
	if err != nil {
		t.Fatal(err)
	}
	ter := Territory{Workspace: ws, Step: "main"}
	gi := filepath.Join(w.Dir, GitignoreName)
	if err := os.Remove(gi); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc/hostname", gi); err != nil {
		t.Fatal(err)
	}
	if err := ter.Check(); err != nil {
		t.Errorf("a .gitignore that is a link: %v", err)
	}
	os.Remove(gi)
	if err := syscall.Mkfifo(gi, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := ter.Check(); !errors.Is(err, safefile.ErrUnsafe) || !strings.Contains(err.Error(), gi+" is a FIFO") {
		t.Errorf("a .gitignore that is a FIFO: %v", err)
	}
	os.Remove(gi)

	t0 := time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)
	for i := range 2 {
		p, err := w.Freeze("main", []byte("doc"), t0.Add(time.Duration(i)*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		if fi, _ := os.Lstat(p); safefile.Links(fi) != 1 {
			t.Errorf("the frozen handoff has %d names", safefile.Links(fi))
		}
	}
	if err := ter.Check(); err != nil {
		t.Errorf("after two freezes: %v", err)
	}
	victim := filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(victim, []byte("victim"), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Remove(w.TaskPath("main"))
	if err := os.Link(victim, w.TaskPath("main")); err != nil {
		t.Fatal(err)
	}
	if err := ter.Check(); !errors.Is(err, safefile.ErrUnsafe) || !strings.Contains(err.Error(), "hard links") {
		t.Errorf("a hard-linked task file: %v", err)
	}
	if _, err := w.FreezeTask("main", []byte("task"), t0); err == nil {
		t.Errorf("FreezeTask wrote over a hard-linked task file")
	}
	if b, _ := os.ReadFile(victim); string(b) != "victim" {
		t.Errorf("the victim changed: %q", b)
	}
}
