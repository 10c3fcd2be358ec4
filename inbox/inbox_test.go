package inbox

import (
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestPostScanDone(t *testing.T) {
	dir := Dir(t.TempDir(), "my step")
	if err := Prepare(dir); err != nil {
		t.Fatal(err)
	}
	rd := NewReader(dir, time.Now().Add(-time.Second), slog.New(slog.DiscardHandler))
	name, err := Post(dir, Request{Kind: KindHandoff, From: "test"})
	if err != nil {
		t.Fatal(err)
	}
	got := rd.Scan()
	if len(got) != 1 || got[0].Kind != KindHandoff || got[0].Name != name {
		t.Fatalf("scan %+v", got)
	}
	if again := rd.Scan(); len(again) != 0 {
		t.Errorf("a request was delivered twice: %+v", again)
	}
	if Taken(dir, name) {
		t.Error("taken before Done")
	}
	Done(dir, name)
	if !Taken(dir, name) {
		t.Error("not taken after Done")
	}
}

func TestStaleAndHostileEntries(t *testing.T) {
	root := t.TempDir()
	dir := Dir(root, "s")
	if err := Prepare(dir); err != nil {
		t.Fatal(err)
	}
	// Left by a crash: stale, never delivered.
	if _, err := Post(dir, Request{Kind: KindHandoff, At: time.Now().Add(-time.Hour)}); err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(root, "outside.json")
	if err := os.WriteFile(outside, []byte(`{"kind":"handoff","at":"2999-01-01T00:00:00Z"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, "link.req")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo.req"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "big.req"), []byte(`{"kind":"handoff","x":"`+strings.Repeat("a", MaxRequest)+`"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "odd.req"), []byte(`{"kind":"rm -rf"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	rd := NewReader(dir, time.Now(), slog.New(slog.DiscardHandler))
	done := make(chan []Request)
	go func() { done <- rd.Scan() }()
	select {
	case got := <-done:
		if len(got) != 0 {
			t.Errorf("delivered %+v", got)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Scan blocked (on the FIFO?)")
	}
	if _, err := os.Stat(outside); err != nil {
		t.Errorf("the link's target was touched: %v", err)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 0 {
		t.Errorf("left in the inbox: %v", ents)
	}
}

func TestPrepareEmptiesAndRefusesLinks(t *testing.T) {
	root := t.TempDir()
	dir := Dir(root, "s")
	if err := Prepare(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := Post(dir, Request{Kind: KindCompact}); err != nil {
		t.Fatal(err)
	}
	if err := Prepare(dir); err != nil {
		t.Fatal(err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("Prepare left %v", ents)
	}
	other := filepath.Join(root, "elsewhere")
	if err := os.Mkdir(other, 0o700); err != nil {
		t.Fatal(err)
	}
	linked := Dir(root, "t")
	if err := os.Symlink(other, linked); err != nil {
		t.Fatal(err)
	}
	if err := Prepare(linked); err == nil {
		t.Error("Prepare accepted a link")
	}
	if _, err := Post(linked, Request{Kind: KindHandoff}); err == nil {
		t.Error("Post wrote through a link")
	}
	if ents, _ := os.ReadDir(other); len(ents) != 0 {
		t.Errorf("written through the link: %v", ents)
	}
}

// A link planted in place of the inbox's parent (inside the workspace, so
// anyone there can) leads nowhere: nothing is written through it.
func TestParentLinkRefused(t *testing.T) {
	root := t.TempDir()
	run := filepath.Join(root, "run")
	other := filepath.Join(root, "other")
	for _, d := range []string{run, filepath.Join(other, "s")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(other, filepath.Join(run, "inbox")); err != nil {
		t.Fatal(err)
	}
	dir := Dir(run, "s")
	if err := Prepare(dir); err == nil {
		t.Error("Prepare accepted a linked parent")
	}
	if _, err := Post(dir, Request{Kind: KindHandoff}); err == nil {
		t.Error("Post wrote through a linked parent")
	}
	if ents, _ := os.ReadDir(filepath.Join(other, "s")); len(ents) != 0 {
		t.Errorf("written through the link: %v", ents)
	}
}

// A FIFO or a file where the inbox's folder belongs is refused at once,
// never waited on, and nothing is made in its place.
func TestInboxNotAFolderRefused(t *testing.T) {
	root := t.TempDir()
	fifo, file := Dir(root, "f"), Dir(root, "p")
	if err := os.MkdirAll(filepath.Dir(fifo), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{fifo, file} {
		done := make(chan error, 1)
		go func() { done <- Prepare(dir) }()
		select {
		case err := <-done:
			if !errors.Is(err, ErrNotDir) {
				t.Errorf("Prepare(%s): %v, want ErrNotDir", dir, err)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("Prepare(%s) blocked", dir)
		}
		if _, err := Post(dir, Request{Kind: KindHandoff}); !errors.Is(err, ErrNotDir) {
			t.Errorf("Post(%s): %v, want ErrNotDir", dir, err)
		}
	}
}
