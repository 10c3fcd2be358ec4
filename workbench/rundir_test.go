package workbench

import (
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Runs started in the same second get run dirs of their own, each created
// exclusively, even when they race for the name.
func TestNewRunDirUnique(t *testing.T) {
	runs := filepath.Join(t.TempDir(), ".flower", "runs")
	now := time.Date(2026, 11, 30, 11, 28, 53, 0, time.UTC)
	const n = 16
	dirs := make([]string, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { dirs[i], errs[i] = NewRunDir(runs, now) })
	}
	wg.Wait()
	seen := map[string]bool{}
	for i, d := range dirs {
		if errs[i] != nil {
			t.Fatalf("NewRunDir: %v", errs[i])
		}
		if seen[d] {
			t.Errorf("%s given twice", d)
		}
		seen[d] = true
		if fi, err := os.Stat(d); err != nil || !fi.IsDir() {
			t.Errorf("%s: %v", d, err)
		}
	}
	for _, want := range []string{"20261130-112853", "20261130-112853-2", "20261130-112853-16"} {
		if !seen[filepath.Join(runs, want)] {
			t.Errorf("no run dir %s among %v", want, dirs)
		}
	}
}

// The notes files honour the umask (the archive keeps the file's mode).
func TestNotesHonourUmask(t *testing.T) {
	wb, err := Open(filepath.Join(t.TempDir(), ".flower"))
	if err != nil {
		t.Fatal(err)
	}
	old := syscall.Umask(0o077)
	_, herr := wb.Freeze("s", []byte("## doing\nx\n"), time.Now())
	_, terr := wb.FreezeTask("s", []byte("task"), time.Now())
	syscall.Umask(old)
	if herr != nil || terr != nil {
		t.Fatal(herr, terr)
	}
	for _, p := range []string{wb.HandoffPath("s"), wb.TaskPath("s")} {
		if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v (%v), want 0600 under umask 077", p, fi.Mode().Perm(), err)
		}
	}
	old = syscall.Umask(0o022)
	_, err = wb.Freeze("u", []byte("## doing\ny\n"), time.Now())
	syscall.Umask(old)
	if fi, serr := os.Stat(wb.HandoffPath("u")); err != nil || serr != nil || fi.Mode().Perm() != 0o644 {
		t.Errorf("mode under umask 022: %v %v %v, want 0644", fi.Mode().Perm(), err, serr)
	}
}
