package main

import (
	"bytes"
	"io"
	"os"

	"github.com/flowerhq/flower/event"

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

// viewSettings say what a run shows: the run flags --lang, --output and
// --quiet, and whether handoff is off.
type viewSettings struct {
	lang, output     string
	quiet, noHandoff bool
}

// check validates the settings and returns the status lines' language.
func (v viewSettings) check() (console.Lang, error) {
	lang, err := console.ParseLang(v.lang)
	if err != nil {
		return lang, usageError{err}
	}
	switch {
	case v.output != outputText && v.output != outputStreamJSON:
		return lang, usagef("--output %s: want %s or %s", v.output, outputText, outputStreamJSON)
	case v.output == outputStreamJSON && v.quiet:
		return lang, usagef("--quiet and --output %s contradict each other: pick one", outputStreamJSON)
	}
	return lang, nil
}

func newRenderer(v viewSettings, s proc) (*renderer, error) {
	lang, err := v.check()
	if err != nil {
		return nil, err
	}
	home, _ := os.UserHomeDir()
	opts := console.LiveOptions{Lang: lang, NoHandoff: v.noHandoff, Home: home}
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
	case v.quiet:
	case v.output == outputStreamJSON:
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
