package main

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/flowerhq/flower/manifest"
	"github.com/flowerhq/flower/supervisor"
)

func continueCommand(p proc) *cli.Command {
	return &cli.Command{
		Name:      "continue",
		Usage:     "resume a step's latest session (never a retired generation), tell it MESSAGE, and supervise it",
		UsageText: "flower continue [flags] [MESSAGE] [-- HARNESS ARGS]",
		Description: `Picks up a step of an earlier run: the one that was interrupted (Ctrl-C),
killed, or crashed, or one that finished and should do more. Its latest
session (the manifest's session_id: always the successor, never a retired
generation) is resumed with --resume, told MESSAGE (or to carry on), and
supervised as before: the context meter, handoffs and the manifest go on,
and the generation count carries on.

If the harness cannot resume that session, a fresh generation starts from
the step's handoff file (notes/交接-<step>.md) and flower says so. A step
stopped in the middle of a handoff starts its successor from the handoff
file if it was written, else from a degraded handoff built from the task.

The run is the workspace's latest (WORKSPACE/.flower/runs/latest) unless
--run-dir names one; the harness runs in the workspace the manifest
records. The step is --step, or the run's only step. The window and model
of the run are kept unless given again; harness arguments are not
remembered: pass them again after --.

Examples:
   flower continue                               # pick up the latest run
   flower continue "also update the changelog"   # with something to say
   flower continue --run-dir .flower/runs/20261130-112853 --step build -- --allowedTools Bash`,
		Flags:  pastRunFlags(),
		Action: func(c *cli.Context) error { return continueAction(c, p) },
	}
}

func rerunCommand(p proc) *cli.Command {
	return &cli.Command{
		Name:      "rerun",
		Usage:     "start a fresh generation from the step's handoff file as it is on disk now",
		UsageText: "flower rerun [flags] [-- HARNESS ARGS]",
		Description: `Open the handoff file (WORKSPACE/.flower/notes/交接-<step>.md), change a
line, run it again: rerun starts a fresh session (a new generation) whose
first prompt is that file as it is on disk now. A live session of the step
is set aside. A file that is missing, empty, not UTF-8, or lacks a required
section (doing, next) is refused with a message naming it, and nothing runs.
So is a run, handoff or task file flower holds no receipt of (its trust
store, outside the workspace, records what flower wrote on this machine):
a repository, or another machine, may have written it. Read it, and if you
vouch for it, run again with --trust-notes (or adopt with flower trust).

The run, step and workspace are found as for flower continue.

Examples:
   $EDITOR .flower/notes/交接-main.md && flower rerun
   flower rerun --step build -- --allowedTools Bash`,
		Flags:  pastRunFlags(),
		Action: func(c *cli.Context) error { return rerunAction(c, p) },
	}
}

// pastRunFlags are the run flags without the task, with -C meaning where
// to find the latest run (the harness's workspace is the manifest's).
func pastRunFlags() []cli.Flag {
	var flags []cli.Flag
	for _, f := range runFlags() {
		switch f.Names()[0] {
		case "task-file":
		case "workspace":
			flags = append(flags, workspaceFlag())
		case "run-dir":
			flags = append(flags, &cli.StringFlag{Name: "run-dir", Usage: "the run's `DIR`", DefaultText: "WORKSPACE/.flower/runs/latest"})
		case "step":
			flags = append(flags, &cli.StringFlag{Name: "step", Value: "main", Usage: "the step's `NAME`", DefaultText: "the run's only step, else main"})
			flags = append(flags, &cli.BoolFlag{Name: "trust-notes",
				Usage: "pick up the run and feed the successor the step's handoff or task file even though flower holds no receipt of them (a repository or another machine may have written them): you read them and vouch for them, and they are adopted"})
		default:
			flags = append(flags, f)
		}
	}
	return flags
}

// noInteractive refuses -i: continue and rerun supervise headless. An
// interactive step continues that way too (its live session is resumed, its
// lineage goes on); reopening the harness's screen on a resumed session is
// not supported.
func noInteractive(c *cli.Context) error {
	if c.Bool("interactive") {
		return usagef("%s runs headless (an interactive step's session is resumed too); -i is for a new run", c.Command.Name)
	}
	return nil
}

