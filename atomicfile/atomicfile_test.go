package atomicfile

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// leftovers lists entries of dir other than the expected ones, so a test can
// prove no temp file survived.
func leftovers(t *testing.T, dir string, want ...string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var extra []string
	for _, e := range entries {
		if !contains(want, e.Name()) {
			extra = append(extra, e.Name())
		}
	}
	return extra
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func TestWriteFileCreatesAndReplaces(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "manifest.json")

	for i, data := range [][]byte{
		[]byte("first version, fairly long so a partial write would show"),
		[]byte("second"),
		{},
		bytes.Repeat([]byte("x"), 1<<20),
	} {
		if err := WriteFile(path, data, 0o640); err != nil {
			t.Fatalf("write %d: %v", i, err)
		}
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("read %d: %v", i, err)
		}
		if !bytes.Equal(got, data) {
			t.Fatalf("write %d: content = %d bytes, want %d", i, len(got), len(data))
		}
		if extra := leftovers(t, dir, "manifest.json"); len(extra) > 0 {
			t.Fatalf("write %d: left behind %v", i, extra)
		}
	}
}

func TestWriteFileSetsPerm(t *testing.T) {
	dir := t.TempDir()
	for _, perm := range []os.FileMode{0o600, 0o644, 0o640} {
		path := filepath.Join(dir, "f")
		if err := WriteFile(path, []byte("x"), perm); err != nil {
			t.Fatal(err)
		}
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Mode().Perm(); got != perm {
			t.Errorf("perm = %v, want %v", got, perm)
		}
	}
}

func TestWriteFileRelativePath(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	if err := WriteFile("rel.txt", []byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(dir, "rel.txt"))
	if err != nil || string(got) != "hello" {
		t.Fatalf("got %q, %v", got, err)
	}
}

func TestWriteFileErrors(t *testing.T) {
	tests := []struct {
		name string
		// setup returns the target path and the directory to check for
		// leftovers (with the names that should be there).
		setup   func(t *testing.T) (path, dir string, keep []string)
		wantIs  error
		wantMsg string
	}{
		{
			name: "missing dir",
			setup: func(t *testing.T) (string, string, []string) {
				dir := t.TempDir()
				return filepath.Join(dir, "nope", "f.json"), dir, nil
			},
			wantIs:  fs.ErrNotExist,
			wantMsg: "create temp",
		},
		{
			// Works as root, unlike a chmod 0555 directory: the parent is a
			// regular file, so nothing can be created "in" it.
			name: "parent is a regular file",
			setup: func(t *testing.T) (string, string, []string) {
				dir := t.TempDir()
				if err := os.WriteFile(filepath.Join(dir, "plain"), []byte("p"), 0o644); err != nil {
					t.Fatal(err)
				}
				return filepath.Join(dir, "plain", "f.json"), dir, []string{"plain"}
			},
			wantMsg: "create temp",
		},
		{
			// The temp file is created and written, then rename fails:
			// proves the late error path removes the temp file.
			name: "target is a non-empty directory",
			setup: func(t *testing.T) (string, string, []string) {
				dir := t.TempDir()
				target := filepath.Join(dir, "target")
				if err := os.MkdirAll(filepath.Join(target, "child"), 0o755); err != nil {
					t.Fatal(err)
				}
				return target, dir, []string{"target"}
			},
			wantMsg: "rename ",
		},
		{
			name: "empty file name",
			setup: func(t *testing.T) (string, string, []string) {
				dir := t.TempDir()
				return dir + string(filepath.Separator), dir, nil
			},
			wantMsg: "empty file name",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path, dir, keep := tt.setup(t)
			err := WriteFile(path, []byte("data"), 0o644)
			if err == nil {
				t.Fatal("WriteFile succeeded, want error")
			}
			if tt.wantIs != nil && !errors.Is(err, tt.wantIs) {
				t.Errorf("error %v is not %v", err, tt.wantIs)
			}
			if !strings.Contains(err.Error(), tt.wantMsg) {
				t.Errorf("error %q does not mention %q", err, tt.wantMsg)
			}
			if extra := leftovers(t, dir, keep...); len(extra) > 0 {
				t.Errorf("left behind %v", extra)
			}
		})
	}
}

// Concurrent writers must never produce a mixture: the file always holds
// exactly one writer's full payload.
func TestWriteFileConcurrent(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f")
	payloads := make([][]byte, 8)
	for i := range payloads {
		payloads[i] = bytes.Repeat([]byte{byte('a' + i)}, 64<<10)
	}
	var wg sync.WaitGroup
	for _, p := range payloads {
		wg.Go(func() {
			for range 5 {
				if err := WriteFile(path, p, 0o644); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, p := range payloads {
		if bytes.Equal(got, p) {
			found = true
		}
	}
	if !found {
		t.Fatalf("file holds %d bytes that match no single payload", len(got))
	}
	if extra := leftovers(t, dir, "f"); len(extra) > 0 {
		t.Fatalf("left behind %v", extra)
	}
}
