package main

import (
	"bytes"
	"io"
	"os"

	"github.com/flowerhq/flower/event"

	"github.com/urfave/cli/v2"
	"golang.org/x/term"

	"github.com/flowerhq/flower/console"
	"github.com/flowerhq/flower/manifest"
)

// The --output formats.
const (
	outputText       = "text"
	outputStreamJSON = "stream-json"
)

// renderer is what a person (or a program) sees of a run: the status lines
// and the gauge on stderr; on stdout the job's text, or with --output
// stream-json the harness's lines and flower's events, or with --quiet
// nothing.
type renderer struct {
	live *console.Live
	out  func(event.Event) // nil with --quiet
}

func newRenderer(c *cli.Context, s streams) (*renderer, error) {
	lang, err := console.ParseLang(c.String("lang"))
	if err != nil {
		return nil, usageError{err}
	}
	format := c.String("output")
	switch {
	case format != outputText && format != outputStreamJSON:
		return nil, usagef("--output %s: want %s or %s", format, outputText, outputStreamJSON)
	case format == outputStreamJSON && c.Bool("quiet"):
		return nil, usagef("--quiet and --output %s contradict each other: pick one", outputStreamJSON)
	}
	home, _ := os.UserHomeDir()
	opts := console.LiveOptions{Lang: lang, NoHandoff: c.Bool("no-handoff"), Home: home}
	if f, ok := s.stderr.(*os.File); ok && term.IsTerminal(int(f.Fd())) && os.Getenv("TERM") != "dumb" {
		opts.Terminal = true
		opts.Width = func() int {
			w, _, err := term.GetSize(int(f.Fd()))
			if err != nil {
				return 0
			}
			return w
		}
	}
	r := &renderer{live: console.NewLive(s.stderr, opts)}
	// Guarded: stdout and stderr often share the terminal the gauge is on.
	stdout := r.live.Guard(s.stdout)
	switch {
	case c.Bool("quiet"):
	case format == outputStreamJSON:
		r.out = console.NewStream(stdout).Handle
	default:
		r.out = console.NewOutput(stdout).Handle
	}
	return r, nil
}

func (r *renderer) event(ev event.Event) {
	r.live.Handle(ev)
	if r.out != nil {
		r.out(ev)
	}
}

// summary prints a step's closing lines on stderr, in one write so the
// gauge comes back only after them.
func (r *renderer) summary(st *manifest.StepResult, runDir string) {
	var b bytes.Buffer
	console.Summary(&b, st, runDir)
	io.Copy(r.live, &b)
}

// close takes the gauge down, leaving the terminal's line clean.
func (r *renderer) close() { r.live.Close() }
