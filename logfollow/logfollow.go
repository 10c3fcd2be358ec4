// Package logfollow is flower's one file follower: it follows a growing
// text file line by line, as `tail -F` does. It reads what is there, then
// each line appended, and survives the file being truncated (it starts
// again from the top) or replaced by a new file of the same name (it
// finishes the old one, then reads the new one); a file, or a folder, that
// appears later is waited for. It watches the file's directory with
// fsnotify, so it sees a replacement, and also looks at the file on a slow
// timer where notifications may never arrive: before the directory exists,
// and on a network or userspace file system (Notified). On a local one
// nothing wakes it while the file stays as it is. The file is
// opened as flower opens its own (DESIGN.md «Territory»: never through a
// link, never a FIFO or a device), and one line is bounded (DESIGN.md
// «Input caps»). Its callers are `flower logs -f` (a run's flower.log) and
// the interactive front (the harness's transcript, through
// transcript.Follow).
package logfollow

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/flowerhq/flower/safefile"
)

// DefaultPoll is how often Follow looks at the file when no notification
// arrived; it bounds the delay where notifications do not work.
const DefaultPoll = 500 * time.Millisecond

// Options tune Follow. The zero value is ready to use.
type Options struct {
	// Poll is the fallback interval between looks at the file
	// (DefaultPoll when zero).
	Poll time.Duration
	// MaxLine bounds one line (DefaultMaxLine when zero): the rest of a
	// longer one is dropped, never held, and Skipped stands in for it.
	MaxLine int
	// Skipped makes the line passed in place of one over MaxLine of n
	// bytes so far (a line saying so when nil); when it returns nil,
	// nothing is passed in its place.
	Skipped func(n int) []byte
}

// DefaultMaxLine is Options.MaxLine's default (DESIGN.md «Input caps»).
const DefaultMaxLine = 4 << 20

// Follow calls line with each complete line of the file at path, without
// its newline (a trailing "\r" is kept): first the lines already there,
// then each one appended, until ctx is done (Follow then returns nil) or
// line returns an error (Follow returns it). When ctx is done, Follow
// looks at the file once more, so that what was written before the end is
// passed on; a caller that must not wait on that look returns an error
// from line. The slice passed to line is only valid during the call.
//
// A last line without its newline is held until the newline comes; when
// the file is truncated or replaced first, the held text is passed on as
// a line, since nothing will complete it. A missing file is waited for.
// A truncation is noticed when the file is found shorter than what was
// read; one that is refilled beyond that point between two looks is not.
func Follow(ctx context.Context, path string, opts Options, line func([]byte) error) error {
	if opts.Poll <= 0 {
		opts.Poll = DefaultPoll
	}
	path = filepath.Clean(path)
	f := &follower{path: path, line: line, buf: make([]byte, 64<<10), max: opts.MaxLine, skipped: opts.Skipped}
	defer f.close()

	// Without a watcher the timer alone keeps following: slower, not wrong.
	w, err := fsnotify.NewWatcher()
	if err == nil {
		defer w.Close()
	}
	var events <-chan fsnotify.Event
	var errs <-chan error
	tick := time.NewTicker(opts.Poll)
	defer tick.Stop()
	looks := tick.C // nil once the watch alone tells of every change
	watch := func() {
		// The directory, not the file: a file's watch dies with the file
		// when it is replaced, while its directory sees the new one. A
		// directory that does not exist yet is watched once it does.
		if w != nil && events == nil && w.Add(filepath.Dir(path)) == nil {
			events, errs = w.Events, w.Errors
			if Notified(filepath.Dir(path)) {
				looks = nil
			}
		}
	}

	for {
		watch()
		if err := f.check(); err != nil {
			return err
		}
		for due := false; !due; {
			select {
			case <-ctx.Done():
				return f.check()
			case ev, ok := <-events:
				// Other files come and go in the directory (the manifest
				// is rewritten through temp files); only ours matters.
				due = !ok || filepath.Clean(ev.Name) == path
				if !ok {
					events, w, looks = nil, nil, tick.C
				}
			case _, ok := <-errs:
				// An overflow lost events; a look makes up for them.
				due = true
				if !ok {
					errs = nil
				}
			case <-looks:
				due = true
			}
		}
	}
}

