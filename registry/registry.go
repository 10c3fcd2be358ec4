// Package registry owns the per-user registry of live flowers that
// `flower ps` lists (DESIGN.md «Live registry»): one small file per running
// flower, written when it starts, rewritten as it goes, removed when it
// exits. No daemon keeps it: a reader checks every entry against the live
// process (its pid and its start time, so a reused pid is not mistaken for
// it) and removes the entries of flowers that died without removing their
// own (killed with -9, say).
//
// The files are read as untrusted input: only regular files with the
// registry's name pattern, opened without following links, at most
// MaxEntrySize bytes each, in a directory that is the user's own and
// private.
package registry

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// EnvDir names the environment variable that sets the registry's
// directory; without it the registry is $XDG_RUNTIME_DIR/flower/ps, else
// $XDG_CACHE_HOME/flower/ps, else ~/.cache/flower/ps.
const EnvDir = "FLOWER_PS_DIR"

// MaxEntrySize bounds what is read of one entry file.
const MaxEntrySize = 64 << 10

// The fronts an entry names.
const (
	FrontHeadless    = "headless"
	FrontInteractive = "interactive"
	FrontRelay       = "relay"
	FrontWorker      = "worker"
	FrontCodex       = "codex"
	FrontGemini      = "gemini"
)

// The statuses an entry says.
const (
	StatusStarting  = "starting"
	StatusWorking   = "working"
	StatusNear      = "near the handoff"
	StatusWriting   = "writing a handoff"
	StatusHandedOff = "handed off"
	StatusRetrying  = "retrying"
	StatusLimit     = "waiting for a limit"
	StatusAPIRetry  = "waiting to retry the API"
	StatusTurnEnded = "turn ended"
)

// Entry is what one live flower says about itself.
type Entry struct {
	PID int `json:"pid"`
	// Slot tells apart the generations one process runs at once (a
	// worker's); 0 for a flower that runs one step.
	Slot int `json:"slot,omitempty"`
	// ProcStart is the process's start time as the kernel counts it
	// (clock ticks since boot, /proc/PID/stat field 22): with the pid it
	// names one process, never a later one that reuses the pid.
	ProcStart uint64    `json:"proc_start"`
	Front     string    `json:"front"`
	Workspace string    `json:"workspace"`
	Step      string    `json:"step"`
	RunDir    string    `json:"run_dir"`
	Started   time.Time `json:"started"`
	Updated   time.Time `json:"updated"`

	Generation int     `json:"generation"`
	SessionID  string  `json:"session_id,omitempty"`
	Context    int     `json:"context"`
	Window     int     `json:"window"`
	At         int     `json:"at"` // the handoff threshold
	CostUSD    float64 `json:"cost_usd"`
	// LastResponse is when the main thread's latest API response arrived;
	// zero before the first.
	LastResponse time.Time `json:"last_response,omitzero"`
	Status       string    `json:"status"`
}

// ToHandoff is how many tokens the context is from the handoff threshold;
// 0 when the threshold is unknown or passed.
func (e Entry) ToHandoff() int {
	if e.At <= 0 || e.Context >= e.At {
		return 0
	}
	return e.At - e.Context
}

// Dir is the registry's directory for env (a process environment): the
// EnvDir variable, else $XDG_RUNTIME_DIR/flower/ps, else
// $XDG_CACHE_HOME/flower/ps, else $HOME/.cache/flower/ps.
func Dir(env []string) (string, error) {
	get := func(k string) string {
		for i := len(env) - 1; i >= 0; i-- {
			if v, ok := strings.CutPrefix(env[i], k+"="); ok {
				return v
			}
		}
		return ""
	}
	if d := get(EnvDir); d != "" {
		return filepath.Abs(d)
	}
	if d := get("XDG_RUNTIME_DIR"); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, "flower", "ps"), nil
	}
	if d := get("XDG_CACHE_HOME"); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, "flower", "ps"), nil
	}
	home := get("HOME")
	if home == "" {
		var err error
		if home, err = os.UserHomeDir(); err != nil {
			return "", fmt.Errorf("registry: no home directory: %w", err)
		}
	}
	return filepath.Join(home, ".cache", "flower", "ps"), nil
}

// ensureDir makes dir (0700) and checks that it is a directory of this
// user's that nobody else can write or read: entries name workspaces.
func ensureDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("registry: %w", err)
	}
	return checkDir(dir)
}

