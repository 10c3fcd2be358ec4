package main

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/urfave/cli/v2"
	"golang.org/x/term"

	"github.com/flowerhq/flower/envinject"
	"github.com/flowerhq/flower/event"
	"github.com/flowerhq/flower/front"
	"github.com/flowerhq/flower/handoff"
	"github.com/flowerhq/flower/manifest"
	"github.com/flowerhq/flower/notify"
	"github.com/flowerhq/flower/policy"
	"github.com/flowerhq/flower/supervisor"
	"github.com/flowerhq/flower/workbench"
)

func runCommand(p proc) *cli.Command {
	return &cli.Command{
		Name:      "run",
		Usage:     "run a task (the default command; use it when the task's first word is a command name)",
		UsageText: "flower run [flags] TASK [-- HARNESS ARGS]",
		Description: `The same as flower without a command: runs TASK under generational handoff.
Use it when the task's first word is also a command name.

Examples:
   flower run "show me the failing tests and fix them"
   flower run -f task.md --window 200000 -- --allowedTools Bash Write Edit Read`,
		Flags:  runFlags(),
		Action: func(c *cli.Context) error { return runAction(c, p) },
	}
}

func runFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "task-file", Aliases: []string{"f"}, Usage: "read the task from `FILE` (- for stdin)"},
		&cli.StringFlag{Name: "workspace", Aliases: []string{"C"}, Value: ".", Usage: "the harness's working `DIR`; the workbench is DIR/.flower"},
		&cli.StringFlag{Name: "run-dir", Usage: "where manifest.json and the log go", DefaultText: "WORKSPACE/.flower/runs/<start time>"},
		&cli.StringFlag{Name: "step", Value: "main", Usage: "the step's `NAME` (names the handoff file 交接-NAME.md)"},
		&cli.IntFlag{Name: "window", Usage: "the model's context window in tokens",
			DefaultText: "what the harness reports, else guessed from the model name: 200000 for haiku, else 1000000"},
		&cli.IntFlag{Name: "headroom", Value: policy.DefaultHeadroom, Usage: "hand off this many tokens before the window"},
		&cli.IntFlag{Name: "max-generations", Value: policy.DefaultMaxGenerations, Usage: "stop after this many sessions (the runaway brake)"},
		&cli.IntFlag{Name: "task-carry", Value: handoff.DefaultTaskCarry, Usage: "every successor's first prompt carries up to `N` characters of the task verbatim (notes/任务-STEP.md as it is on disk; a longer task: its start and the file's path); 0: none"},
		&cli.BoolFlag{Name: "no-handoff", Usage: "no generational handoff: the harness's own auto-compact works"},
		&cli.StringFlag{Name: "compact", Usage: "the agent's compact `MODE`: auto keeps the harness's auto-compact on even with handoff"},
		&cli.StringFlag{Name: "harness", EnvVars: []string{"FLOWER_HARNESS"}, Usage: "the claude executable", DefaultText: "claude on PATH, else the copy make installed"},
		&cli.StringFlag{Name: "model", Usage: "the model the harness runs (--model)"},
		&cli.IntFlag{Name: "max-attempts", Value: supervisor.DefaultMaxAttempts, Usage: "failed attempts allowed before the step fails (handoffs do not count)"},
		&cli.DurationFlag{Name: "turn-timeout", Usage: "bound one working turn", DefaultText: "none"},
		&cli.StringFlag{Name: "lang", Value: "zh", Usage: "labels of the status lines: zh (as in the design) or en"},
		&cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Usage: "do not print the assistant's text and tool calls"},
		&cli.StringFlag{Name: "output", Value: "text", Usage: "stdout `FORMAT`: text, or stream-json (the harness's lines plus flower's events, one JSON object per line)"},
		&cli.BoolFlag{Name: "verbose", Aliases: []string{"v"}, Usage: "show the effective auth configuration (secrets masked) and policy before running"},
		&cli.StringFlag{Name: "notify", EnvVars: []string{"FLOWER_NOTIFY"}, Usage: "run `CMD` (with sh -c) for each handoff, the generation limit and the step's end, one JSON event on its stdin (see the README)"},
		&cli.DurationFlag{Name: "notify-timeout", Value: notify.DefaultTimeout, Usage: "kill a --notify command that runs longer than this"},
		interactiveFlag(),
	}
}

func runAction(c *cli.Context, p proc) error {
	if wantsInteractive(c, p) {
		return runInteractive(c, p)
	}
	task, err := readTask(c, p.stdin)
	if err != nil {
		return err
	}
	set, err := settingsFrom(c, p)
	if err != nil {
		return err
	}
	job, err := setupJob(set, p)
	if err != nil {
		return err
	}
	defer job.close()
	st, err := job.rt.RunStep(c.Context, set.step, task)
	job.finish(st)
	return err
}

// job is what run, continue, rerun and the interactive mode share: a
// Runtime wired to the renderer and the run's log.
type job struct {
	rt          *supervisor.Runtime
	runDir      string
	harnessPath string
	render      *renderer
	logFile     *os.File
	logger      *slog.Logger
	// notifier runs --notify (DESIGN.md «Notify»); nil without it.
	notifier *notify.Notifier
}

