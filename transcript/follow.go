package transcript

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"
)

// An interactive harness has no stdout flower can read: its screen belongs to
// the person. What it says of the session goes to a transcript file instead,
// appended line by line as the session runs (DESIGN.md «Transcript file»):
//
//	<config dir>/projects/<Slug(cwd)>/<session id>.jsonl
//
// Its lines are the stream-json records' cousins: "user" and "assistant"
// (with message.usage), "system" (subtype "turn_duration" closes a turn that
// ended on its own), bookkeeping lines ("mode", "last-prompt", "attachment",
// "api-request", …), and a final "cost-state" with totalCostUSD when the
// harness exits. The session id is spelled "sessionId", and a subagent's
// lines carry "isSidechain": true (2.1.328 writes them to a separate file
// under <session id>/subagents/, so the main file holds the main thread).

// ConfigDir is where the harness keeps its state for a child environment
// env (KEY=VALUE entries, later ones winning): $CLAUDE_CONFIG_DIR when set,
// else $HOME/.claude. It is "" when neither is known.
func ConfigDir(env []string) string {
	var home, conf string
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		switch k {
		case "HOME":
			home = v
		case "CLAUDE_CONFIG_DIR":
			conf = v
		}
	}
	switch {
	case conf != "":
		return conf
	case home != "":
		return filepath.Join(home, ".claude")
	}
	return ""
}

// Slug is the name of a working directory's transcript folder: every
// character other than an ASCII letter or digit becomes "-" (observed:
// /tmp/explore/my.dir_x → -tmp-explore-my-dir-x).
func Slug(cwd string) string {
	b := []byte(cwd)
	for i, c := range b {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9') {
			b[i] = '-'
		}
	}
	return string(b)
}

// ProjectDir is the folder holding the transcripts of sessions run in cwd.
func ProjectDir(configDir, cwd string) string {
	return filepath.Join(configDir, "projects", Slug(cwd))
}

// FilePath is the transcript of one session run in cwd.
func FilePath(configDir, cwd, sessionID string) string {
	return filepath.Join(ProjectDir(configDir, cwd), sessionID+".jsonl")
}

// DefaultPoll is how often a Follower looks at its file even when fsnotify
// says nothing: a watch can be missed (the folder did not exist yet, an
// editor-style replace), a poll cannot.
const DefaultPoll = 250 * time.Millisecond

// FollowOptions configure a Follower. The zero value is usable.
type FollowOptions struct {
	// Poll is the fallback polling interval (DefaultPoll when zero).
	Poll time.Duration
	// MaxLine bounds one line (DefaultMaxLine when zero); longer lines are
	// skipped and counted.
	MaxLine int
	// Logger receives skipped lines and watcher trouble (discarded when nil).
	Logger *slog.Logger
}

// Follower tails one transcript file as the harness appends to it, from its
// first line, and decodes each complete line. The file and its folder may
// not exist yet when following starts. One goroutine owns the file, the
// watcher and the partial line; the consumer reads Events.
type Follower struct {
	path   string
	poll   time.Duration
	max    int
	log    *slog.Logger
	events chan Event
	done   chan struct{}
	err    error // valid after done is closed

	// owned by the run goroutine
	f        *os.File
	offset   int64
	pending  []byte
	skipping bool // dropping the rest of a line over the limit
	lines    int
	skipped  int
	watching string // the folder the watcher has, "" for none
}

// Follow starts following path until ctx is done. Events are delivered in
// file order on Events, which is closed when following stops.
func Follow(ctx context.Context, path string, opts FollowOptions) (*Follower, error) {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, fmt.Errorf("follow transcript: %w", err)
	}
	f := &Follower{
		path:   path,
		poll:   opts.Poll,
		max:    opts.MaxLine,
		log:    opts.Logger,
		events: make(chan Event, 256),
		done:   make(chan struct{}),
	}
	if f.poll <= 0 {
		f.poll = DefaultPoll
	}
	if f.max <= 0 {
		f.max = DefaultMaxLine
	}
	if f.log == nil {
		f.log = slog.New(slog.DiscardHandler)
	}
	go f.run(ctx, w)
	return f, nil
}

// Path is the file being followed.
func (f *Follower) Path() string { return f.path }

// Events delivers the decoded lines. Lines that are not JSON objects are
// skipped. Each Event's Raw is its own copy.
func (f *Follower) Events() <-chan Event { return f.events }

// Done is closed when following has stopped and Events is closed.
func (f *Follower) Done() <-chan struct{} { return f.done }

// Err is why following stopped (ctx's error, or a read error); valid after
// Done is closed.
func (f *Follower) Err() error {
	<-f.done
	return f.err
}

