package safefile

import (
	"errors"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// Every kind of thing that is not what flower makes is refused, naming the
// path; what flower makes, or nothing, passes.
func TestCheckAndReadFile(t *testing.T) {
	victim := t.TempDir()
	if err := os.WriteFile(filepath.Join(victim, "secret"), []byte("victim"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		plant   func(t *testing.T, ws string) // makes ws/a/b
		problem string                        // "" = passes
	}{
		{"regular file", func(t *testing.T, ws string) { write(t, ws, "a/b", "ok") }, ""},
		{"missing", func(t *testing.T, ws string) {}, ""},
		{"folder is a link", func(t *testing.T, ws string) { link(t, victim, filepath.Join(ws, "a")) }, "a is a symbolic link (to " + victim + ")"},
		{"file is a link", func(t *testing.T, ws string) {
			mkdir(t, ws, "a")
			link(t, filepath.Join(victim, "secret"), filepath.Join(ws, "a/b"))
		}, "a/b is a symbolic link"},
		{"link to /dev/zero", func(t *testing.T, ws string) { mkdir(t, ws, "a"); link(t, "/dev/zero", filepath.Join(ws, "a/b")) }, "a/b is a symbolic link (to /dev/zero)"},
		{"directory in a file's place", func(t *testing.T, ws string) { mkdir(t, ws, "a/b") }, "a/b is a directory where flower keeps a file"},
		{"file in a folder's place", func(t *testing.T, ws string) { write(t, ws, "a", "x") }, "a is a file where flower keeps a directory"},
		{"file with a second hard link", func(t *testing.T, ws string) {
			mkdir(t, ws, "a")
			hardlink(t, filepath.Join(victim, "secret"), filepath.Join(ws, "a/b"))
		}, "a/b has 2 hard links, not one"},
		{"FIFO", func(t *testing.T, ws string) {
			mkdir(t, ws, "a")
			if err := syscall.Mkfifo(filepath.Join(ws, "a/b"), 0o644); err != nil {
				t.Fatal(err)
			}
		}, "a/b is a FIFO, not a regular file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ws := t.TempDir()
			tt.plant(t, ws)
			path := filepath.Join(ws, "a", "b")
			_, err := ReadFile(ws, path, 100, "a test file")
			if tt.problem == "" {
				if err != nil && !errors.Is(err, fs.ErrNotExist) {
					t.Fatalf("ReadFile: %v", err)
				}
				return
			}
			var se *Error
			if !errors.As(err, &se) || !errors.Is(err, ErrUnsafe) {
				t.Fatalf("ReadFile: %v, want a *safefile.Error", err)
			}
			if !strings.Contains(err.Error(), filepath.Join(ws, tt.problem)) || !strings.Contains(err.Error(), "remove it") || strings.Contains(err.Error(), "\n") {
				t.Errorf("message %q: want one line naming %s and saying what to do", err, tt.problem)
			}
			if tt.name == "directory in a file's place" {
				return // a folder may be made in it
			}
			if err := MkdirAll(ws, filepath.Join(ws, "a", "b", "c"), 0o755); err == nil {
				t.Errorf("MkdirAll went through it")
			}
		})
	}
	if b, _ := os.ReadFile(filepath.Join(victim, "secret")); string(b) != "victim" {
		t.Errorf("the victim's file changed: %q", b)
	}
}

func TestReadFileCap(t *testing.T) {
	ws := t.TempDir()
	write(t, ws, "f", strings.Repeat("x", 101))
	_, err := ReadFile(ws, filepath.Join(ws, "f"), 100, "a test file")
	if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "101 bytes, over the cap of 100 bytes for a test file") {
		t.Errorf("ReadFile over the cap: %v", err)
	}
	if b, err := ReadFile(ws, filepath.Join(ws, "f"), 101, "a test file"); err != nil || len(b) != 101 {
		t.Errorf("ReadFile at the cap: %d bytes, %v", len(b), err)
	}
	// A device is never read, whatever its name.
	if _, err := Open("/dev/zero"); !errors.Is(err, ErrUnsafe) {
		t.Errorf("Open(/dev/zero): %v", err)
	}
}

func TestOpenAppendRefusesALink(t *testing.T) {
	ws := t.TempDir()
	victim := filepath.Join(t.TempDir(), "log")
	write(t, filepath.Dir(victim), "log", "victim\n")
	link(t, victim, filepath.Join(ws, "flower.log"))
	if _, err := OpenAppend(filepath.Join(ws, "flower.log"), 0o644); !errors.Is(err, ErrUnsafe) {
		t.Fatalf("OpenAppend through a link: %v", err)
	}
	if b, _ := os.ReadFile(victim); string(b) != "victim\n" {
		t.Errorf("victim changed: %q", b)
	}
	f, err := OpenAppend(filepath.Join(ws, "own.log"), 0o644)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
}

func TestCheckEntries(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "manifest.json", "{}")
	mkdir(t, dir, "sub")
	if err := CheckEntries(dir); err != nil {
		t.Fatalf("CheckEntries: %v", err)
	}
	link(t, "/etc/passwd", filepath.Join(dir, "step-main.lock"))
	if err := CheckEntries(dir); !errors.Is(err, ErrUnsafe) || !strings.Contains(err.Error(), "step-main.lock") {
		t.Errorf("CheckEntries with a link: %v", err)
	}
}

