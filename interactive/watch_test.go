package interactive

import (
	"os"
	"testing"
	"time"

	"github.com/flowerhq/flower/logfollow"
	"github.com/flowerhq/flower/transcript"
)

// TestWatchLooksOnlyUntilEveryFolderIsWatched: the slow look runs while a
// folder the harness writes in is yet to be made, and stops once fsnotify
// watches them all on a local file system; a watched folder that goes
// brings it back until the folder is there again.
func TestWatchLooksOnlyUntilEveryFolderIsWatched(t *testing.T) {
	home := t.TempDir()
	if !logfollow.Notified(home) {
		t.Skipf("%s is on a file system fsnotify may not tell of: the look is kept there", home)
	}
	conf, cwd := home+"/.claude", "/work/project"
	project := transcript.ProjectDir(conf, cwd)
	w := newWatch(conf, cwd)
	defer w.close()
	if w.looks == nil {
		t.Fatal("no look while no folder exists yet")
	}
	for _, d := range []string{conf + "/sessions", project} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	waitWatch(t, w, func() bool { return w.looks == nil }, "the look to stop once every folder is watched")
	if err := os.RemoveAll(project); err != nil {
		t.Fatal(err)
	}
	waitWatch(t, w, func() bool { return w.looks != nil }, "the look to come back when the project folder goes")
	if err := os.MkdirAll(project, 0o755); err != nil {
		t.Fatal(err)
	}
	waitWatch(t, w, func() bool { return w.looks == nil }, "the look to stop again once the project folder is back")
}

// waitWatch takes w's notifications, as the session does, until cond
// holds.
func waitWatch(t *testing.T, w *watch, cond func() bool, what string) {
	t.Helper()
	deadline := time.After(5 * time.Second)
	for !cond() {
		select {
		case ev := <-w.events():
			w.saw(ev)
		case <-w.errors():
			w.ensure()
		case <-deadline:
			t.Fatalf("no %s within 5 s", what)
		}
	}
}