func (j *job) close() {
	// The hook's last events are delivered (within its bound) before the
	// log it reports to closes.
	j.notifier.Close(0)
	j.render.close()
	j.logFile.Close()
}

func (j *job) finish(st *manifest.StepResult) {
	if st != nil {
		j.render.summary(st, j.runDir)
		for _, ev := range notify.StepEnded(st, j.rt.RunDir(), j.rt.Policy().MaxGenerations) {
			j.notifier.Send(ev)
		}
	}
}

// jobSettings is everything setupJob builds a job from: read from the run
// flags by settingsFrom, adjusted by continue and rerun from the manifest,
// or set whole by a command of its own (the demo).
type jobSettings struct {
	// workspace is the harness's working directory; runDir "" means a new
	// one under <workspace>/.flower/runs.
	workspace, runDir, step string
	handoff                 policy.HandoffPolicy
	// taskCarry is the library's setting: 0 the default, negative none.
	taskCarry   int
	compact     envinject.CompactMode
	harness     string // as given; "" looks for one
	model       string
	maxAttempts int
	turnTimeout time.Duration
	view        viewSettings
	verbose     bool
	// notify is --notify's command, notifyTimeout its bound.
	notify        string
	notifyTimeout time.Duration
	// harnessEnv is the harness's base environment (flower's own, or the
	// demo's).
	harnessEnv []string
	// front, when set, gives the front that runs the harness and where the
	// events go, once the run's log is open (the interactive mode); the
	// headless front and the renderer otherwise.
	front func(log *slog.Logger) (front.Launcher, func(event.Event))
}

// settingsFrom reads and checks the run flags; nothing is made on disk.
func settingsFrom(c *cli.Context, p proc) (jobSettings, error) {
	compact, err := envinject.ParseCompactMode(c.String("compact"))
	if err != nil {
		return jobSettings{}, usageError{err}
	}
	for _, name := range []string{"window", "headroom", "max-generations", "max-attempts", "task-carry"} {
		if c.Int(name) < 0 {
			return jobSettings{}, usagef("--%s must not be negative", name)
		}
	}
	set := jobSettings{
		workspace: c.String("workspace"), runDir: c.String("run-dir"), step: c.String("step"),
		handoff: policy.HandoffPolicy{Enabled: !c.Bool("no-handoff"), Window: c.Int("window"),
			Headroom: c.Int("headroom"), MaxGenerations: c.Int("max-generations")},
		taskCarry: -1, compact: compact, harness: c.String("harness"), model: c.String("model"),
		maxAttempts: c.Int("max-attempts"), turnTimeout: c.Duration("turn-timeout"),
		view:    viewSettings{lang: c.String("lang"), output: c.String("output"), quiet: c.Bool("quiet")},
		verbose: c.Bool("verbose"), harnessEnv: p.env,
		notify: c.String("notify"), notifyTimeout: c.Duration("notify-timeout"),
	}
	if set.notifyTimeout <= 0 {
		return jobSettings{}, usagef("--notify-timeout must be more than zero")
	}
	if n := c.Int("task-carry"); n > 0 {
		set.taskCarry = n
	}
	set.view.noHandoff = !set.handoff.Enabled
	if _, err := set.view.check(); err != nil {
		return jobSettings{}, err
	}
	return set, nil
}

// setupJob builds the Runtime from set: the run dir, its log, the renderer.
func setupJob(set jobSettings, p proc) (*job, error) {
	// Every check comes before anything is made on disk.
	render, err := newRenderer(set.view, p)
	if err != nil {
		return nil, err
	}
	fail := func(err error) (*job, error) {
		render.close()
		return nil, err
	}
	harnessPath, err := findHarness(set.harness)
	if err != nil {
		return fail(err)
	}
	workspace, err := filepath.Abs(set.workspace)
	if err != nil {
		return fail(err)
	}
	if fi, err := os.Stat(workspace); err != nil || !fi.IsDir() {
		return fail(usagef("workspace %s is not a directory", workspace))
	}
	runDir := set.runDir
	if runDir == "" {
		runDir = filepath.Join(workspace, ".flower", "runs", time.Now().UTC().Format("20060102-150405"))
	}
	if err := workbench.MkdirRun(runDir, filepath.Join(workspace, ".flower")); err != nil {
		return fail(err)
	}
	logFile, err := os.OpenFile(filepath.Join(runDir, logFileName), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fail(fmt.Errorf("run dir %s is not writable: %w", runDir, err))
	}
	logger := slog.New(slog.NewJSONHandler(logFile, &slog.HandlerOptions{Level: slog.LevelDebug}))
	var launcher front.Launcher
	onEvent := render.event
	if set.front != nil {
		launcher, onEvent = set.front(logger)
	}
	notifier := notify.New(notify.Options{Command: set.notify, Timeout: set.notifyTimeout, Env: p.env, Logger: logger})
	if notifier != nil {
		abs, _ := filepath.Abs(runDir)
		onEvent = notifyEvents(onEvent, notifier, abs)
	}
	rt, err := supervisor.New(supervisor.Options{
		Workspace: workspace, RunDir: runDir, Workbench: true, Handoff: set.handoff, Compact: set.compact,
		HarnessPath: harnessPath, HarnessArgs: p.harnessArgs, Env: set.harnessEnv, Model: set.model,
		MaxAttempts: set.maxAttempts, TurnTimeout: set.turnTimeout, Logger: logger,
		OnEvent: onEvent, AfterFreeze: pauseAfterFreeze(), Front: launcher, TaskCarry: set.taskCarry,
	})
	if err != nil {
		notifier.Close(0)
		logFile.Close()
		return fail(err)
	}
	linkLatest(rt.RunDir(), filepath.Join(workspace, ".flower"))
	if set.verbose {
		printVerbose(p.stderr, rt, harnessPath)
	}
	return &job{rt: rt, runDir: runDir, harnessPath: harnessPath, render: render, logFile: logFile, logger: logger, notifier: notifier}, nil
}

