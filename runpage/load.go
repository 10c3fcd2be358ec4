// Package runpage owns the page of one run (DESIGN.md «Run page»): what is
// read from a run directory (its manifest and flower.log, nothing else)
// and the self-contained HTML page made of it, with an inline SVG chart of
// the main thread's context at every API response across generations.
// Everything taken from the run is untrusted text and is escaped.
package runpage

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"syscall"
	"time"

	"github.com/flowerhq/flower/manifest"
	"github.com/flowerhq/flower/workbench"
)

// MaxLogLine bounds one log record read; a longer one is skipped.
const MaxLogLine = 4 << 20

// Run is what a run's page shows.
type Run struct {
	Dir      string
	Manifest *manifest.Manifest
	Steps    []*Step
	// Skipped counts log lines that were not records (torn, too long, not
	// JSON).
	Skipped int
}

// Step is one step's part of the run: the manifest's record and what the
// log says of it.
type Step struct {
	Result    *manifest.StepResult
	Responses []Response
	Cuts      []Mark
	Retries   []Mark
	// Waits are the harness's waits before asking the API again (a rate
	// limit, an overload, a server error).
	Waits []Wait
	// Written and Launched are the handoff documents by the generation
	// that wrote them, as written and as launched when a person edited
	// the file in between.
	Written  map[int]Document
	Launched map[int]Document
	// Live: the step is still running.
	Live bool
}

// Response is one main-thread API response: the chart's point.
type Response struct {
	Time       time.Time
	Generation int
	Phase      string // working, cutting, writing
	Context    int
	Window     int
	At, WarnAt int
}

// Mark is something that happened at a time: a cut, a retry.
type Mark struct {
	Time       time.Time
	Generation int
	Context    int
	Text       string
}

// Wait is one wait of the harness before it asked the API again.
type Wait struct {
	Time       time.Time
	Generation int
	Delay      time.Duration
	Status     int    // the HTTP status that made it wait
	Error      string // the harness's name for it: rate_limit, overloaded, …
	Attempt    int
}

// Limit reports whether the wait was for a rate limit.
func (w Wait) Limit() bool { return w.Status == 429 || w.Error == "rate_limit" }

// Document is a handoff document as the log recorded it.
type Document struct {
	Time     time.Time
	Path     string
	Degraded bool
	Text     string
}

// record is the part of a log record the page reads.
type record struct {
	Time     time.Time `json:"time"`
	Msg      string    `json:"msg"`
	Step     string    `json:"step"`
	Gen      int       `json:"gen"`
	Phase    string    `json:"phase"`
	Context  int       `json:"context"`
	Window   int       `json:"window"`
	At       int       `json:"at"`
	WarnAt   int       `json:"warn_at"`
	OfGen    int       `json:"of_gen"`
	Degraded bool      `json:"degraded"`
	Path     string    `json:"path"`
	Document string    `json:"document"`
	Reason   string    `json:"reason"`
	Why      string    `json:"why"`

	Attempt     int    `json:"attempt"`
	DelayMS     int64  `json:"retry_delay_ms"`
	ErrorStatus int    `json:"error_status"`
	Error       string `json:"error"`
}

