package main

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

	"github.com/urfave/cli/v2"

	"github.com/flowerhq/flower/atomicfile"
	"github.com/flowerhq/flower/console"
	"github.com/flowerhq/flower/event"
	"github.com/flowerhq/flower/front"
	"github.com/flowerhq/flower/levers"
	"github.com/flowerhq/flower/safefile"
	"github.com/flowerhq/flower/transcript"
)

// flower's segment of the harness's own status line in the interactive
// mode (DESIGN.md «Status line in the harness's screen»): the running
// flower folds its events into a small state file in the run dir, and the
// harness runs `flower statusline`, which reads it.

// statusStateFile is the live state's name in the run dir.
const statusStateFile = "statusline.json"

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

// statusState is the live state file.
type statusState struct {
	Meter        string    `json:"meter"`
	CostUSD      float64   `json:"cost_usd"`
	Bounds       string    `json:"bounds,omitempty"`
	Handoff      string    `json:"handoff,omitempty"`
	HandoffUntil time.Time `json:"handoff_until,omitzero"`
}

// statusWriter keeps the state file up to date with the run's events.
type statusWriter struct {
	mu    sync.Mutex
	line  *console.ScreenLine
	path  string
	log   *slog.Logger
	now   func() time.Time
	until time.Time
	last  []byte
}

func newStatusWriter(runDir string, line *console.ScreenLine, log *slog.Logger) *statusWriter {
	return &statusWriter{line: line, path: filepath.Join(runDir, statusStateFile), log: log, now: time.Now}
}

// handle folds ev in and writes the state when what it shows changed. A
// handoff is announced from its end until handoffShown after the
// successor's harness started.
func (w *statusWriter) handle(ev event.Event) {
	w.line.Handle(ev)
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case ev.Kind == event.KindHandoff && ev.Phase == event.PhaseDone:
		w.until = w.now().Add(3 * handoffShown)
	case ev.Kind == event.KindGeneration && !w.until.IsZero():
		w.until = w.now().Add(handoffShown)
	}
	st := statusState{Meter: w.line.Meter(), CostUSD: w.line.Cost(), Bounds: w.line.Bounds()}
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

// statusLauncher starts each harness with flower's status line in its
// --settings.
type statusLauncher struct {
	front.Launcher
	state string
	lang  console.Lang
	log   *slog.Logger
}

func (l statusLauncher) Launch(ctx context.Context, s front.Spec) (front.Session, error) {
	args, err := levers.StatusLine(s.Args, s.Dir, transcript.ConfigDir(s.Env), l.command)
	if err != nil {
		l.log.Warn("status line: left out", "err", err)
	}
	s.Args = args
	return l.Launcher.Launch(ctx, s)
}

// command is the harness's status line command: flower itself, running
// theirs (the person's own command) too.
func (l statusLauncher) command(theirs string) string {
	argv := []string{hookBinary, "statusline", "--state", l.state, "--lang", string(l.lang)}
	if theirs != "" {
		argv = append(argv, "--theirs", theirs)
	}
	return levers.Quote(argv...)
}

// statusLineCommand is run by the harness (never by a person).
func statusLineCommand(p proc) *cli.Command {
	return &cli.Command{
		Name:   "statusline",
		Hidden: true,
		Usage:  "flower's segment of the harness's status line (run by the harness)",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "state", Usage: "the run's live state file"},
			&cli.StringFlag{Name: "lang", Value: "zh", Usage: "zh or en"},
			&cli.StringFlag{Name: "theirs", Usage: "the person's own status line command, run first"},
		},
		Action: func(c *cli.Context) error {
			lang, err := console.ParseLang(c.String("lang"))
			if err != nil {
				lang = console.LangZh
			}
			statusLine(p.stdin, p.stdout, c.String("state"), lang, c.String("theirs"), time.Now())
			return nil
		},
	}
}

// statusLine writes the status line: the person's own command's output
// first, then flower's segment. It never fails: a state missing or
// unreadable gives a short neutral line.
func statusLine(stdin io.Reader, out io.Writer, state string, lang console.Lang, theirs string, now time.Time) {
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
	var st statusState
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
