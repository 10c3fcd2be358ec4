package main

import (
	"github.com/urfave/cli/v2"

	"github.com/flowerhq/flower/console"
	"github.com/flowerhq/flower/manifest"
	"github.com/flowerhq/flower/supervisor"
)

// renderer is what a person (or a program) sees of a run: the status lines
// on stderr, the job's text on stdout.
type renderer struct {
	status *console.Status
	out    *console.Output
	quiet  bool
	s      streams
}

func newRenderer(c *cli.Context, s streams) (*renderer, error) {
	lang, err := console.ParseLang(c.String("lang"))
	if err != nil {
		return nil, usageError{err}
	}
	if f := c.String("output"); f != "text" {
		return nil, usagef("--output %s is not supported yet", f)
	}
	return &renderer{status: console.NewStatus(s.stderr, lang), out: console.NewOutput(s.stdout), quiet: c.Bool("quiet"), s: s}, nil
}

func (r *renderer) event(ev supervisor.Event) {
	r.status.Handle(ev)
	if !r.quiet {
		r.out.Handle(ev)
	}
}

func (r *renderer) summary(st *manifest.StepResult, runDir string) {
	console.Summary(r.s.stderr, st, runDir)
}

func (r *renderer) close() {}