// checked, when set (by tests), is called at each look at the file.
var checked func()

// follower is Follow's state; only Follow's goroutine touches it.
type follower struct {
	path    string
	line    func([]byte) error
	file    *os.File    // the file being read, nil before it exists
	info    os.FileInfo // file's identity, from when it was opened
	off     int64       // bytes of file read so far
	partial []byte      // a last line still waiting for its newline
	buf     []byte
	max     int              // bound of one line
	skipped func(int) []byte // what stands in for a longer one
	over    int              // bytes of a line over max so far, 0 if none
}

// check reads whatever is new: the rest of the open file, then, if another
// file now has the name, that one from the top.
func (f *follower) check() error {
	if checked != nil {
		checked()
	}
	named, err := os.Stat(f.path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("follow %s: %w", f.path, err)
	}
	if f.file != nil {
		if err := f.drain(); err != nil {
			return err
		}
		// Removed and not yet recreated: keep the old file, a writer may
		// still be appending to it.
		if named == nil || os.SameFile(named, f.info) {
			return nil
		}
		if err := f.flush(); err != nil {
			return err
		}
		f.close()
	}
	if named == nil {
		return nil
	}
	// Never a link, a FIFO or a device in the log's place.
	file, err := safefile.Open(f.path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil // gone again between the stat and the open
	}
	if err != nil {
		return fmt.Errorf("follow %s: %w", f.path, err)
	}
	info, err := file.Stat()
	if err != nil {
		file.Close()
		return fmt.Errorf("follow %s: %w", f.path, err)
	}
	f.file, f.info, f.off = file, info, 0
	return f.drain()
}

// drain reads the open file from where it left off to its end, starting
// again from the top if the file has become shorter than that.
func (f *follower) drain() error {
	info, err := f.file.Stat()
	if err != nil {
		return fmt.Errorf("follow %s: %w", f.path, err)
	}
	if info.Size() < f.off {
		if err := f.flush(); err != nil {
			return err
		}
		f.off = 0
	}
	for {
		n, err := f.file.ReadAt(f.buf, f.off)
		f.off += int64(n)
		if perr := f.split(f.buf[:n]); perr != nil {
			return perr
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("follow %s: %w", f.path, err)
		}
	}
}

// split passes on each complete line in b and keeps the rest.
func (f *follower) split(b []byte) error {
	for {
		if f.max <= 0 {
			f.max = DefaultMaxLine
		}
		if f.skipped == nil {
			f.skipped = func(n int) []byte {
				return fmt.Appendf(nil, "(a line of %d bytes, over the cap of %d, skipped)", n, f.max)
			}
		}
		i := bytes.IndexByte(b, '\n')
		if f.over > 0 || (i < 0 && len(f.partial)+len(b) > f.max) || (i >= 0 && len(f.partial)+i > f.max) {
			// Over the bound: counted, not held, until its newline.
			if f.over == 0 {
				f.over = len(f.partial)
				f.partial = f.partial[:0]
			}
			if i < 0 {
				f.over += len(b)
				return nil
			}
			n := f.over + i
			f.over = 0
			if l := f.skipped(n); l != nil {
				if err := f.line(l); err != nil {
					return err
				}
			}
			b = b[i+1:]
			continue
		}
		if i < 0 {
			f.partial = append(f.partial, b...)
			return nil
		}
		l := b[:i]
		if len(f.partial) > 0 {
			f.partial = append(f.partial, l...)
			l = f.partial
		}
		if err := f.line(l); err != nil {
			return err
		}
		f.partial = f.partial[:0]
		b = b[i+1:]
	}
}

// flush passes on a held partial line that nothing will complete.
func (f *follower) flush() error {
	if len(f.partial) == 0 {
		return nil
	}
	l := f.partial
	f.partial = nil
	return f.line(l)
}

func (f *follower) close() {
	if f.file != nil {
		f.file.Close()
		f.file, f.info = nil, nil
	}
}
