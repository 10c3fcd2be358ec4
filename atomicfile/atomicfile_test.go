package atomicfile

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
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

// The mode is perm less the umask, as for os.WriteFile: a person's umask
// 077 keeps every file flower writes to themselves. (The umask is the
// process's: these tests do not run in parallel.)
func TestWriteFileHonoursUmask(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		umask      int
		perm, want os.FileMode
	}{
		{0o022, 0o666, 0o644},
		{0o022, 0o600, 0o600},
		{0o077, 0o666, 0o600},
		{0o077, 0o644, 0o600},
		{0o027, 0o666, 0o640},
		{0, 0o640, 0o640},
	} {
		old := syscall.Umask(tc.umask)
		path := filepath.Join(dir, "f")
		errFile := WriteFile(path, []byte("x"), tc.perm)
		errNew := writeNew(filepath.Join(dir, "new"), []byte("x"), tc.perm)
		syscall.Umask(old)
		if errFile != nil || errNew != nil {
			t.Fatal(errFile, errNew)
		}
		for _, name := range []string{"f", "new"} {
			fi, err := os.Stat(filepath.Join(dir, name))
			if err != nil {
				t.Fatal(err)
			}
			if got := fi.Mode().Perm(); got != tc.want {
				t.Errorf("%s: umask %03o, perm %v: mode %v, want %v", name, tc.umask, tc.perm, got, tc.want)
			}
		}
		if err := os.Remove(filepath.Join(dir, "new")); err != nil {
			t.Fatal(err)
		}
	}
}

// smallDisk mounts a tmpfs of size bytes for the test and unmounts it in
// Cleanup. Mounting needs root (CI runs as root); elsewhere the test is
// skipped and says why.
func smallDisk(t *testing.T, size int) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("SKIPPED, not passed: a full disk needs a tmpfs of its own, and mounting one needs root")
	}
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", fmt.Sprintf("size=%d", size), "tmpfs", dir).CombinedOutput(); err != nil {
		t.Fatalf("mount tmpfs: %v: %s", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", dir, err, out)
		}
	})
	return dir
}

// A write that fails half-way (the disk is full) leaves the old file as it
// was and no temp file beside it, for WriteFile and writeNew alike.
func TestFailedWriteLeavesNoTempFile(t *testing.T) {
	dir := smallDisk(t, 256<<10)
	path := filepath.Join(dir, "manifest.json")
	if err := WriteFile(path, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	big := bytes.Repeat([]byte("x"), 1<<20)
	for i := range 3 {
		err := WriteFile(path, big, 0o600)
		if !errors.Is(err, syscall.ENOSPC) || !strings.Contains(err.Error(), "write temp") {
			t.Fatalf("write %d: %v, want ENOSPC from the temp file's write", i, err)
		}
	}
	if err := writeNew(filepath.Join(dir, "new"), big, 0o600); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("writeNew: %v, want ENOSPC", err)
	}
	if got, err := os.ReadFile(path); err != nil || string(got) != "old" {
		t.Errorf("the old file: %q, %v", got, err)
	}
	if extra := leftovers(t, dir, "manifest.json"); len(extra) > 0 {
		t.Errorf("left behind %v", extra)
	}
	// The space the failed writes took is free again: a small write fits.
	if err := WriteFile(path, bytes.Repeat([]byte("y"), 200<<10), 0o600); err != nil {
		t.Errorf("write after the failures: %v", err)
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
