package main

import (
	"context"
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

	"github.com/flowerhq/flower/console"
	"github.com/flowerhq/flower/envinject"
	"github.com/flowerhq/flower/event"
	"github.com/flowerhq/flower/front"
	"github.com/flowerhq/flower/handoff"
	"github.com/flowerhq/flower/harness"
	"github.com/flowerhq/flower/interactive"
	"github.com/flowerhq/flower/manifest"
	"github.com/flowerhq/flower/notify"
	"github.com/flowerhq/flower/policy"
	"github.com/flowerhq/flower/registry"
	"github.com/flowerhq/flower/safefile"
	"github.com/flowerhq/flower/supervisor"
	"github.com/flowerhq/flower/trust"
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
		sizeFlag("window", []string{envWindow}, 0, "the model's context window in tokens (200000, 200K, 1M)",
			"what the harness reports, else guessed from the model name: 200K for haiku, else 1M"),
		sizeFlag("headroom", []string{envHeadroom}, policy.DefaultHeadroom, "hand off this many tokens before the window", ""),
		&cli.IntFlag{Name: "max-generations", EnvVars: []string{envMaxGenerations}, Value: policy.DefaultMaxGenerations, Usage: "stop after this many sessions (the runaway brake)"},
		sizeFlag("task-carry", nil, handoff.DefaultTaskCarry, "every successor's first prompt carries up to `N` characters of the task verbatim (notes/任务-STEP.md as it is on disk; a longer task: its start and the file's path); 0: none", ""),
		&cli.BoolFlag{Name: "no-handoff", Usage: "no generational handoff: the harness's own auto-compact works"},
		&cli.StringFlag{Name: "compact", Usage: "the agent's compact `MODE`: auto keeps the harness's auto-compact on even with handoff"},
		&cli.StringFlag{Name: "harness", EnvVars: []string{"FLOWER_HARNESS"}, Usage: "the harness executable (the Claude Code CLI, or the Codex CLI)", DefaultText: "claude (or codex) on PATH, else the copy make installed"},
		harnessKindFlag(),
		&cli.StringFlag{Name: "model", Usage: "the model the harness runs (--model)"},
		&cli.IntFlag{Name: "max-attempts", Value: supervisor.DefaultMaxAttempts, Usage: "failed attempts allowed before the step fails (handoffs do not count)"},
		&cli.DurationFlag{Name: "turn-timeout", Usage: "bound one working turn", DefaultText: "none"},
		langFlag("labels of the status lines"),
		&cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Usage: "do not print the assistant's text and tool calls"},
		&cli.StringFlag{Name: "output", Value: "text", Usage: "stdout `FORMAT`: text, or stream-json (the harness's lines plus flower's events, one JSON object per line)"},
		&cli.BoolFlag{Name: "verbose", Aliases: []string{"v"}, Usage: "show the effective auth configuration (secrets masked) and policy before running"},
		&cli.StringFlag{Name: "notify", EnvVars: []string{"FLOWER_NOTIFY"}, Usage: "run `CMD` (with sh -c) for each handoff, limit wait, budget or deadline reached, the generation limit and the step's end, one JSON event on its stdin (see docs/guide.md)"},
		&cli.DurationFlag{Name: "notify-timeout", Value: notify.DefaultTimeout, Usage: "kill a --notify command that runs longer than this"},
		// unattended: the step's budget and deadline, the limit wait (unattended.go)
		&cli.Float64Flag{Name: "max-budget-usd", EnvVars: []string{envMaxBudget}, Usage: "stop the step once it has cost `USD` (every generation, retry and handoff): the session hands off at the message boundary, exit 4; continue keeps it unless given again", DefaultText: "none"},
		&cli.DurationFlag{Name: "max-duration", EnvVars: []string{envMaxDuration}, Usage: "stop the step after `D` of wall-clock time, waits included (counted from this run's start): the session hands off, exit 5", DefaultText: "none"},
		&cli.DurationFlag{Name: "max-wait", EnvVars: []string{envMaxWait}, Usage: "wait out a rate or usage limit at most `D`; past it the step stops, exit 6, its session live for continue", DefaultText: "no bound"},
		&cli.DurationFlag{Name: "limit-backoff", Value: supervisor.DefaultLimitBackoff, Usage: "wait `D` for a limit whose reset the harness did not say; it doubles for each limit in a row, up to 30m"},
		&cli.BoolFlag{Name: "skip-workspace-settings", Usage: "in a workspace you have not trusted (flower trust), run the harness without the workspace's settings, hooks, MCP servers, agents, skills and commands instead of refusing"},
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
	job.finish(st, err)
	return err
}

