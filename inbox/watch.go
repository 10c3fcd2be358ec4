package inbox

import (
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"
)

// queueCap bounds the requests heard and not yet taken.
const queueCap = 64

// Poll is how often a watcher of files reads the inbox even when the
// directory's watch says nothing: on NFS or FUSE a file another machine
// or process renamed in raises no event, as a missed watch cannot either
// (the transcript and state-file watchers poll for the same reason).
const Poll = time.Second

// Watcher hears one inbox: it reads the inbox when a request is posted
// there, and once a Poll where the directory's watch may be silent
// (DESIGN.md «Inbox»). A request of another process shows as a file
// renamed into the directory (fsnotify); one this process posts (Post)
// wakes the watcher itself. One goroutine owns the file watch and the
// Reader.
type Watcher struct {
	dir   string
	rd    *Reader
	log   *slog.Logger
	fw    *fsnotify.Watcher // nil: this process's posts only
	out   chan Request
	poke  chan struct{}
	stop  chan struct{}
	done  chan struct{}
	close sync.Once
}

// Watch hears dir; a request made before since is dropped (NewReader).
// With files false it hears only what this process posts, and watches no
// file: for tests on a fake clock (testing/synctest), beside which a file
// watch, blocked on I/O, would keep the clock from moving.
func Watch(dir string, since time.Time, files bool, log *slog.Logger) (*Watcher, error) {
	w := &Watcher{dir: filepath.Clean(dir), rd: NewReader(dir, since, log), log: log,
		out: make(chan Request, queueCap), poke: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	if files {
		fw, err := fsnotify.NewWatcher()
		if err != nil {
			return nil, err
		}
		if err := fw.Add(dir); err != nil {
			fw.Close()
			return nil, err
		}
		w.fw = fw
	}
	listen(w)
	go w.run()
	return w, nil
}

// Requests is where the requests heard come, each once, oldest first
// among those found together; each stays in the inbox until Done.
func (w *Watcher) Requests() <-chan Request { return w.out }

// Close stops hearing the inbox; Requests is not closed.
func (w *Watcher) Close() {
	w.close.Do(func() {
		unlisten(w)
		close(w.stop)
		<-w.done
	})
}

func (w *Watcher) run() {
	defer close(w.done)
	var events <-chan fsnotify.Event
	var errs <-chan error
	var poll <-chan time.Time
	if w.fw != nil {
		defer w.fw.Close()
		events, errs = w.fw.Events, w.fw.Errors
		t := time.NewTicker(Poll)
		defer t.Stop()
		poll = t.C
	}
	w.scan() // what was posted before the watch began
	for {
		select {
		case <-w.stop:
			return
		case ev := <-events:
			if ev.Has(fsnotify.Create) && strings.HasSuffix(ev.Name, suffix) {
				w.scan()
			}
		case err := <-errs:
			// An overflow lost events: read now for what they said.
			w.log.Debug("inbox watch", "err", err)
			w.scan()
		case <-w.poke:
			w.scan()
		case <-poll:
			w.scan() // a watch that stays silent (NFS, FUSE)
		}
	}
}

func (w *Watcher) scan() {
	for _, r := range w.rd.Scan() {
		select {
		case w.out <- r:
		default:
			w.log.Warn("inbox: too many requests waiting; dropped one", "kind", r.Kind)
			Done(w.dir, r.Name)
		}
	}
}

// The watchers of this process, by directory: Post wakes them.
var (
	listenMu  sync.Mutex
	listeners = map[string][]*Watcher{}
)

func listen(w *Watcher) {
	listenMu.Lock()
	defer listenMu.Unlock()
	listeners[w.dir] = append(listeners[w.dir], w)
}

func unlisten(w *Watcher) {
	listenMu.Lock()
	defer listenMu.Unlock()
	ws := listeners[w.dir]
	for i, x := range ws {
		if x == w {
			listeners[w.dir] = append(ws[:i:i], ws[i+1:]...)
			break
		}
	}
	if len(listeners[w.dir]) == 0 {
		delete(listeners, w.dir)
	}
}

// posted wakes this process's watchers of dir.
func posted(dir string) {
	listenMu.Lock()
	defer listenMu.Unlock()
	for _, w := range listeners[filepath.Clean(dir)] {
		select {
		case w.poke <- struct{}{}:
		default:
		}
	}
}