func continueAction(c *cli.Context, p proc) error {
	if err := noInteractive(c); err != nil {
		return err
	}
	var message string
	switch c.NArg() {
	case 0:
	case 1:
		message = c.Args().First()
	default:
		return usagef("the message must be one argument (quote it); harness arguments go after --, got %q", c.Args().Get(1))
	}
	j, step, err := pastRunJob(c, p, true)
	if err != nil {
		return err
	}
	defer j.close()
	st, err := j.rt.Continue(c.Context, step, message)
	j.finish(st, err)
	if errors.Is(err, supervisor.ErrNothingToContinue) || errors.Is(err, supervisor.ErrNoStep) {
		return usageError{err}
	}
	return err
}

func rerunAction(c *cli.Context, p proc) error {
	if err := noInteractive(c); err != nil {
		return err
	}
	if c.NArg() > 0 {
		return usagef("rerun takes no task or message: it starts from the handoff file (harness arguments go after --), got %q", c.Args().First())
	}
	j, step, err := pastRunJob(c, p, false)
	if err != nil {
		return err
	}
	defer j.close()
	st, err := j.rt.Rerun(c.Context, step)
	j.finish(st, err)
	return err
}

// pastRunJob finds the run and step to pick up and builds the job on the
// workspace its manifest records, keeping the run's window and model unless
// they are given again. needManifest: continue has nothing to go on
// without one; rerun starts from the handoff file.
func pastRunJob(c *cli.Context, p proc, needManifest bool) (*job, string, error) {
	runDir, err := pastRunDir(c)
	if err != nil {
		return nil, "", err
	}
	if err := checkPastRun(runDir); err != nil {
		return nil, "", err
	}
	// Bound to where it was found (DESIGN.md «Territory»): a manifest
	// naming another run dir or workspace sends nothing there.
	m, err := manifest.LoadBound(runDir)
	switch {
	case errors.Is(err, fs.ErrNotExist) && !needManifest:
		m = nil
	case errors.Is(err, fs.ErrNotExist):
		return nil, "", usagef("no %s in %s: nothing to continue there", manifest.FileName, runDir)
	case err != nil:
		return nil, "", err
	}
	set, err := settingsFrom(c, p)
	if err != nil {
		return nil, "", err
	}
	set.runDir = runDir
	set.trustNotes = c.Bool("trust-notes")
	if m != nil {
		if !c.IsSet("step") && len(m.Steps) == 1 {
			set.step = m.Steps[0].Name
		}
		if m.Workspace != "" {
			set.workspace = m.Workspace
		}
		if err := set.sameHarness(c, m.HarnessKind); err != nil {
			return nil, "", err
		}
		if st := m.Step(set.step); st != nil {
			if !c.IsSet("window") && st.WindowSource == manifest.WindowFromFlag && st.Window > 0 {
				set.handoff.Window = st.Window
			}
			if !c.IsSet("model") && st.Model != "" {
				set.model = st.Model
			}
		}
	}
	j, err := setupJob(set, p)
	if err != nil {
		return nil, "", err
	}
	return j, set.step, nil
}

// pastRunDir is --run-dir, or the workspace's latest run.
func pastRunDir(c *cli.Context) (string, error) {
	if dir := c.String("run-dir"); dir != "" {
		fi, err := os.Stat(dir)
		if err != nil || !fi.IsDir() {
			return "", usagef("run dir %s is not a directory", dir)
		}
		return filepath.Abs(dir)
	}
	return latestRunDir(c.String("workspace"), "no run to pick up in %s: give --run-dir, or the workspace with -C")
}

// envPauseAfterFreeze is a test hook, not a feature: set to a duration, it
// makes flower wait that long after freezing a handoff file and before the
// successor starts, so that a test can kill flower at exactly that point
// (integration/crash_test.go); set to file:PATH, it waits until PATH exists
// and removes it, so that a test can edit the handoff at that point.
const envPauseAfterFreeze = "FLOWER_TEST_PAUSE_AFTER_FREEZE"

// pauseAfterFreeze returns the AfterFreeze hook the test hook asks for, or
// nil.
func pauseAfterFreeze() func(string) {
	if gate, ok := strings.CutPrefix(os.Getenv(envPauseAfterFreeze), "file:"); ok && gate != "" {
		// Wait until the test creates the gate file (it edits the
		// handoff meanwhile, as a person would), then take it away.
		return func(string) {
			for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
				if err := os.Remove(gate); err == nil {
					return
				}
			}
		}
	}
	d, err := time.ParseDuration(os.Getenv(envPauseAfterFreeze))
	if err != nil || d <= 0 {
		return nil
	}
	return func(string) { time.Sleep(d) }
}