func TestSize(t *testing.T) {
	for n, want := range map[int64]string{12: "12 bytes", 1 << 10: "1 KiB", 1536: "1.5 KiB", 1 << 20: "1 MiB", 20 << 20: "20 MiB"} {
		if got := Size(n); got != want {
			t.Errorf("Size(%d) = %q, want %q", n, got, want)
		}
	}
}

func write(t *testing.T, ws, rel, data string) {
	t.Helper()
	p := filepath.Join(ws, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

func mkdir(t *testing.T, ws, rel string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(ws, rel), 0o755); err != nil {
		t.Fatal(err)
	}
}

func link(t *testing.T, to, at string) {
	t.Helper()
	if err := os.Symlink(to, at); err != nil {
		t.Fatal(err)
	}
}

func hardlink(t *testing.T, to, at string) {
	t.Helper()
	if err := os.Link(to, at); err != nil {
		t.Fatal(err)
	}
}

// A file of flower's that shares its inode with a file elsewhere is never
// opened for writing, so nothing is appended, written or emptied there.
func TestOpenOwnRefusesAHardLink(t *testing.T) {
	ws := t.TempDir()
	victim := filepath.Join(t.TempDir(), "log")
	write(t, filepath.Dir(victim), "log", "victim\n")
	for _, name := range []string{"flower.log", "step-main.lock"} {
		p := filepath.Join(ws, name)
		hardlink(t, victim, p)
		var err error
		if name == "flower.log" {
			_, err = OpenAppend(p, 0o644)
		} else {
			_, err = OpenOwn(p, os.O_RDWR, 0o600)
		}
		if !errors.Is(err, ErrUnsafe) || !strings.Contains(err.Error(), p+" has ") || !strings.Contains(err.Error(), "remove it") {
			t.Errorf("open %s, a hard link: %v", name, err)
		}
	}
	if b, _ := os.ReadFile(victim); string(b) != "victim\n" {
		t.Errorf("victim changed: %q", b)
	}
	f, err := OpenOwn(filepath.Join(ws, "own.lock"), os.O_RDWR, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
}

// A FIFO or a socket in a folder of flower's is refused by CheckSpecial,
// which passes over links and files (a person's .gitignore may be either);
// a hard-linked file is refused by CheckEntries.
func TestCheckSpecialAndHardLinkedEntries(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "manifest.json", "{}")
	link(t, "/etc/passwd", filepath.Join(dir, "a-link"))
	if err := CheckSpecial(dir); err != nil {
		t.Fatalf("CheckSpecial: %v", err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, ".gitignore"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := CheckSpecial(dir); !errors.Is(err, ErrUnsafe) || !strings.Contains(err.Error(), ".gitignore is a FIFO") {
		t.Errorf("CheckSpecial with a FIFO: %v", err)
	}
	sock := t.TempDir()
	l, err := net.Listen("unix", filepath.Join(sock, "s"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := CheckSpecial(sock); !errors.Is(err, ErrUnsafe) || !strings.Contains(err.Error(), "s is a socket") {
		t.Errorf("CheckSpecial with a socket: %v", err)
	}
	other := t.TempDir()
	write(t, other, "x", "y")
	hardlink(t, filepath.Join(other, "x"), filepath.Join(other, "flower.log"))
	if err := CheckEntries(other); !errors.Is(err, ErrUnsafe) || !strings.Contains(err.Error(), "hard links") {
		t.Errorf("CheckEntries with a hard link: %v", err)
	}
}

// A task file named in the workspace is read where it leads only while
// that stays in the workspace; a path outside it the person named is read.
func TestReadGivenIn(t *testing.T) {
	ws, out := t.TempDir(), t.TempDir()
	write(t, out, "id_rsa", "SECRET")
	write(t, ws, "own.md", "own task")
	mkdir(t, ws, "docs")
	write(t, ws, "docs/real.md", "linked task")
	link(t, filepath.Join(out, "id_rsa"), filepath.Join(ws, "task.md"))
	link(t, "docs/real.md", filepath.Join(ws, "inside.md"))
	link(t, out, filepath.Join(ws, "outdir"))
	for name, want := range map[string]string{"own.md": "own task", "inside.md": "linked task", "task.md": "", "outdir/id_rsa": ""} {
		b, err := ReadGivenIn(ws, filepath.Join(ws, name), 100, "a task")
		if want == "" {
			if !errors.Is(err, ErrUnsafe) || strings.Contains(string(b), "SECRET") ||
				!strings.Contains(err.Error(), filepath.Join(out, "id_rsa")+", outside it") || !strings.Contains(err.Error(), "-f "+filepath.Join(out, "id_rsa")) {
				t.Errorf("%s, a link out of the workspace: %q, %v", name, b, err)
			}
			continue
		}
		if err != nil || string(b) != want {
			t.Errorf("%s: %q, %v; want %q", name, b, err, want)
		}
	}
	if b, err := ReadGivenIn(ws, filepath.Join(out, "id_rsa"), 100, "a task"); err != nil || string(b) != "SECRET" {
		t.Errorf("a path outside the workspace the person named: %q, %v", b, err)
	}
}
