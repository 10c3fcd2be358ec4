package inbox

import (
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestWatchHearsAnotherProcess: a request another process leaves (a file
// renamed into the inbox, which wakes no watcher of this process) is
// heard through the directory's watch.
func TestWatchHearsAnotherProcess(t *testing.T) {
	dir := Dir(t.TempDir(), "s")
	if err := Prepare(dir); err != nil {
		t.Fatal(err)
	}
	w, err := Watch(dir, time.Now().Add(-time.Second), true, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	name := "1-2-x" + suffix
	leave(t, dir, name, "another flower")
	select {
	case r := <-w.Requests():
		if r.Name != name || r.From != "another flower" {
			t.Errorf("heard %+v", r)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the request was not heard")
	}
}

// TestWatchHearsOwnPosts: without the directory's watch, a request this
// process posts wakes the watcher itself, once; one left before the watch
// began is heard too.
func TestWatchHearsOwnPosts(t *testing.T) {
	dir := Dir(t.TempDir(), "s")
	if err := Prepare(dir); err != nil {
		t.Fatal(err)
	}
	early, err := Post(dir, Request{Kind: KindCompact, Trigger: "auto"})
	if err != nil {
		t.Fatal(err)
	}
	w, err := Watch(dir, time.Now().Add(-time.Minute), false, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	late, err := Post(dir, Request{Kind: KindHandoff})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{early, late} {
		select {
		case r := <-w.Requests():
			if r.Name != want {
				t.Errorf("heard %s, want %s", r.Name, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s was not heard", want)
		}
	}
	select {
	case r := <-w.Requests():
		t.Errorf("heard %s twice", r.Name)
	case <-time.After(50 * time.Millisecond):
	}
}

// TestWatchPollsWhereTheWatchIsSilent: with the directory's watch deaf (as
// on NFS or FUSE, where another machine's rename raises no event), a
// request another process left is still heard, by the poll.
func TestWatchPollsWhereTheWatchIsSilent(t *testing.T) {
	dir := Dir(t.TempDir(), "s")
	if err := Prepare(dir); err != nil {
		t.Fatal(err)
	}
	w, err := Watch(dir, time.Now().Add(-time.Second), true, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := w.fw.Remove(dir); err != nil { // the watch hears nothing from now on
		t.Fatal(err)
	}
	name := "1-3-y" + suffix
	leave(t, dir, name, "another machine")
	select {
	case r := <-w.Requests():
		if r.Name != name {
			t.Errorf("heard %+v", r)
		}
	case <-time.After(10 * Poll):
		t.Fatal("the request was not heard by the poll")
	}
}

// leave leaves a request in dir as another process does: a file written
// aside, then renamed in.
func leave(t *testing.T, dir, name, from string) {
	t.Helper()
	b, _ := json.Marshal(Request{Kind: KindHandoff, From: from, At: time.Now()})
	tmp := filepath.Join(dir, "."+name+".tmp")
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, name)); err != nil {
		t.Fatal(err)
	}
}
