package interactive

import (
	"os"
	"path/filepath"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/flowerhq/flower/logfollow"
	"github.com/flowerhq/flower/transcript"
)

// lookEvery is the safety net under fsnotify: how often the session looks
// at the harness's files when no notification came. A notification is
// prompt where it works; it does not on every file system (a home folder
// on NFS or a FUSE mount sends none), nor before a folder exists to be
// watched. So the look runs until every folder is watched, and stays only
// where one is on such a file system (logfollow.Notified); an overflow of
// the kernel's queue is an error, which makes a look of its own.
// logfollow keeps the same net for the transcript itself.
const lookEvery = time.Second

// watch tells the session when to look at the harness's state file and
// transcript folder again: fsnotify on the folders they live in
// (<config dir>/sessions and the project folder under <config dir>/projects),
// each watched as soon as it exists (its parents are watched until then,
// so that its creation is seen), and the slow look above.
type watch struct {
	w      *fsnotify.Watcher // nil when fsnotify is unavailable
	dirs   []string          // the folders to watch, parents before children
	parent string            // watched until the config dir exists
	added  map[string]bool
	look   *time.Ticker
	// looks is look's channel while the look is needed, nil once fsnotify
	// alone tells of every change (ensure).
	looks <-chan time.Time
	// projects is <config dir>/projects: a folder made in it (a project
	// folder named otherwise than flower's slug) is watched too.
	projects string
}

func newWatch(configDir, cwd string) *watch {
	look := time.NewTicker(lookEvery)
	w := &watch{
		dirs:     []string{configDir, filepath.Join(configDir, "sessions"), filepath.Join(configDir, "projects"), transcript.ProjectDir(configDir, cwd)},
		parent:   filepath.Dir(configDir),
		added:    map[string]bool{},
		look:     look,
		looks:    look.C,
		projects: filepath.Join(configDir, "projects"),
	}
	if fw, err := fsnotify.NewWatcher(); err == nil {
		w.w = fw
	}
	w.ensure()
	return w
}

// ensure watches every folder of dirs that exists now.
func (w *watch) ensure() {
	if w.w == nil {
		return
	}
	for _, d := range w.dirs {
		if !w.added[d] && w.w.Add(d) == nil {
			w.added[d] = true
		}
	}
	switch {
	case !w.added[w.dirs[0]] && !w.added[w.parent]:
		if w.w.Add(w.parent) == nil {
			w.added[w.parent] = true
		}
	case w.added[w.dirs[0]] && w.added[w.parent]:
		_ = w.w.Remove(w.parent)
		delete(w.added, w.parent)
	}
	w.looks = nil
	for _, d := range w.dirs {
		if !w.added[d] || !logfollow.Notified(d) {
			w.looks = w.look.C
		}
	}
}

// events is nil without fsnotify (a nil channel never delivers).
func (w *watch) events() <-chan fsnotify.Event {
	if w.w == nil {
		return nil
	}
	return w.w.Events
}

func (w *watch) errors() <-chan error {
	if w.w == nil {
		return nil
	}
	return w.w.Errors
}

// saw takes one notification: a new folder may be one to watch. It
// reports whether the notification is worth a look: a change of a state
// file, or something made (a folder, a transcript); lines appended to a
// transcript are its follower's.
func (w *watch) saw(ev fsnotify.Event) bool {
	if ev.Has(fsnotify.Remove) || ev.Has(fsnotify.Rename) {
		// A watched folder that goes loses its watch: watched again once
		// it is back, and looked for meanwhile.
		delete(w.added, ev.Name)
	}
	if ev.Has(fsnotify.Create) && filepath.Dir(ev.Name) == w.projects && !w.added[ev.Name] {
		if fi, err := os.Lstat(ev.Name); err == nil && fi.IsDir() && w.w.Add(ev.Name) == nil {
			w.added[ev.Name] = true
		}
	}
	w.ensure()
	return filepath.Dir(ev.Name) == w.dirs[1] || ev.Has(fsnotify.Create) || ev.Has(fsnotify.Rename)
}

func (w *watch) close() {
	w.look.Stop()
	if w.w != nil {
		_ = w.w.Close()
	}
}
