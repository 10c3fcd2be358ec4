package workbench

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2026, 11, 30, 11, 28, 53, 0, time.UTC)

func openTemp(t *testing.T) *Workbench {
	t.Helper()
	w, err := Open(filepath.Join(t.TempDir(), ".flower"))
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestOpen(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ws", ".flower")
	w, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if w.Dir != dir {
		t.Errorf("Dir = %q, want %q", w.Dir, dir)
	}
	entries, err := os.ReadDir(filepath.Join(dir, "notes"))
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 0 {
		t.Errorf("notes holds %d entries after Open, want the probe gone", len(entries))
	}
}

func TestOpenErrors(t *testing.T) {
	file := filepath.Join(t.TempDir(), "plain")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{"", file, filepath.Join(file, "sub")} {
		if w, err := Open(dir); err == nil {
			t.Errorf("Open(%q) = %+v, want error", dir, w)
		}
	}
}

func TestHandoffPath(t *testing.T) {
	w := &Workbench{Dir: "/ws/.flower"}
	want := filepath.Join("/ws/.flower", "notes", "交接-干活.md")
	if got := w.HandoffPath("干活"); got != want {
		t.Errorf("HandoffPath = %q, want %q", got, want)
	}
}

func TestNilWorkbench(t *testing.T) {
	var w *Workbench
	if p := w.HandoffPath("x"); p != "" {
		t.Errorf("HandoffPath = %q, want empty", p)
	}
	p, err := w.Freeze("x", []byte("doc"), t0)
	if p != "" || err != nil {
		t.Errorf("Freeze = %q, %v; want \"\", nil", p, err)
	}
	if _, err := w.ReadHandoff("x"); !errors.Is(err, ErrNoWorkbench) {
		t.Errorf("ReadHandoff error = %v, want ErrNoWorkbench", err)
	}
	if _, err := w.Archive("x"); !errors.Is(err, ErrNoWorkbench) {
		t.Errorf("Archive error = %v, want ErrNoWorkbench", err)
	}
}

func TestFreezeFirstGenerationHasNoArchive(t *testing.T) {
	w := openTemp(t)
	p, err := w.Freeze("干活", []byte("gen 1"), t0)
	if err != nil {
		t.Fatal(err)
	}
	if p != w.HandoffPath("干活") {
		t.Errorf("path = %q, want %q", p, w.HandoffPath("干活"))
	}
	if got := readFile(t, p); got != "gen 1" {
		t.Errorf("current = %q", got)
	}
	arch, err := w.Archive("干活")
	if err != nil || len(arch) != 0 {
		t.Errorf("archive = %v, %v; want empty", arch, err)
	}
}

func TestFreezeGenerations(t *testing.T) {
	tests := []struct {
		name  string
		times []time.Time // one per Freeze
		// wantSuffixes are the archive names after "<safe>-", oldest first.
		wantSuffixes []string
	}{
		{
			name:         "three generations, distinct seconds",
			times:        []time.Time{t0, t0.Add(time.Minute), t0.Add(2 * time.Minute)},
			wantSuffixes: []string{"20261130T112953Z.md", "20261130T113053Z.md"},
		},
		{
			name:         "same second four times",
			times:        []time.Time{t0, t0, t0, t0},
			wantSuffixes: []string{"20261130T112853Z.md", "20261130T112853Z-2.md", "20261130T112853Z-3.md"},
		},
		{
			// Sub-second differences vanish in the name; -N still separates.
			name:         "same second, different nanoseconds",
			times:        []time.Time{t0, t0.Add(100 * time.Millisecond), t0.Add(900 * time.Millisecond)},
			wantSuffixes: []string{"20261130T112853Z.md", "20261130T112853Z-2.md"},
		},
		{
			// Timestamps are UTC whatever zone `now` carries.
			name:         "non-UTC now",
			times:        []time.Time{t0, t0.In(time.FixedZone("CST", 8*3600))},
			wantSuffixes: []string{"20261130T112853Z.md"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := openTemp(t)
			const step = "coder/1"
			var docs []string
			for i, now := range tt.times {
				doc := "handoff generation " + string(rune('1'+i))
				docs = append(docs, doc)
				if _, err := w.Freeze(step, []byte(doc), now); err != nil {
					t.Fatalf("freeze %d: %v", i+1, err)
				}
			}
			got, err := w.ReadHandoff(step)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != docs[len(docs)-1] {
				t.Errorf("current = %q, want %q", got, docs[len(docs)-1])
			}
			arch, err := w.Archive(step)
			if err != nil {
				t.Fatal(err)
			}
			if len(arch) != len(tt.wantSuffixes) {
				t.Fatalf("archive = %v, want %d entries", arch, len(tt.wantSuffixes))
			}
			for i, p := range arch {
				want := filepath.Join(w.Dir, "notes", "archive", "交接", "coder-1-"+tt.wantSuffixes[i])
				if p != want {
					t.Errorf("archive[%d] = %s, want %s", i, p, want)
				}
				if got := readFile(t, p); got != docs[i] {
					t.Errorf("archive[%d] holds %q, want %q", i, got, docs[i])
				}
			}
		})
	}
}

// A person may edit the current file between generations (DESIGN.md
// «Launch from disk»); the archive must keep the edited text, and
// ReadHandoff must return it.
func TestFreezeArchivesEditedFile(t *testing.T) {
	w := openTemp(t)
	p, err := w.Freeze("s", []byte("written"), t0)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte("edited by a person"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, _ := w.ReadHandoff("s"); string(got) != "edited by a person" {
		t.Errorf("ReadHandoff = %q", got)
	}
	if _, err := w.Freeze("s", []byte("next"), t0.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	arch, err := w.Archive("s")
	if err != nil || len(arch) != 1 {
		t.Fatalf("archive = %v, %v", arch, err)
	}
	if got := readFile(t, arch[0]); got != "edited by a person" {
		t.Errorf("archived %q", got)
	}
}

// An archive name taken by someone else (another flower, a person) is never
// overwritten.
func TestFreezeSkipsTakenArchiveName(t *testing.T) {
	w := openTemp(t)
	dir := filepath.Join(w.Dir, "notes", "archive", "交接")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	taken := filepath.Join(dir, "s-20261130T112853Z.md")
	if err := os.WriteFile(taken, []byte("not ours"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, doc := range []string{"a", "b"} {
		if _, err := w.Freeze("s", []byte(doc), t0); err != nil {
			t.Fatal(err)
		}
	}
	if got := readFile(t, taken); got != "not ours" {
		t.Errorf("taken name overwritten with %q", got)
	}
	if got := readFile(t, filepath.Join(dir, "s-20261130T112853Z-2.md")); got != "a" {
		t.Errorf("-2 holds %q, want %q", got, "a")
	}
}

func TestFreezeErrors(t *testing.T) {
	t.Run("current path is a directory", func(t *testing.T) {
		w := openTemp(t)
		if err := os.MkdirAll(w.HandoffPath("s"), 0o755); err != nil {
			t.Fatal(err)
		}
		if _, err := w.Freeze("s", []byte("x"), t0); err == nil {
			t.Error("Freeze succeeded over a directory")
		}
	})
	t.Run("archive dir blocked by a file", func(t *testing.T) {
		w := openTemp(t)
		if _, err := w.Freeze("s", []byte("old"), t0); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(w.Dir, "notes", "archive"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := w.Freeze("s", []byte("new"), t0); err == nil {
			t.Fatal("Freeze succeeded without an archive")
		}
		// Without a place to preserve the old generation, it must stay.
		if got := readFile(t, w.HandoffPath("s")); got != "old" {
			t.Errorf("current = %q, want the old generation kept", got)
		}
	})
}

func TestReadHandoffMissing(t *testing.T) {
	w := openTemp(t)
	_, err := w.ReadHandoff("absent")
	if !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("error = %v, want fs.ErrNotExist", err)
	}
	if !strings.Contains(err.Error(), w.HandoffPath("absent")) {
		t.Errorf("error %q does not name the path", err)
	}
}

// Step "a" must not list the archive of steps whose names merely start
// with "a-".
func TestArchiveSeparatesSteps(t *testing.T) {
	w := openTemp(t)
	for _, step := range []string{"a", "a-2", "a-20261130T112853Z", "b"} {
		for i := range 2 {
			if _, err := w.Freeze(step, []byte(step), t0.Add(time.Duration(i)*time.Second)); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Stray files a person might drop in the folder.
	dir := filepath.Join(w.Dir, "notes", "archive", "交接")
	for _, name := range []string{"a-notes.md", "a-20261130T112853Z-01.md", "a-20261130T112853Z-1.md", "a-20261130T112853Z.txt"} {
		if err := os.WriteFile(filepath.Join(dir, name), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, step := range []string{"a", "a-2", "a-20261130T112853Z", "b"} {
		arch, err := w.Archive(step)
		if err != nil {
			t.Fatal(err)
		}
		if len(arch) != 1 {
			t.Errorf("Archive(%q) = %v, want exactly its own entry", step, arch)
			continue
		}
		if got := readFile(t, arch[0]); got != step {
			t.Errorf("Archive(%q) lists a file holding %q", step, got)
		}
	}
}

// copyExcl archives a notes file; it never overwrites a name that exists.
func TestCopyExcl(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	dst := filepath.Join(dir, "dst")
	if err := os.WriteFile(src, []byte("payload"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := copyExcl(src, dst); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, dst); got != "payload" {
		t.Errorf("copy = %q", got)
	}
	if err := os.WriteFile(src, []byte("changed"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := copyExcl(src, dst); !errors.Is(err, fs.ErrExist) {
		t.Errorf("second copy error = %v, want fs.ErrExist", err)
	}
	if got := readFile(t, dst); got != "payload" {
		t.Errorf("existing dst overwritten with %q", got)
	}
	if err := copyExcl(filepath.Join(dir, "missing"), filepath.Join(dir, "d2")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing src error = %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "d2")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("failed copy left d2 behind: %v", err)
	}
}

// An archive has its name only once it is whole: a reader polling the
// archive folder while a large file is archived never reads part of it.
func TestCopyExclIsNeverSeenHalfWritten(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	want := bytes.Repeat([]byte("a line of a handoff document\n"), 1<<18) // 7.5 MB
	if err := os.WriteFile(src, want, 0o644); err != nil {
		t.Fatal(err)
	}
	archive := filepath.Join(dir, "archive")
	if err := os.Mkdir(archive, 0o755); err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(archive, "main-1.md")
	done := make(chan struct{})
	var reads, partial int
	go func() {
		defer close(done)
		for {
			b, err := os.ReadFile(dst)
			if err == nil {
				reads++
				if len(b) != len(want) {
					partial++
				}
				return
			}
		}
	}()
	if err := copyExcl(src, dst); err != nil {
		t.Fatal(err)
	}
	<-done
	if partial > 0 {
		t.Fatalf("read the archive %d times while it was written, %d of them short", reads, partial)
	}
	ents, err := os.ReadDir(archive)
	if err != nil || len(ents) != 1 {
		t.Fatalf("archive folder holds %v (%v), want the archive alone", ents, err)
	}
}

// TestKeepHandoff: the handoff kept during the writing turn is the one
// archive copy of it, and Freeze adds none; a person's edit after the keep
// is archived by Freeze all the same, and so nothing is lost either way.
func TestKeepHandoff(t *testing.T) {
	t.Run("kept, then frozen", func(t *testing.T) {
		w := openTemp(t)
		if err := w.KeepHandoff("s", t0); err != nil { // no handoff yet: nothing to keep
			t.Fatal(err)
		}
		if arch, _ := w.Archive("s"); len(arch) != 0 {
			t.Fatalf("archive %v before any handoff", arch)
		}
		if _, err := w.Freeze("s", []byte("first"), t0); err != nil {
			t.Fatal(err)
		}
		if err := w.KeepHandoff("s", t0.Add(time.Second)); err != nil {
			t.Fatal(err)
		}
		arch, err := w.Archive("s")
		if err != nil || len(arch) != 1 || readFile(t, arch[0]) != "first" {
			t.Fatalf("archive after the keep %v, %v", arch, err)
		}
		p, err := w.Freeze("s", []byte("second"), t0.Add(2*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		if got := readFile(t, p); got != "second" {
			t.Errorf("handoff %q", got)
		}
		if arch, _ := w.Archive("s"); len(arch) != 1 {
			t.Errorf("archive after the freeze %v: the kept copy was made again", arch)
		}
		// A kept copy stands for one freeze only.
		if _, err := w.Freeze("s", []byte("third"), t0.Add(3*time.Second)); err != nil {
			t.Fatal(err)
		}
		arch, _ = w.Archive("s")
		if len(arch) != 2 || readFile(t, arch[1]) != "second" {
			t.Errorf("archive after a freeze with nothing kept %v", arch)
		}
	})
	t.Run("edited after the keep", func(t *testing.T) {
		w := openTemp(t)
		p, err := w.Freeze("s", []byte("first"), t0)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.KeepHandoff("s", t0.Add(time.Second)); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("edited by a person"), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := w.Freeze("s", []byte("second"), t0.Add(2*time.Second)); err != nil {
			t.Fatal(err)
		}
		arch, _ := w.Archive("s")
		var got []string
		for _, a := range arch {
			got = append(got, readFile(t, a))
		}
		if strings.Join(got, "|") != "first|edited by a person" {
			t.Errorf("archived %q, want the kept copy, then the edit", got)
		}
	})
	t.Run("a link is not kept", func(t *testing.T) {
		w := openTemp(t)
		outside := filepath.Join(t.TempDir(), "secret")
		if err := os.WriteFile(outside, []byte("not flower's"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(outside, w.HandoffPath("s")); err != nil {
			t.Fatal(err)
		}
		if err := w.KeepHandoff("s", t0); err == nil {
			t.Error("a link where the handoff belongs was kept")
		}
		if arch, _ := w.Archive("s"); len(arch) != 0 {
			t.Errorf("archive %v holds the link's target", arch)
		}
	})
}

// TestWrittenHearsBeforeTheFileIsOnDisk: the receipt of a notes file is
// recorded before the file holds the new contents, so that a flower
// killed between the two never leaves a file of its own that a continue
// must refuse for want of a receipt.
func TestWrittenHearsBeforeTheFileIsOnDisk(t *testing.T) {
	w := openTemp(t)
	var heard []string
	w.Written = func(what, path string, data []byte) {
		b, err := os.ReadFile(path)
		if err == nil && bytes.Equal(b, data) {
			t.Errorf("%s %s already held what Written heard of", what, path)
		}
		heard = append(heard, what)
	}
	for i, doc := range []string{"first handoff", "second handoff"} {
		if _, err := w.Freeze("main", []byte(doc), t0.Add(time.Duration(i)*time.Second)); err != nil {
			t.Fatal(err)
		}
	}
	for _, task := range []string{"a task", "an edited task"} {
		if _, err := w.FreezeTask("main", []byte(task), t0); err != nil {
			t.Fatal(err)
		}
	}
	if want := []string{"handoff file", "handoff file", "task file", "task file"}; !slices.Equal(heard, want) {
		t.Errorf("Written heard %q, want %q", heard, want)
	}
	if got := readFile(t, w.HandoffPath("main")); got != "second handoff" {
		t.Errorf("handoff file holds %q", got)
	}
}
