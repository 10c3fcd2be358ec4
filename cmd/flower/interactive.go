package main

import (
	"context"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/urfave/cli/v2"
	"golang.org/x/term"

	"github.com/flowerhq/flower/console"
	"github.com/flowerhq/flower/event"
	"github.com/flowerhq/flower/front"
	"github.com/flowerhq/flower/interactive"
	"github.com/flowerhq/flower/manifest"
	"github.com/flowerhq/flower/statusline"
	"github.com/flowerhq/flower/workbench"
)

// interactiveFlag is -i: run the harness's own terminal UI under handoff.
func interactiveFlag() cli.Flag {
	return &cli.BoolFlag{Name: "interactive", Aliases: []string{"i"},
		Usage: "run the harness's own terminal UI; a task, if given, is its first prompt", DefaultText: "with no task on a terminal"}
}

// wantsInteractive: -i, or no task at all while stdin is a terminal.
func wantsInteractive(c *cli.Context, p proc) bool {
	return c.Bool("interactive") || (c.NArg() == 0 && c.String("task-file") == "" && isTerminal(p.stdin))
}

func isTerminal(r any) bool {
	f, ok := r.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// runInteractive runs the step with the harness's terminal UI in a pty on
// this terminal: the same engine as a headless run, with package
// interactive as its front.
func runInteractive(c *cli.Context, p proc) error {
	in, ok := p.stdin.(*os.File)
	if !ok || !isTerminal(in) {
		return usageError{interactive.ErrNotTerminal}
	}
	set, err := settingsFrom(c, p)
	if err != nil {
		return err
	}
	if set.view.output == outputStreamJSON {
		return usagef("--output %s cannot be used with the interactive mode: the screen is the harness's", outputStreamJSON)
	}
	if err := interactiveWaits(c); err != nil { // unattended: the limit wait is the headless front's
		return err
	}
	task := ""
	if c.NArg() > 0 || c.String("task-file") != "" {
		t, err := readTask(c, in)
		if err != nil {
			return err
		}
		task = t
	}
	lang, err := set.view.check()
	if err != nil {
		return err
	}
	job, _, err := screenJob(c, set, p, in, lang, task)
	if job == nil {
		return err
	}
	job.close()
	return err
}

// screenJob runs set's step with the harness's terminal UI in a pty on
// this terminal: the same engine as a headless run, with package
// interactive as its front, and flower's segment on the harness's status
// line. The job comes back (nil when it could not be set up) for its
// caller to close once it printed what it has to.
func screenJob(c *cli.Context, set jobSettings, p proc, in *os.File, lang console.Lang, task string) (*job, *manifest.StepResult, error) {
	home, _ := os.UserHomeDir()
	var (
		f       *interactive.Front
		ctx     = c.Context
		cancel  context.CancelCauseFunc
		openErr error
	)
	set.front = func(log *slog.Logger, runDir string, kind harnessKind) (front.Launcher, func(event.Event)) {
		f, ctx, cancel, openErr = interactive.Open(c.Context, interactive.Options{
			In: in, Out: p.stdout, Render: screenRenderer{lang: lang, home: home}, Logger: log,
		})
		if openErr != nil {
			return nil, nil // reported below, before anything runs
		}
		line := console.NewScreenLine(lang, !set.handoff.Enabled, workbench.HoldingWorkspace(runDir), home, console.Bounds{BudgetUSD: set.maxBudgetUSD, Deadline: deadlineOf(set.maxDuration)})
		w := statusline.NewWriter(runDir, line, log)
		return kind.info().screen(f, w, lang, log), f.Sink(w.Handle)
	}
	job, err := setupJob(set, p)
	if f != nil {
		defer cancel(nil)
	}
	if err != nil {
		if f != nil {
			f.Close()
		}
		return nil, nil, err
	}
	if openErr != nil {
		job.close()
		return nil, nil, openErr
	}
	st, err := job.rt.RunStep(ctx, set.step, task)
	f.Close()
	job.finish(st, err)
	return job, st, err
}

// deadlineOf is the deadline --max-duration sets, counted from now; zero
// for none.
func deadlineOf(d time.Duration) time.Time {
	if d <= 0 {
		return time.Time{}
	}
	return time.Now().Add(d)
}

// screenRenderer shows the interactive run's events as the status lines
// (between harnesses) and, for the near notice and the writing turn, as the
// window title (while a harness owns the screen).
type screenRenderer struct {
	lang console.Lang
	home string
}

func (r screenRenderer) Lines(ev event.Event) string {
	var b strings.Builder
	st := console.NewStatus(&b, r.lang)
	st.ShortenHome(r.home)
	st.Handle(ev)
	return b.String()
}

func (r screenRenderer) Title(ev event.Event) string {
	if ev.Kind != event.KindHandoff || (ev.Phase != event.PhaseNear && ev.Phase != event.PhaseWriting) {
		return ""
	}
	return interactive.TitleFromLines(r.Lines(ev))
}
