// Package statusline is flower's segment of the harness's own status line
// in the interactive mode (DESIGN.md «Status line in the harness's
// screen»): the running flower folds its events into a small state file in
// the run dir (Writer), each harness is started with flower as its status
// line command (Launcher), and that command prints the line (Print).
package statusline

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/flowerhq/flower/atomicfile"
	"github.com/flowerhq/flower/console"
	"github.com/flowerhq/flower/event"
	"github.com/flowerhq/flower/front"
	"github.com/flowerhq/flower/levers"
	"github.com/flowerhq/flower/safefile"
	"github.com/flowerhq/flower/transcript"
)

// StateFile is the live state's name in the run dir.
const StateFile = "statusline.json"

// handoffShown is how long a handoff's announcement stays on the status
// line once the successor's harness starts.
const handoffShown = 12 * time.Second

// Bounds of `flower statusline`, which the harness runs every second: its
// stdin and the state file are small, and the person's own command gets a
// little time, never more.
const (
	maxStatusInput = 1 << 20
	maxStatusState = 64 << 10
	maxTheirs      = 64 << 10
	stdinWait      = time.Second
	theirsTimeout  = 2 * time.Second
)

// liveState is the live state file.
type liveState struct {
	Meter        string    `json:"meter"`
	CostUSD      float64   `json:"cost_usd"`
	Bounds       string    `json:"bounds,omitempty"`
	Handoff      string    `json:"handoff,omitempty"`
	HandoffUntil time.Time `json:"handoff_until,omitzero"`
}

// Writer keeps the state file up to date with the run's events.
type Writer struct {
	mu    sync.Mutex
	line  *console.ScreenLine
	path  string
	log   *slog.Logger
	now   func() time.Time
	until time.Time
	last  []byte
}

// NewWriter writes the state of runDir's run, as line shows it.
func NewWriter(runDir string, line *console.ScreenLine, log *slog.Logger) *Writer {
	return &Writer{line: line, path: filepath.Join(runDir, StateFile), log: log, now: time.Now}
}

// Path is the state file's.
func (w *Writer) Path() string { return w.path }

// Handle folds ev in and writes the state when what it shows changed. A
// handoff is announced from its end until handoffShown after the
// successor's harness started.
func (w *Writer) Handle(ev event.Event) {
	w.line.Handle(ev)
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case ev.Kind == event.KindHandoff && ev.Phase == event.PhaseDone:
		w.until = w.now().Add(3 * handoffShown)
	case ev.Kind == event.KindGeneration && !w.until.IsZero():
		w.until = w.now().Add(handoffShown)
	}
	st := liveState{Meter: w.line.Meter(), CostUSD: w.line.Cost(), Bounds: w.line.Bounds()}
	if !w.until.IsZero() {
		st.Handoff, st.HandoffUntil = w.line.Announcement(), w.until
	}
	b, _ := json.Marshal(st)
	if bytes.Equal(b, w.last) {
		return
	}
	if err := atomicfile.WriteFile(w.path, b, 0o600); err != nil {
		w.log.Warn("status line: the live state was not written", "err", err)
		return
	}
	w.last = b
}

// Text is flower's status line as it stands, for a screen that shows it
// elsewhere than in a status line of its own (the window's title).
func (w *Writer) Text() string {
	if a := w.line.Announcement(); a != "" && w.shown() {
		return "flower · " + a
	}
	return console.ScreenText(w.line.Meter(), w.line.Cost(), w.line.Bounds())
}

// shown: the latest handoff is still announced.
func (w *Writer) shown() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return !w.until.IsZero() && w.now().Before(w.until)
}

// Launcher starts each harness with flower's status line in its
// --settings: Binary (flower) run as `statusline --state State --lang
// Lang`, the person's own command passed on to it.
type Launcher struct {
	front.Launcher
	Binary string
	State  string
	Lang   console.Lang
	Log    *slog.Logger
}

