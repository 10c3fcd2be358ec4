package atomicfile

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

func TestCopyNewCreates(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, ".gitignore")
	if err := writeNew(path, []byte("*\n"), 0o640); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil || string(b) != "*\n" {
		t.Fatalf("read back %q, %v", b, err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o640 {
		t.Errorf("mode %v, want 0640", fi.Mode().Perm())
	}
	if extra := leftovers(t, dir, ".gitignore"); len(extra) > 0 {
		t.Errorf("left behind %v", extra)
	}
}

// Whatever is at the name already (a file, a dangling symlink, a directory)
// stays exactly as it was.
func TestCopyNewNeverReplaces(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, path string)
		check func(t *testing.T, path string)
	}{
		{"file", func(t *testing.T, path string) {
			if err := os.WriteFile(path, []byte("mine"), 0o600); err != nil {
				t.Fatal(err)
			}
		}, func(t *testing.T, path string) {
			if b, err := os.ReadFile(path); err != nil || string(b) != "mine" {
				t.Errorf("file now %q (%v), want it untouched", b, err)
			}
		}},
		{"dangling symlink", func(t *testing.T, path string) {
			if err := os.Symlink("nowhere", path); err != nil {
				t.Fatal(err)
			}
		}, func(t *testing.T, path string) {
			if l, err := os.Readlink(path); err != nil || l != "nowhere" {
				t.Errorf("link now %q (%v), want it untouched", l, err)
			}
			if _, err := os.Stat(filepath.Join(filepath.Dir(path), "nowhere")); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("something was written through the link: %v", err)
			}
		}},
		{"directory", func(t *testing.T, path string) {
			if err := os.Mkdir(path, 0o755); err != nil {
				t.Fatal(err)
			}
		}, func(t *testing.T, path string) {
			if fi, err := os.Stat(path); err != nil || !fi.IsDir() {
				t.Errorf("directory gone: %v", err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "target")
			tc.setup(t, path)
			err := writeNew(path, []byte("theirs"), 0o644)
			if !errors.Is(err, fs.ErrExist) {
				t.Fatalf("writeNew = %v, want fs.ErrExist", err)
			}
			tc.check(t, path)
			if extra := leftovers(t, dir, "target"); len(extra) > 0 {
				t.Errorf("left behind %v", extra)
			}
		})
	}
}

// Racing creators: exactly one wins, and the file holds its payload whole.
func TestCopyNewConcurrent(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f")
	const n = 16
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = writeNew(path, []byte(fmt.Sprintf("writer %02d payload", i)), 0o644)
		}()
	}
	wg.Wait()
	won := -1
	for i, err := range errs {
		switch {
		case err == nil && won >= 0:
			t.Fatalf("writers %d and %d both created the file", won, i)
		case err == nil:
			won = i
		case !errors.Is(err, fs.ErrExist):
			t.Errorf("writer %d: %v", i, err)
		}
	}
	if won < 0 {
		t.Fatal("no writer created the file")
	}
	if b, _ := os.ReadFile(path); string(b) != fmt.Sprintf("writer %02d payload", won) {
		t.Errorf("file holds %q, want writer %d's payload", b, won)
	}
	if extra := leftovers(t, dir, "f"); len(extra) > 0 {
		t.Errorf("left behind %v", extra)
	}
}

// writeNew is CopyNew of data.
func writeNew(path string, data []byte, perm os.FileMode) error {
	return CopyNew(path, bytes.NewReader(data), perm)
}
