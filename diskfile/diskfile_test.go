package diskfile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

func TestOpenIsOSOpenFile(t *testing.T) {
	dir := t.TempDir()
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	p := filepath.Join(dir, "f")
	f, err := Open(p, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o666)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte("hello")); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	fi, err := os.Stat(p)
	if err != nil || fi.Mode().Perm() != 0o644 {
		t.Fatalf("made %v, %v; want mode 0644 under umask 022", fi.Mode(), err)
	}
	if _, err := Open(p, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("an exclusive create of an existing file: %v", err)
	}
	var pe *fs.PathError
	if _, err := Open(filepath.Join(dir, "none"), os.O_RDONLY, 0); !errors.Is(err, fs.ErrNotExist) || !errors.As(err, &pe) || pe.Path != filepath.Join(dir, "none") {
		t.Fatalf("a missing file: %v", err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(p, link); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(link, os.O_RDONLY|syscall.O_NOFOLLOW, 0); !errors.Is(err, syscall.ELOOP) {
		t.Fatalf("O_NOFOLLOW on a link: %v", err)
	}
	d, err := Open(dir, os.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Sync(); err != nil {
		t.Fatalf("a directory is synced: %v", err)
	}
	d.Close()
}

func TestReadDir(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"b", "a", "c"} {
		if err := os.WriteFile(filepath.Join(dir, n), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	entries, err := ReadDir(dir)
	if err != nil || len(entries) != 3 || entries[0].Name() != "a" || entries[2].Name() != "c" {
		t.Fatalf("entries %v, %v", entries, err)
	}
	if _, err := ReadDir(filepath.Join(dir, "none")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("a missing dir: %v", err)
	}
	if _, err := ReadDir(filepath.Join(dir, "a")); !errors.Is(err, syscall.ENOTDIR) {
		t.Fatalf("a file: %v", err)
	}
	// A FIFO where a directory was expected is refused at once, not
	// waited on for a writer.
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadDir(fifo); !errors.Is(err, syscall.ENOTDIR) {
		t.Fatalf("a FIFO: %v", err)
	}
}