func checkDir(dir string) error {
	fi, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("registry: %w", err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("registry: %s is not a directory", dir)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Geteuid() {
		return fmt.Errorf("registry: %s belongs to uid %d, not this user", dir, st.Uid)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		if err := os.Chmod(dir, 0o700); err != nil {
			return fmt.Errorf("registry: %s is open to others: %w", dir, err)
		}
	}
	return nil
}

// fileName is the entry file of pid's slot.
func fileName(pid, slot int) string {
	if slot > 0 {
		return strconv.Itoa(pid) + "-" + strconv.Itoa(slot) + ".json"
	}
	return strconv.Itoa(pid) + ".json"
}

// parseName reads pid and slot back from an entry file's name; ok is false
// for any other name (a temporary file, a stranger's).
func parseName(name string) (pid, slot int, ok bool) {
	base, found := strings.CutSuffix(name, ".json")
	if !found {
		return 0, 0, false
	}
	pidText, slotText, hasSlot := strings.Cut(base, "-")
	pid, err := strconv.Atoi(pidText)
	if err != nil || pid <= 0 {
		return 0, 0, false
	}
	if hasSlot {
		if slot, err = strconv.Atoi(slotText); err != nil || slot <= 0 {
			return 0, 0, false
		}
	}
	return pid, slot, fileName(pid, slot) == name
}

// Handle is this process's entry, kept up to date. Its methods are safe for
// concurrent use; a nil Handle does nothing (a flower whose registry could
// not be opened runs all the same, unlisted).
type Handle struct {
	path string
	// every bounds how often the file is rewritten.
	every time.Duration

	mu     sync.Mutex
	e      Entry
	dirty  bool
	closed bool
	wake   chan struct{}
	done   chan struct{}
}

// Register writes this process's entry into the registry in dir (see Dir)
// and keeps it there until Close, rewriting it at most every interval
// after Update changed it.
func Register(dir string, e Entry, interval time.Duration) (*Handle, error) {
	if err := ensureDir(dir); err != nil {
		return nil, err
	}
	pid := os.Getpid()
	start, err := procStart(pid)
	if err != nil {
		return nil, fmt.Errorf("registry: %w", err)
	}
	now := time.Now()
	e.PID, e.ProcStart, e.Started, e.Updated = pid, start, now, now
	if e.Status == "" {
		e.Status = StatusStarting
	}
	if e.Slot < 0 {
		e.Slot = 0
	}
	h := &Handle{path: filepath.Join(dir, fileName(pid, e.Slot)), every: interval, e: e,
		wake: make(chan struct{}, 1), done: make(chan struct{})}
	if err := h.write(e); err != nil {
		return nil, err
	}
	go h.loop()
	return h, nil
}

// Update changes the entry with f; the file follows within the interval.
func (h *Handle) Update(f func(*Entry)) {
	if h == nil {
		return
	}
	h.mu.Lock()
	if !h.closed {
		f(&h.e)
		h.e.Updated = time.Now()
		h.dirty = true
	}
	h.mu.Unlock()
	select {
	case h.wake <- struct{}{}:
	default:
	}
}

// Entry is the entry as it is now.
func (h *Handle) Entry() Entry {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.e
}

// Close removes the entry; it is safe to call twice.
func (h *Handle) Close() error {
	if h == nil {
		return nil
	}
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil
	}
	h.closed = true
	h.mu.Unlock()
	close(h.done)
	if err := os.Remove(h.path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("registry: %w", err)
	}
	return nil
}

func (h *Handle) loop() {
	for {
		select {
		case <-h.done:
			return
		case <-h.wake:
		}
		h.mu.Lock()
		e, dirty, closed := h.e, h.dirty, h.closed
		h.dirty = false
		h.mu.Unlock()
		if closed {
			return
		}
		if dirty {
			_ = h.write(e) // best effort: the next update tries again
		}
		select {
		case <-h.done:
			return
		case <-time.After(h.every):
		}
	}
}

// write replaces the entry file: a temporary file in the same directory,
// renamed over it, so a reader sees the old entry or the new one. The
// entry is scratch state: no fsync.
func (h *Handle) write(e Entry) error {
	data, err := json.Marshal(e)
	if err != nil {
		return fmt.Errorf("registry: %w", err)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil
	}
	tmp := h.path + ".tmp"
	// Made new, never opened as found: whatever has the name (a hard link
	// to another file, a FIFO) loses the name and is not written through
	// (DESIGN.md «Territory»).
	if err := os.Remove(tmp); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("registry: %w", err)
	}
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0o600)
	if err != nil {
		return fmt.Errorf("registry: %w", err)
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, h.path)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("registry: %w", err)
	}
	return nil
}

// List returns the live flowers in the registry in dir, sorted by
// workspace, step and pid, and removes the entries of processes that are
// gone. A missing registry is an empty one.
func List(dir string) ([]Entry, error) {
	if _, err := os.Lstat(dir); errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err := checkDir(dir); err != nil {
		return nil, err
	}
	des, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("registry: %w", err)
	}
	var out []Entry
	for _, de := range des {
		name := de.Name()
		pid, slot, ok := parseName(name)
		if !ok {
			continue // not an entry (a temporary file, or a stranger's)
		}
		path := filepath.Join(dir, name)
		e, err := readEntry(path)
		if err != nil || e.PID != pid || e.Slot != slot {
			// Unreadable, or not what its name says: an entry a flower
			// is writing is never seen half-written (rename), so this
			// one is garbage, unless its process lives.
			if !alive(pid, 0) {
				os.Remove(path)
			}
			continue
		}
		if !alive(e.PID, e.ProcStart) {
			os.Remove(path) // killed without removing its entry
			continue
		}
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Workspace != b.Workspace {
			return a.Workspace < b.Workspace
		}
		if a.Step != b.Step {
			return a.Step < b.Step
		}
		if a.PID != b.PID {
			return a.PID < b.PID
		}
		return a.Slot < b.Slot
	})
	return out, nil
}

// readEntry reads one entry file: a regular file, not followed through a
// link, at most MaxEntrySize bytes.
func readEntry(path string) (Entry, error) {
	var e Entry
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return e, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return e, err
	}
	if !fi.Mode().IsRegular() {
		return e, fmt.Errorf("%s is not a regular file", path)
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxEntrySize+1))
	if err != nil {
		return e, err
	}
	if len(data) > MaxEntrySize {
		return e, fmt.Errorf("%s is larger than %d bytes", path, MaxEntrySize)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&e); err != nil {
		return e, err
	}
	return e, nil
}

// alive reports whether pid runs and, when start is not 0, started at
// start (so it is the process that wrote the entry, not a later one with
// its pid).
func alive(pid int, start uint64) bool {
	got, err := procStart(pid)
	if err != nil {
		return false
	}
	return start == 0 || got == start
}