// Launch implements front.Launcher.
func (l Launcher) Launch(ctx context.Context, s front.Spec) (front.Session, error) {
	args, err := levers.StatusLine(s.Args, s.Dir, transcript.ConfigDir(s.Env), l.command)
	if err != nil {
		l.Log.Warn("status line: left out", "err", err)
	}
	s.Args = args
	return l.Launcher.Launch(ctx, s)
}

// command is the harness's status line command: flower itself, running
// theirs (the person's own command) too.
func (l Launcher) command(theirs string) string {
	argv := []string{l.Binary, "statusline", "--state", l.State, "--lang", string(l.Lang)}
	if theirs != "" {
		argv = append(argv, "--theirs", theirs)
	}
	return levers.Quote(argv...)
}

// Print writes the status line: the person's own command's output
// (theirs, run with the harness's stdin) first, then flower's segment of
// the state file at state. It never fails: a state missing or unreadable
// gives a short neutral line.
func Print(stdin io.Reader, out io.Writer, state string, lang console.Lang, theirs string, now time.Time) {
	in := readBounded(stdin, maxStatusInput, stdinWait)
	var lines []string
	if theirs != "" {
		if s := runTheirs(theirs, in); s != "" {
			lines = append(lines, s)
		}
	}
	lines = append(lines, flowerSegment(in, state, lang, now)...)
	fmt.Fprintln(out, strings.Join(lines, "\n"))
}

// flowerSegment is flower's line, and the latest handoff's announcement
// while it is shown. The cost is the step's booked cost plus what the live
// session has cost so far, which the harness reports on stdin.
func flowerSegment(in []byte, state string, lang console.Lang, now time.Time) []string {
	b, err := readFileBounded(state, maxStatusState)
	var st liveState
	if err != nil || json.Unmarshal(b, &st) != nil {
		return []string{console.NoState(lang)}
	}
	var session struct {
		Cost struct {
			TotalUSD float64 `json:"total_cost_usd"`
		} `json:"cost"`
	}
	_ = json.Unmarshal(in, &session)
	lines := []string{console.ScreenText(st.Meter, st.CostUSD+max(session.Cost.TotalUSD, 0), st.Bounds)}
	if st.Handoff != "" && now.Before(st.HandoffUntil) {
		lines = append(lines, console.Escape(oneLine(st.Handoff)))
	}
	return lines
}

// oneLine keeps a line from the state file on one line.
func oneLine(s string) string { return strings.NewReplacer("\n", " ", "\r", " ").Replace(s) }

// runTheirs runs the person's status line command with the harness's
// stdin, in its own process group, killed with all it started after
// theirsTimeout; its output without trailing newlines, "" on no output.
func runTheirs(command string, in []byte) string {
	ctx, cancel := context.WithTimeout(context.Background(), theirsTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "/bin/sh", "-c", command)
	cmd.Stdin = bytes.NewReader(in)
	var out cappedBuffer
	out.limit = maxTheirs
	cmd.Stdout = &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 200 * time.Millisecond
	_ = cmd.Run()
	return strings.TrimRight(out.String(), "\r\n")
}

// cappedBuffer keeps the first limit bytes written to it.
type cappedBuffer struct {
	bytes.Buffer
	limit int
}

func (c *cappedBuffer) Write(p []byte) (int, error) {
	if room := c.limit - c.Len(); room > 0 {
		c.Buffer.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

// readBounded reads r up to limit bytes, waiting at most wait for its end.
func readBounded(r io.Reader, limit int64, wait time.Duration) []byte {
	if r == nil {
		return nil
	}
	done := make(chan []byte, 1)
	go func() {
		b, _ := io.ReadAll(io.LimitReader(r, limit))
		done <- b
	}()
	select {
	case b := <-done:
		return b
	case <-time.After(wait):
		return nil
	}
}

// readFileBounded reads at most limit bytes of the regular file at path,
// never through a link or from a FIFO; a larger file is an error.
func readFileBounded(path string, limit int64) ([]byte, error) {
	if path == "" {
		return nil, os.ErrNotExist
	}
	f, err := safefile.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err == nil && int64(len(b)) > limit {
		err = fmt.Errorf("%s is larger than %d bytes", path, limit)
	}
	return b, err
}
