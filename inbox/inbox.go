// Package inbox owns the one channel by which other processes tell a
// running flower something (DESIGN.md «Inbox»): flower's PreCompact hook
// reports a compaction it blocked, and `flower handoff now` asks for a
// handoff. Each message is a small file in <run dir>/inbox/<step>/, which
// the running flower reads and removes. The directory lives in a workspace
// written by strangers, so nothing here follows a link or reads more than
// MaxRequest bytes, and a request older than the flower that reads it (left
// by a crash) is dropped, never acted on.
package inbox

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"
	"unicode"

	"github.com/flowerhq/flower/workbench"
	"golang.org/x/sys/unix"
)

// Kinds of request.
const (
	// KindHandoff asks for a handoff at the next message boundary.
	KindHandoff = "handoff"
	// KindCompact reports a compaction the PreCompact hook blocked.
	KindCompact = "compact"
)

// MaxRequest bounds a request file; a larger one is removed unread.
const MaxRequest = 4096

// maxPerScan bounds how many entries one scan looks at.
const maxPerScan = 256

const suffix = ".req"

// Request is one message to the running flower.
type Request struct {
	Kind string `json:"kind"`
	// Trigger is a compaction's: "manual" (a /compact) or "auto".
	Trigger string `json:"trigger,omitempty"`
	// Session is the harness session the hook ran in.
	Session string `json:"session,omitempty"`
	// From says who asked, for the record ("flower handoff now").
	From string `json:"from,omitempty"`
	// At is when the request was made.
	At time.Time `json:"at"`
	// Name is the request's file name (set by Post and Scan).
	Name string `json:"-"`
}

// Dir is the inbox of one step of a run.
func Dir(runDir, step string) string {
	return filepath.Join(runDir, "inbox", workbench.SafeStepName(step))
}

// ErrNotDir is returned for an inbox path that is a link or not a directory.
var ErrNotDir = errors.New("inbox is not a plain directory")

// Prepare makes the inbox of a step that is about to run and empties it:
// whatever is there was left by an earlier flower and must not fire now.
func Prepare(dir string) error {
	box, err := openBox(dir, true)
	if err != nil {
		return err
	}
	defer box.Close()
	for {
		ents, err := box.list(maxPerScan)
		for _, e := range ents {
			_ = box.remove(e.Name())
		}
		if err != nil || len(ents) == 0 {
			return nil
		}
	}
}

// Post leaves r in the inbox dir and returns its file name. The file is
// written under a temporary name, created new (never through a link), then
// renamed, so a reader sees it whole or not at all.
func Post(dir string, r Request) (string, error) {
	box, err := open(dir)
	if err != nil {
		return "", err
	}
	defer box.Close()
	if r.At.IsZero() {
		r.At = time.Now()
	}
	b, err := json.Marshal(r)
	if err != nil {
		return "", fmt.Errorf("encode request: %w", err)
	}
	var nonce [6]byte
	_, _ = rand.Read(nonce[:])
	name := fmt.Sprintf("%d-%d-%s%s", r.At.UnixNano(), os.Getpid(), hex.EncodeToString(nonce[:]), suffix)
	tmp := "." + name + ".tmp"
	f, err := box.openFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return "", fmt.Errorf("write request: %w", err)
	}
	_, werr := f.Write(b)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = box.rename(tmp, name)
	}
	if werr != nil {
		_ = box.remove(tmp)
		return "", fmt.Errorf("write request: %w", werr)
	}
	posted(dir)
	return name, nil
}

// Taken reports whether the request named name has been dealt with (its
// file is gone).
func Taken(dir, name string) bool {
	box, err := open(dir)
	if err != nil {
		return true // nothing there can be taken any more
	}
	defer box.Close()
	_, err = box.lstat(name)
	return errors.Is(err, os.ErrNotExist)
}

// Withdraw removes a request nobody took.
func Withdraw(dir, name string) { remove(dir, name) }

// Done removes a request the reader has dealt with: its poster, waiting
// on Taken, goes on.
func Done(dir, name string) { remove(dir, name) }

func remove(dir, name string) {
	if box, err := open(dir); err == nil {
		_ = box.remove(name)
		box.Close()
	}
}

// Reader reads one inbox. It is used from one goroutine.
type Reader struct {
	dir   string
	since time.Time
	log   *slog.Logger
	seen  map[string]bool // delivered, not yet Done
}

// NewReader reads dir; a request made before since is dropped (a crash left
// it).
func NewReader(dir string, since time.Time, log *slog.Logger) *Reader {
	return &Reader{dir: dir, since: since, log: log, seen: map[string]bool{}}
}

// Scan returns the requests in the inbox not returned before, oldest
// first; each stays
// until Done is called for it. An entry that is not a small plain file, a
// request that cannot be read and a stale request are removed.
func (rd *Reader) Scan() []Request {
	box, err := open(rd.dir)
	if err != nil {
		return nil
	}
	defer box.Close()
	ents, _ := box.list(maxPerScan)
	// A name starts with the time it was made: in name order, requests
	// come in the order they were made.
	slices.SortFunc(ents, func(a, b os.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	present := map[string]bool{}
	var out []Request
	for _, e := range ents {
		name := e.Name()
		if !strings.HasSuffix(name, suffix) || strings.HasPrefix(name, ".") {
			continue
		}
		present[name] = true
		if rd.seen[name] {
			continue
		}
		r, err := read(box, name)
		switch {
		case err != nil:
			_ = box.remove(name)
			rd.log.Warn("inbox: request dropped", "name", name, "err", err)
			continue
		case r.At.Before(rd.since):
			_ = box.remove(name)
			rd.log.Info("inbox: stale request dropped", "name", name, "at", r.At)
			continue
		}
		r.Name = name
		rd.seen[name] = true
		out = append(out, r)
	}
	for name := range rd.seen {
		if !present[name] && len(ents) < maxPerScan {
			delete(rd.seen, name)
		}
	}
	return out
}

func read(box *box, name string) (Request, error) {
	st, err := box.lstat(name)
	if err != nil {
		return Request{}, err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return Request{}, errors.New("not a plain file")
	}
	if st.Size > MaxRequest {
		return Request{}, fmt.Errorf("larger than %d bytes", MaxRequest)
	}
	f, err := box.openFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return Request{}, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, MaxRequest+1))
	if err != nil {
		return Request{}, err
	}
	if len(b) > MaxRequest {
		return Request{}, fmt.Errorf("larger than %d bytes", MaxRequest)
	}
	var r Request
	if err := json.Unmarshal(b, &r); err != nil {
		return Request{}, err
	}
	switch r.Kind {
	case KindHandoff, KindCompact:
	default:
		return Request{}, fmt.Errorf("unknown kind %q", r.Kind)
	}
	// Anyone who can write to the workspace can write here: what is shown
	// to a person is printable and short.
	r.Trigger, r.Session, r.From = printable(r.Trigger, 16), printable(r.Session, 100), printable(r.From, 80)
	return r, nil
}

func printable(s string, n int) string {
	var b strings.Builder
	for _, c := range s {
		if b.Len() >= n {
			break
		}
		if unicode.IsPrint(c) {
			b.WriteRune(c)
		}
	}
	return b.String()
}