// notifyEvents passes every event to next and the ones a --notify hook
// hears about to n (DESIGN.md «Notify»); n never blocks.
func notifyEvents(next func(event.Event), n *notify.Notifier, runDir string) func(event.Event) {
	return func(ev event.Event) {
		next(ev)
		if nev, ok := notify.FromRun(ev, runDir); ok {
			n.Send(nev)
		}
	}
}

// logFileName is the structured log in each run dir.
const logFileName = "flower.log"

func printVerbose(w io.Writer, rt *supervisor.Runtime, harnessPath string) {
	env := rt.ChildEnv()
	fmt.Fprintf(w, "flower: harness %s\n", harnessPath)
	for _, line := range strings.Split(strings.TrimRight(envinject.AuthFrom(env).String(), "\n"), "\n") {
		fmt.Fprintf(w, "flower: %s\n", line)
	}
	p := rt.Policy()
	if p.Enabled {
		v, _ := envinject.Lookup(env, envinject.DisableAutoCompact)
		src := "from --window"
		if rt.WindowSource() != manifest.WindowFromFlag {
			src = "guessed from the model name until the harness reports its own"
		}
		fmt.Fprintf(w, "flower: handoff on · window %s (%s) · near at %s · handoff at %s · max %d generations · %s=%s\n",
			policy.FormatRound(p.Window), src, policy.FormatRound(p.WarnAt()), policy.FormatRound(p.At()), p.MaxGenerations, envinject.DisableAutoCompact, v)
	} else {
		fmt.Fprintln(w, "flower: handoff off · the harness's own auto-compact works")
	}
	fmt.Fprintf(w, "flower: run dir %s\n", rt.RunDir())
}

// readTask takes the task from the argument, --task-file, or stdin when it
// is not a terminal.
func readTask(c *cli.Context, stdin io.Reader) (string, error) {
	args := c.Args().Slice()
	file := c.String("task-file")
	var task string
	switch {
	case len(args) > 0 && file != "":
		return "", usagef("give the task as an argument or with --task-file, not both")
	case len(args) > 1:
		return "", usagef("the task must be one argument (quote it); harness arguments go after --, got %q", args[1])
	case len(args) == 1:
		task = args[0]
	case file == "-":
		b, err := io.ReadAll(stdin)
		if err != nil {
			return "", fmt.Errorf("read task from stdin: %w", err)
		}
		task = string(b)
	case file != "":
		b, err := os.ReadFile(file)
		if err != nil {
			return "", usagef("read task file: %v", err)
		}
		task = string(b)
	default:
		if f, ok := stdin.(*os.File); !ok || term.IsTerminal(int(f.Fd())) {
			return "", usagef("no task: give it as an argument, with -f FILE, or on stdin (see flower --help)")
		}
		b, err := io.ReadAll(stdin)
		if err != nil {
			return "", fmt.Errorf("read task from stdin: %w", err)
		}
		task = string(b)
	}
	if strings.TrimSpace(task) == "" {
		return "", usagef("the task is empty")
	}
	return task, nil
}

// linkLatest points <runs>/latest at the run dir, so show and continue find
// it; failing to is not worth stopping a run for. A run dir outside the
// workbench gets no link: the folder it would go into is the person's.
func linkLatest(runDir, workbenchDir string) {
	if rel, err := filepath.Rel(workbenchDir, filepath.Dir(runDir)); err != nil || !filepath.IsLocal(rel) {
		return
	}
	latest := filepath.Join(filepath.Dir(runDir), "latest")
	tmp := latest + ".tmp"
	_ = os.Remove(tmp)
	if err := os.Symlink(filepath.Base(runDir), tmp); err == nil {
		_ = os.Rename(tmp, latest)
	}
}

var errNoHarness = errors.New("no harness found: pass --harness, set FLOWER_HARNESS, put claude on PATH, or run `make harness`")