// job is what run, continue, rerun and the interactive mode share: a
// Runtime wired to the renderer and the run's log.
type job struct {
	rt *supervisor.Runtime
	// The run dir, its log, its registry entry and --notify's hook.
	*runPlace
	harnessPath string
	render      *renderer
	// harnessArgs go into the closing flower continue line.
	harnessArgs []string
	// interactive: the closing flower continue line ends every run, the
	// harness's own goodbye having been kept off the screen; a headless
	// run prints it when interrupted, but for a demo (noContinue).
	interactive, noContinue bool
}

func (j *job) close() {
	// The hook's last events are delivered (within its bound) before the
	// log it reports to closes.
	j.render.close()
	j.runPlace.close()
}

// finish prints the step's closing lines and tells a --notify hook the
// step ended; err is how it ended. A step whose records were not all saved
// is not summed up as a plain success (DESIGN.md «Durable or loud»).
func (j *job) finish(st *manifest.StepResult, err error) {
	if st == nil {
		return
	}
	if errors.Is(err, supervisor.ErrNotSaved) {
		shown := *st
		shown.Status += " (records not saved)"
		st = &shown
	}
	for _, ev := range notify.StepEnded(st, j.rt.RunDir(), j.rt.Policy().MaxGenerations) {
		j.notifier.Send(ev)
	}
	j.render.summary(st, j.runDir)
	if (j.interactive || errors.Is(err, context.Canceled) || st.Status == manifest.StatusUntrusted) && !j.noContinue {
		// The same way on from both fronts: never a retired session.
		_, _ = io.WriteString(j.render.live, console.Escape(interactive.ContinueHint(j.rt.RunDir(), st, j.harnessArgs)))
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
	compact     policy.CompactMode
	harness     string // as given; "" looks for one
	harnessKind string // --harness-kind as given; "" detects it
	model       string
	maxAttempts int
	turnTimeout time.Duration
	view        viewSettings
	verbose     bool
	// notify is --notify's command, notifyTimeout its bound.
	notify        string
	notifyTimeout time.Duration
	// unattended: the step's bounds and the limit wait
	maxBudgetUSD float64
	maxDuration  time.Duration
	maxWait      time.Duration
	limitBackoff time.Duration
	// harnessEnv is the harness's base environment (flower's own, or the
	// demo's).
	harnessEnv []string
	// noContinue: nothing can continue the run once it ends (the demo,
	// whose scripted model is gone), so no flower continue line is shown.
	noContinue bool
	// trustNotes: the person vouches for a run dir and notes files flower
	// holds no receipt of (continue and rerun's --trust-notes).
	trustNotes bool
	// skipWorkspace: an untrusted workspace's settings are left out
	// rather than refused (--skip-workspace-settings, DESIGN.md «Trust store»).
	skipWorkspace bool
	// front, when set, gives the front that runs the harness and where the
	// events go, once the run's log is open (the interactive mode); the
	// headless front and the renderer otherwise.
	front func(log *slog.Logger, runDir string, kind harnessKind) (front.Launcher, func(event.Event))
}

// settingsFrom reads and checks the run flags; nothing is made on disk.
func settingsFrom(c *cli.Context, p proc) (jobSettings, error) {
	compact, err := policy.ParseCompactMode(c.String("compact"))
	if err != nil {
		return jobSettings{}, usageError{err}
	}
	if err := checkNumbers(c); err != nil {
		return jobSettings{}, err
	}
	set := jobSettings{
		workspace: c.String("workspace"), runDir: c.String("run-dir"), step: c.String("step"),
		handoff: policy.HandoffPolicy{Enabled: !c.Bool("no-handoff"), Window: c.Int("window"),
			Headroom: c.Int("headroom"), MaxGenerations: c.Int("max-generations")},
		taskCarry: -1, compact: compact, harness: c.String("harness"), harnessKind: c.String("harness-kind"), model: c.String("model"),
		maxAttempts: c.Int("max-attempts"), turnTimeout: c.Duration("turn-timeout"),
		view:    viewSettings{lang: langOf(c, p.env), output: c.String("output"), quiet: c.Bool("quiet")},
		verbose: c.Bool("verbose"), harnessEnv: p.env,
		notify: c.String("notify"), notifyTimeout: c.Duration("notify-timeout"),
		maxBudgetUSD: c.Float64("max-budget-usd"), maxDuration: c.Duration("max-duration"),
		maxWait: c.Duration("max-wait"), limitBackoff: c.Duration("limit-backoff"),
		skipWorkspace: c.Bool("skip-workspace-settings"),
	}
	if err := set.checkUnattended(); err != nil {
		return jobSettings{}, err
	}
	if _, err := parseHarnessKind(set.harnessKind); err != nil {
		return jobSettings{}, err
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

// The FLOWER_* variables that are a flag's: the flag reads it (urfave/cli's
// EnvVars, the flag winning), and the Agent SDK relay, which has no flags,
// reads it through envNumber with the flag's rule.
const (
	envWindow         = "FLOWER_WINDOW"
	envHeadroom       = "FLOWER_HEADROOM"
	envMaxGenerations = "FLOWER_MAX_GENERATIONS"
)

// numberRule says which values a numeric run setting takes; a value the
// engine would silently replace by a default (a zero headroom, say) is
// refused like a negative one.
type numberRule struct {
	flag string
	env  string // the FLOWER_* variable that sets it too, "" for none
	min  int
	why  string // how to get what a refused zero would mean, if anything
}

// numberRules are the numeric run settings.
var numberRules = []numberRule{
	{"window", envWindow, 1, " (leave it out to use what the harness reports)"},
	{"headroom", envHeadroom, 1, ""},
	{"max-generations", envMaxGenerations, 1, ""},
	{"max-attempts", "", 1, ""},
	{"task-carry", "", 0, ""},
}

// check refuses n out of the rule's range with one line naming where it
// came from (--window, or FLOWER_WINDOW).
func (r numberRule) check(name string, n int) error {
	if n >= r.min {
		return nil
	}
	if r.min == 0 {
		return usagef("%s must not be negative, got %d", name, n)
	}
	return usagef("%s must be at least %d, got %d%s", name, r.min, n, r.why)
}

// source names where the rule's value n came from: its variable when that
// holds n (urfave/cli gives a flag its variable's value when the flag is
// not given), else the flag.
func (r numberRule) source(n int) string {
	if r.env != "" {
		if v, ok := os.LookupEnv(r.env); ok {
			if m, err := parseSize(v); err == nil && m == n {
				return r.env
			}
		}
	}
	return "--" + r.flag
}

// envNumber reads the rule's variable from env (the relay's settings):
// unset or blank gives ok false, anything but a whole number in the rule's
// range is refused with the variable's name.
func envNumber(r numberRule, env func(string) string) (n int, ok bool, err error) {
	v := env(r.env)
	if v == "" {
		return 0, false, nil
	}
	n, err = parseSize(v)
	if err != nil {
		return 0, false, usagef("%s=%q: want a whole number (200000, 200K, 1M), at least %d (unset it for the default)", r.env, v, r.min)
	}
	if err := r.check(r.env, n); err != nil {
		return 0, false, err
	}
	return n, true, nil
}

// checkNumbers refuses run flags out of their range with one line that
// names the flag (or the variable it came from); the flags a command lacks
// are skipped.
func checkNumbers(c *cli.Context) error {
	for _, r := range numberRules {
		if !c.IsSet(r.flag) {
			continue
		}
		n := c.Int(r.flag)
		if err := r.check(r.source(n), n); err != nil {
			return err
		}
	}
	if d := c.Duration("turn-timeout"); c.IsSet("turn-timeout") && d < 0 {
		return usagef("--turn-timeout must not be negative, got %v (0 or leaving it out: no bound)", d)
	}
	return nil
}

// setupJob builds the Runtime from set: the run dir, its log, the renderer.
func setupJob(set jobSettings, p proc) (*job, error) {
	// Every check comes before anything is made on disk.
	render, err := newRenderer(set.view, p)
	if err != nil {
		return nil, err
	}
	harnessPath, kind, workspace, err := jobPlace(set, p.stderr)
	if err != nil {
		render.close()
		return nil, err
	}
	store, harnessArgs, admit, err := gateWorkspace(p, workspace, set.skipWorkspace, gateOf(kind, set.front != nil))
	if err != nil {
		render.close()
		return nil, err
	}
	newDir := func(runs string) (string, error) {
		// A run dir of its own, however close another run started
		// (DESIGN.md «One step, one owner»).
		return workbench.NewRunDir(runs, time.Now())
	}
	place, err := openRun(runWhere{workspace: workspace, runDir: set.runDir, step: set.step, newDir: newDir})
	if err != nil {
		render.close()
		return nil, err
	}
	launcher, frontName, onEvent := kind.info().headless, kind.info().frontName, render.event
	if set.front != nil {
		launcher, onEvent = set.front(place.logger, place.runDir, kind)
		frontName = registry.FrontInteractive
	}
	onEvent = place.listen(p, registry.Entry{Front: frontName, Workspace: workspace, Step: set.step},
		notify.Options{Command: set.notify, Timeout: set.notifyTimeout}, onEvent)
	rt, err := place.startRun(supervisor.Options{
		Workspace: workspace, Handoff: &set.handoff, Compact: set.compact,
		HarnessPath: harnessPath, HarnessArgs: harnessArgs, HookBinary: hookBinary, Env: set.harnessEnv, Model: set.model,
		MaxAttempts: set.maxAttempts, TurnTimeout: set.turnTimeout,
		OnEvent: onEvent, AfterFreeze: pauseAfterFreeze(), Front: launcher, HarnessKind: string(kind), TaskCarry: set.taskCarry,
		TrustNotes: set.trustNotes, Trust: store, Admit: admit, Reach: reachOf(kind, set.harnessEnv, harnessArgs, workspace),
		MaxBudgetUSD: set.maxBudgetUSD, MaxDuration: set.maxDuration, MaxWait: set.maxWait, LimitBackoff: set.limitBackoff,
	}, set.step, func(err error) {
		// The run goes on; show and continue then need the run dir named.
		fmt.Fprintf(p.stderr, "flower: %v; name this run with --run-dir %s\n", err, place.runDir)
	})
	if err != nil {
		render.close()
		return nil, err
	}
	if set.verbose {
		printVerbose(p.stderr, rt, harnessPath, harnessArgs)
	}
	return &job{rt: rt, runPlace: place, harnessPath: harnessPath, render: render,
		harnessArgs: p.harnessArgs, interactive: set.front != nil, noContinue: set.noContinue}, nil
}

// gateOf is the trust gate of an unattended run on a harness of kind; nil
// for an interactive one, whose harness asks the person itself.
func gateOf(kind harnessKind, interactive bool) *trust.Harness {
	if interactive {
		return nil
	}
	return kind.info().gate
}

// jobPlace is set's harness, its kind and the workspace, made absolute and
// checked; a harness chosen over PATH's claude is said on stderr. A kind
// whose screen is no front of flower's is refused -i.
func jobPlace(set jobSettings, stderr io.Writer) (harnessPath string, kind harnessKind, workspace string, err error) {
	ch, kind, err := chooseOf(context.Background(), set.harness, set.harnessKind)
	if err != nil {
		return "", "", "", err
	}
	harnessPath = ch.Path
	if ch.Note != "" {
		fmt.Fprintln(stderr, ch.Note)
	}
	if set.front != nil && kind.info().screen == nil {
		return "", "", "", usagef("%s runs headless under flower: leave out -i (its own screen is not one of flower's fronts)", kind.product())
	}
	if workspace, err = filepath.Abs(set.workspace); err != nil {
		return "", "", "", err
	}
	if fi, err := os.Stat(workspace); err != nil || !fi.IsDir() {
		return "", "", "", usagef("workspace %s is not a directory", workspace)
	}
	return harnessPath, kind, workspace, nil
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

// logFileMode is the run log's (workbench.LogFile): it holds previews of
// tool output, so it is private to the user (DESIGN.md «Durable or loud»).
const logFileMode = 0o600

// printVerbose is what -v shows before a run. Secrets are masked: the
// credentials, the endpoint's userinfo, path and query
// (envinject.RedactURL), and every value of a harness flag that may carry
// one (harness.LoggedArgs).
func printVerbose(w io.Writer, rt *supervisor.Runtime, harnessPath string, harnessArgs []string) {
	env := rt.ChildEnv()
	fmt.Fprintf(w, "flower: harness %s\n", harnessPath)
	if len(harnessArgs) > 0 {
		fmt.Fprintf(w, "flower: harness arguments %s\n", strings.Join(harness.LoggedArgs(harnessArgs), " "))
	}
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
// is not a terminal: at most workbench.MaxTask bytes (DESIGN.md «Input
// caps»), with a warning on stderr near that cap.
func readTask(c *cli.Context, stdin io.Reader) (string, error) {
	task, err := readTaskUncapped(c, stdin)
	if err != nil {
		return "", err
	}
	if len(task) > workbench.MaxTask {
		return "", taskTooLarge()
	}
	if workbench.NearCap(len(task), workbench.MaxTask) {
		fmt.Fprintf(c.App.ErrWriter, "flower: the task holds %s, near the cap of %s for a task\n", safefile.Size(int64(len(task))), safefile.Size(workbench.MaxTask))
	}
	return task, nil
}

func taskTooLarge() error {
	return usagef("the task is over %s, the cap for a task (it lives in manifest.json and in every successor's prompt): put the bulk in a file in the workspace and tell the task to read it", safefile.Size(workbench.MaxTask))
}

// capped reads r up to one byte past the task's cap: enough to tell it is
// over, never all of an endless stream.
func capped(r io.Reader) ([]byte, error) {
	return io.ReadAll(io.LimitReader(r, workbench.MaxTask+1))
}

func readTaskUncapped(c *cli.Context, stdin io.Reader) (string, error) {
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
		b, err := capped(stdin)
		if err != nil {
			return "", fmt.Errorf("read task from stdin: %w", err)
		}
		task = string(b)
	case file != "":
		b, err := readTaskFile(c.String("workspace"), file)
		if errors.Is(err, safefile.ErrTooLarge) {
			return "", taskTooLarge()
		} else if errors.Is(err, safefile.ErrUnsafe) {
			return "", usagef("read task file: %v", err)
		} else if err != nil {
			return "", usagef("read task file: %v (a FIFO or a device goes on stdin, with -f -)", err)
		}
		task = string(b)
	default:
		if f, ok := stdin.(*os.File); !ok || term.IsTerminal(int(f.Fd())) {
			return "", usagef("no task: give it as an argument, with -f FILE, or on stdin (see flower --help)")
		}
		b, err := capped(stdin)
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

// discardRunDir removes a run dir this run created and is giving up before
// it ran anything: the files flower put there, then the folder, which stays
// if anything else is in it.
func discardRunDir(dir string) {
	_ = os.Remove(workbench.LogFile(dir))
	_ = os.Remove(filepath.Join(dir, workbench.GitignoreName))
	_ = os.Remove(dir)
}

// linkLatest points <runs>/latest at the run dir, so show and continue find
// it; failing to is said, not worth stopping a run for. A run dir outside
// the workbench gets no link: the folder it would go into is the person's.
// Only flower's own link is replaced (DESIGN.md «Territory»).
func linkLatest(runDir, workbenchDir string) error {
	if rel, err := filepath.Rel(workbenchDir, filepath.Dir(runDir)); err != nil || !filepath.IsLocal(rel) {
		return nil
	}
	return workbench.LinkLatest(runDir)
}

var errNoHarness = errors.New("no harness found")

// readTaskFile reads --task-file: the person's file, read as they named it
// (links followed, unless a link in the workspace leads out of it), but
// only a regular file, never blocking on a FIFO nor reading more than the
// cap allows (DESIGN.md «Territory»).
func readTaskFile(workspace, name string) ([]byte, error) {
	return safefile.ReadGivenIn(workspace, name, workbench.MaxTask, "a task")
}
