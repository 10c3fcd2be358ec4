package main

import (
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/urfave/cli/v2"
	"golang.org/x/term"

	"github.com/flowerhq/flower/console"
	"github.com/flowerhq/flower/interactive"
	"github.com/flowerhq/flower/manifest"
	"github.com/flowerhq/flower/supervisor"
	"github.com/flowerhq/flower/workbench"
)

// interactiveFlag is -i: run the harness's own terminal UI under handoff.
func interactiveFlag() cli.Flag {
	return &cli.BoolFlag{Name: "interactive", Aliases: []string{"i"},
		Usage: "run the harness's own terminal UI; a task, if given, is its first prompt", DefaultText: "with no task on a terminal"}
}

// wantsInteractive: -i, or no task at all while stdin is a terminal.
func wantsInteractive(c *cli.Context) bool {
	return c.Bool("interactive") || (c.NArg() == 0 && c.String("task-file") == "" && isTerminal(streamsOf(c).stdin))
}

func isTerminal(r any) bool {
	f, ok := r.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// runInteractive runs the step with the harness's terminal UI in a pty on
// this terminal (package interactive).
func runInteractive(c *cli.Context) error {
	s := streamsOf(c)
	in, ok := s.stdin.(*os.File)
	if !ok || !isTerminal(in) {
		return usageError{interactive.ErrNotTerminal}
	}
	if c.String("output") == outputStreamJSON {
		return usagef("--output %s cannot be used with the interactive mode: the screen is the harness's", outputStreamJSON)
	}
	task := ""
	if c.NArg() > 0 || c.String("task-file") != "" {
		t, err := readTask(c, in)
		if err != nil {
			return err
		}
		task = t
	}
	lang, err := console.ParseLang(c.String("lang"))
	if err != nil {
		return usageError{err}
	}
	job, err := setupJob(c, "")
	if err != nil {
		return err
	}
	defer job.close()
	rt, step := job.rt, c.String("step")
	workspace, err := filepath.Abs(c.String("workspace"))
	if err != nil {
		return err
	}
	// The Runtime opened the workbench (at its default place) unless it
	// could not; the same folder, or none, holds the handoffs here.
	var wb *workbench.Workbench
	if rt.HandoffPath(step) != "" {
		if wb, err = workbench.Open(filepath.Join(workspace, ".flower")); err != nil {
			wb = nil
		}
	}
	args := harnessArgsOf(c)
	if m := c.String("model"); m != "" {
		args = append([]string{"--model", m}, args...)
	}
	source := manifest.WindowFromModel
	if c.Int("window") > 0 {
		source = manifest.WindowFromFlag
	}
	logger := slog.New(slog.NewJSONHandler(job.logFile, &slog.HandlerOptions{Level: slog.LevelDebug}))
	home, _ := os.UserHomeDir()
	st, err := interactive.Run(c.Context, interactive.Options{
		Workspace: workspace, HarnessPath: job.harnessPath, HarnessArgs: args, Model: c.String("model"),
		Env: rt.ChildEnv(), Policy: rt.Policy(), WindowSource: source, Manifest: rt.Manifest(), Workbench: wb,
		Step: step, Task: task, In: in, Out: s.stdout,
		Render: screenRenderer{lang: lang, home: home},
		Logger: logger,
	})
	job.finish(st)
	if st != nil {
		// The harness's own goodbye was kept off the screen: this is
		// the way to go on, never a retired session.
		_, _ = io.WriteString(job.render.live, interactive.ContinueHint(rt.RunDir(), st, harnessArgsOf(c)))
	}
	return err
}

// screenRenderer shows the interactive run's events as the R40 lines
// (between harnesses) and, for the near notice and the writing turn, as the
// window title (while a harness owns the screen).
type screenRenderer struct {
	lang console.Lang
	home string
}

func (r screenRenderer) Lines(ev supervisor.Event) string {
	var b strings.Builder
	st := console.NewStatus(&b, r.lang)
	st.ShortenHome(r.home)
	st.Handle(ev)
	return b.String()
}

func (r screenRenderer) Title(ev supervisor.Event) string {
	if ev.Kind != supervisor.KindHandoff || (ev.Phase != supervisor.PhaseNear && ev.Phase != supervisor.PhaseWriting) {
		return ""
	}
	return interactive.TitleFromLines(r.Lines(ev))
}