func (f *Follower) run(ctx context.Context, w *fsnotify.Watcher) {
	defer func() {
		w.Close()
		if f.f != nil {
			f.f.Close()
		}
		close(f.events)
		close(f.done)
	}()
	// Sends give up only a while after ctx is done: lines the harness wrote
	// before the end still reach a consumer that cancels once the harness
	// exited and reads Events until it is closed, while a consumer that
	// stopped reading cannot hold the goroutine for long.
	stop, cancelStop := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelStop()
	go func() {
		select {
		case <-ctx.Done():
			t := time.NewTimer(finalDrain)
			defer t.Stop()
			select {
			case <-t.C:
			case <-stop.Done():
			}
			cancelStop()
		case <-stop.Done():
		}
	}()
	tick := time.NewTicker(f.poll)
	defer tick.Stop()
	changes, problems := w.Events, w.Errors
	for ctx.Err() == nil {
		f.watch(w)
		if err := f.drain(stop); err != nil {
			f.err = err
			return
		}
		select {
		case <-ctx.Done():
		case <-tick.C:
		case _, ok := <-changes:
			if !ok {
				changes = nil // the poll carries on alone
			}
			// Any change in the folder is a reason to look.
		case err, ok := <-problems:
			if !ok {
				problems = nil
			} else {
				f.log.Warn("transcript watcher", "err", err)
			}
		}
	}
	if err := f.drain(stop); err != nil && stop.Err() == nil {
		f.err = err
		return
	}
	f.err = ctx.Err()
}

// finalDrain bounds how long lines are still delivered after the context
// is done.
const finalDrain = 2 * time.Second

// watch keeps the watcher on the file's folder once the folder exists.
func (f *Follower) watch(w *fsnotify.Watcher) {
	dir := filepath.Dir(f.path)
	if f.watching == dir {
		return
	}
	if err := w.Add(dir); err == nil {
		f.watching = dir
	}
}

// drain reads everything appended since the last call and sends the
// complete lines.
func (f *Follower) drain(ctx context.Context) error {
	if f.f == nil {
		file, err := os.Open(f.path)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("follow transcript: %w", err)
		}
		f.f = file
	}
	if fi, err := f.f.Stat(); err == nil && fi.Size() < f.offset {
		// The file was cut short: start over rather than read garbage.
		f.log.Warn("transcript shrank; reading it again", "path", f.path, "size", fi.Size(), "offset", f.offset)
		f.offset, f.pending, f.skipping = 0, f.pending[:0], false
	}
	buf := make([]byte, 64<<10)
	for {
		n, err := f.f.ReadAt(buf, f.offset)
		if n > 0 {
			f.offset += int64(n)
			if serr := f.split(ctx, buf[:n]); serr != nil {
				return serr
			}
		}
		if errors.Is(err, io.EOF) || n == 0 {
			return nil
		}
		if err != nil {
			return fmt.Errorf("follow transcript: %w", err)
		}
	}
}

// split cuts chunk into lines, keeping a trailing partial line for later: the
// harness may be caught halfway through writing one.
func (f *Follower) split(ctx context.Context, chunk []byte) error {
	for len(chunk) > 0 {
		i := bytes.IndexByte(chunk, '\n')
		if i < 0 {
			if !f.skipping {
				f.pending = append(f.pending, chunk...)
				if len(f.pending) > f.max {
					f.skipLine(len(f.pending))
					f.pending, f.skipping = f.pending[:0], true
				}
			}
			return nil
		}
		part := chunk[:i]
		chunk = chunk[i+1:]
		if f.skipping {
			f.skipping = false
			continue
		}
		line := append(f.pending, part...)
		f.pending = line[:0]
		if len(line) > f.max {
			f.skipLine(len(line))
			continue
		}
		if err := f.send(ctx, line); err != nil {
			return err
		}
	}
	return nil
}

func (f *Follower) skipLine(size int) {
	f.lines++
	f.skipped++
	f.log.Warn("transcript line too long; skipped", "path", f.path, "line", f.lines, "bytes", size)
}

func (f *Follower) send(ctx context.Context, line []byte) error {
	f.lines++
	line = bytes.TrimSuffix(line, []byte("\r"))
	if len(bytes.TrimSpace(line)) == 0 {
		return nil
	}
	ev, err := Decode(bytes.Clone(line))
	if err != nil {
		f.skipped++
		f.log.Warn("transcript line is not JSON; skipped", "path", f.path, "line", f.lines, "bytes", len(line))
		return nil
	}
	select {
	case f.events <- ev:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("follow transcript: nobody read line %d: %w", f.lines, ctx.Err())
	}
}