// Load reads the run in dir: its manifest and its log. A missing log is an
// empty one (the chart is empty); a missing or corrupt manifest is an
// error.
func Load(dir string) (*Run, error) {
	m, err := manifest.Load(manifest.Path(dir))
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("no %s in %s: not a run dir, or its run has not started", manifest.FileName, dir)
	}
	if err != nil {
		return nil, err
	}
	run := &Run{Dir: dir, Manifest: m}
	byName := map[string]*Step{}
	for _, st := range m.Steps {
		s := &Step{Result: st, Written: map[int]Document{}, Launched: map[int]Document{}, Live: st.Status == manifest.StatusRunning}
		run.Steps = append(run.Steps, s)
		byName[st.Name] = s
	}
	f, err := os.OpenFile(workbench.LogFile(dir), os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if errors.Is(err, os.ErrNotExist) {
		return run, nil
	}
	if err != nil {
		return nil, fmt.Errorf("open log: %w", err)
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("log %s is not a regular file", f.Name())
	}
	br := bufio.NewReaderSize(f, 64<<10)
	for {
		line, tooLong, err := readLine(br)
		if len(line) > 0 || tooLong {
			if tooLong || !run.fold(line, byName) {
				run.Skipped++
			}
		}
		if err != nil {
			if err != io.EOF {
				return nil, fmt.Errorf("read log: %w", err)
			}
			break
		}
	}
	for _, s := range run.Steps {
		sort.SliceStable(s.Responses, func(i, j int) bool { return s.Responses[i].Time.Before(s.Responses[j].Time) })
	}
	return run, nil
}

// readLine reads one line of at most MaxLogLine bytes; a longer one is
// read to its end and reported as too long.
func readLine(br *bufio.Reader) (line []byte, tooLong bool, err error) {
	for {
		chunk, isPrefix, err := br.ReadLine()
		if !tooLong {
			if len(line)+len(chunk) > MaxLogLine {
				tooLong, line = true, nil
			} else {
				line = append(line, chunk...)
			}
		}
		if err != nil || !isPrefix {
			return line, tooLong, err
		}
	}
}

// The log messages the page reads (written by package supervisor and
// package handoff).
const (
	msgResponse  = "response"
	msgCut       = "handoff due: cutting at the message boundary"
	msgCutBefore = "handoff due: interrupting at the message boundary" // flower before the queued cut
	msgWritten   = "handoff document as written"
	msgLaunched  = "handoff launched as edited"
	msgAttemptKO = "attempt failed"
	msgAPIRetry  = "api retry"
)

// fold adds one log line to the run; false: it is no record.
func (run *Run) fold(line []byte, steps map[string]*Step) bool {
	line = bytes.TrimSpace(line)
	if len(line) == 0 || line[0] != '{' {
		return false
	}
	var r record
	if err := json.Unmarshal(line, &r); err != nil {
		return false
	}
	s := steps[r.Step]
	if s == nil {
		return true // a record of no step (the run's start), or of a step not in the manifest
	}
	switch r.Msg {
	case msgResponse:
		s.Responses = append(s.Responses, Response{Time: r.Time, Generation: r.Gen, Phase: r.Phase, Context: r.Context,
			Window: r.Window, At: r.At, WarnAt: r.WarnAt})
	case msgCut, msgCutBefore:
		s.Cuts = append(s.Cuts, Mark{Time: r.Time, Generation: r.Gen, Context: r.Context, Text: r.Reason})
	case msgAPIRetry:
		s.Waits = append(s.Waits, Wait{Time: r.Time, Generation: r.Gen, Delay: time.Duration(max(r.DelayMS, 0)) * time.Millisecond,
			Status: r.ErrorStatus, Error: r.Error, Attempt: r.Attempt})
	case msgAttemptKO:
		s.Retries = append(s.Retries, Mark{Time: r.Time, Generation: r.Gen, Text: r.Why})
	case msgWritten:
		gen := r.OfGen
		if gen == 0 {
			gen = r.Gen
		}
		s.Written[gen] = Document{Time: r.Time, Path: r.Path, Degraded: r.Degraded, Text: r.Document}
	case msgLaunched:
		// The launch of generation n+1 reads the file generation n wrote:
		// the latest document written to that path before it.
		gen, at := 0, time.Time{}
		for n, d := range s.Written {
			if d.Path == r.Path && !d.Time.After(r.Time) && d.Time.After(at) {
				gen, at = n, d.Time
			}
		}
		if gen > 0 {
			s.Launched[gen] = Document{Time: r.Time, Path: r.Path, Text: r.Document}
		}
	}
	return true
}
