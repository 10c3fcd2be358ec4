package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/flowerhq/flower/demo"
	"github.com/flowerhq/flower/interactive"
	"github.com/flowerhq/flower/manifest"
	"github.com/flowerhq/flower/policy"
	"github.com/flowerhq/flower/scriptedapi"
	"github.com/flowerhq/flower/scriptedgen"
	"github.com/flowerhq/flower/scriptedresp"
	"github.com/flowerhq/flower/supervisor"
	"github.com/flowerhq/flower/workbench"
)

func demoCommand(p proc) *cli.Command {
	return &cli.Command{
		Name:      "demo",
		Usage:     "watch a handoff happen on the real harness against a scripted local model",
		UsageText: "flower demo [-i] [--harness-kind codex] [--clean] [--pace 0] [--lang en] [-q] [-v]",
		Description: `Runs a real supervised job on the real harness. The model is scripted and
served on 127.0.0.1: no API key, no network, nothing billed. It writes a small
tool in a fresh workspace over three sessions; each of the first two fills its
context past the handoff threshold of a 200K window, writes its handoff, and a
new session takes over from the file. The workspace is kept for inspection
unless --clean is given.

Examples:
   flower demo                 # labels in the locale's language
   flower demo --lang zh       # the Chinese status lines, as in the design
   flower demo --pace 0 --clean   # as fast as it goes, leave nothing behind
   flower demo -i              # in the harness's own screen; /exit when the third session is done
   flower demo --harness-kind codex   # the same story on the Codex CLI (make codex installs it)
   flower demo -i --harness-kind codex   # in the Codex CLI's own screen; Ctrl-C when the third session is done`,
		Flags:  demoFlags(),
		Action: func(c *cli.Context) error { return demoAction(c, p) },
	}
}

func demoFlags() []cli.Flag {
	return []cli.Flag{
		&cli.DurationFlag{Name: "pace", Value: demo.DefaultPace, Usage: "the scripted model's pause before each reply, so a person can follow (0: full speed)"},
		&cli.BoolFlag{Name: "interactive", Aliases: []string{"i"}, Usage: "run it in the harness's own screen (a terminal), flower's figures on its status line (Codex: in the window's title); /exit (Codex: Ctrl-C) ends it"},
		&cli.BoolFlag{Name: "clean", Usage: "remove the demo's directory at the end", DefaultText: "keep it for inspection"},
		&cli.StringFlag{Name: "harness", EnvVars: []string{"FLOWER_HARNESS"}, Usage: "the harness executable (claude, or codex with --harness-kind codex)", DefaultText: "the copy make installed, else the kind's on PATH"},
		&cli.StringFlag{Name: "harness-kind", EnvVars: []string{envHarnessKind}, Usage: kindList() + ", against a scripted model of its own API", Value: string(kindClaude)},
		langFlag("labels of the status lines"),
		&cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Usage: "do not print the assistant's text and tool calls"},
		&cli.BoolFlag{Name: "verbose", Aliases: []string{"v"}, Usage: "show the harness's auth configuration (all fake) and the policy before running"},
	}
}

// demoTimeout bounds the whole demo; at the default pace it takes about 15
// seconds.
const demoTimeout = 3 * time.Minute

func demoAction(c *cli.Context, p proc) (err error) {
	kind, err := parseHarnessKind(c.String("harness-kind"))
	if err != nil {
		return err
	}
	if kind == "" {
		kind = kindClaude
	}
	screen, err := demoArgs(c, p, kind)
	if err != nil {
		return err
	}
	d, err := newDemoDirs(!c.Bool("clean"))
	if err != nil {
		return err
	}
	defer func() { err = d.close(err, p.stderr) }()

	model := demo.NewModel(d.workspace, c.Duration("pace"))
	served, err := kind.info().demo(model, d.home)
	if err != nil {
		return err
	}
	defer served.stop()

	// The settings the scripted model was written for.
	set := jobSettings{
		workspace: d.workspace, step: demo.Step,
		handoff: policy.HandoffPolicy{Enabled: true, Window: demo.Window,
			Headroom: policy.DefaultHeadroom, MaxGenerations: policy.DefaultMaxGenerations},
		harness: c.String("harness"), harnessKind: string(kind), maxAttempts: supervisor.DefaultMaxAttempts, turnTimeout: time.Minute,
		view:    viewSettings{lang: langOf(c, p.env), output: outputText, quiet: c.Bool("quiet")},
		verbose: c.Bool("verbose"),
		// The harness gets a HOME of its own: the person's is left as
		// it was, but for flower's registry entry, which flower ps lists
		// while the demo runs (a run like any other) and which goes when
		// it ends.
		harnessEnv: demo.HarnessEnv(os.Environ(), d.home, served.env),
		noContinue: true,
	}
	p.harnessArgs = served.args
	if c.Bool("interactive") {
		var how string
		if p.harnessArgs, how, err = kind.info().demoScreen(d.home, d.workspace); err != nil {
			return fmt.Errorf("demo directory: %w", err)
		}
		d.started = true
		return demoScreen(c, set, p, screen, served.url, d.workspace, how)
	}
	return demoStream(c.Context, set, p, served.url, d)
}

// claudeDemo serves the story in the Messages API, for Claude Code.
func claudeDemo(model *demo.Model, _ string) (demoModel, error) {
	srv, err := scriptedapi.Start(model.Script)
	if err != nil {
		return demoModel{}, fmt.Errorf("start the scripted model: %w", err)
	}
	return demoModel{url: srv.URL, env: srv.Env(), args: demo.HarnessArgs, stop: func() { srv.Close() }}, nil
}

// claudeDemoScreen readies Claude Code's HOME for demo -i: its first-run
// screens answered, the scripted key approved.
func claudeDemoScreen(home, workspace string) ([]string, string, error) {
	return demo.InteractiveArgs, "flower's figures are on the status line under the input box; type /exit once the third session is done",
		demo.SeedScreen(home, workspace, scriptedapi.APIKey)
}

// codexDemoScreen: the Codex CLI's screen needs nothing readied; its
// one tool needs no flag.
func codexDemoScreen(string, string) ([]string, string, error) {
	return nil, "flower's figures are in the window's title; press Ctrl-C (or type /quit) once the third session is done", nil
}

// codexDemo serves the story in the Responses API, for the Codex CLI,
// pointed at it by a CODEX_HOME of the demo's own. Its one tool, a shell
// command, needs no flag.
func codexDemo(model *demo.Model, home string) (demoModel, error) {
	srv, err := scriptedresp.Start(model.ResponsesScript)
	if err != nil {
		return demoModel{}, fmt.Errorf("start the scripted model: %w", err)
	}
	codexHome := filepath.Join(home, ".codex")
	// Codex compacts at 90 % of its window whatever it is told: the
	// story's contexts (up to 157K) stay under it, and the demo's window
	// (200K, given as if by --window) is what flower works with.
	if err := os.Mkdir(codexHome, 0o700); err == nil {
		err = scriptedresp.WriteCodexHome(codexHome, srv.URL, "model_context_window = 250000\n")
	}
	if err != nil {
		srv.Close()
		return demoModel{}, fmt.Errorf("demo directory: %w", err)
	}
	return demoModel{url: srv.URL, env: append([]string{"CODEX_HOME=" + codexHome}, scriptedresp.KeyEnv()...), stop: func() { srv.Close() }}, nil
}

// geminiDemo serves the story in the Gemini API, for the Gemini CLI,
// pointed at it by the user settings of the demo's HOME; its one tool, a
// shell command, needs every tool approved.
func geminiDemo(model *demo.Model, home string) (demoModel, error) {
	srv, err := scriptedgen.Start(model.GeminiScript)
	if err != nil {
		return demoModel{}, fmt.Errorf("start the scripted model: %w", err)
	}
	if err := scriptedgen.WriteHome(home); err != nil {
		srv.Close()
		return demoModel{}, fmt.Errorf("demo directory: %w", err)
	}
	return demoModel{url: srv.URL, env: srv.Env(), args: []string{"--approval-mode", "yolo"}, stop: func() { srv.Close() }}, nil
}

// demoArgs checks the demo's command line and picks the pinned harness
// when none is named; screen is the terminal -i runs on.
func demoArgs(c *cli.Context, p proc, kind harnessKind) (screen *os.File, err error) {
	if c.NArg() > 0 {
		return nil, usagef("demo takes no arguments, got %q", c.Args().First())
	}
	if c.Duration("pace") < 0 {
		return nil, usagef("--pace must not be negative")
	}
	if kind.info().demoScreen == nil && c.Bool("interactive") {
		return nil, usagef("demo -i is not offered on %s yet: run flower demo --harness-kind %s without -i, or flower -i --harness-kind %s on a task of yours", kind.product(), kind, kind)
	}
	screen, isScreen := p.stdin.(*os.File)
	if c.Bool("interactive") && (!isScreen || !isTerminal(screen)) {
		return nil, usageError{interactive.ErrNotTerminal}
	}
	// The script was observed on the pinned harness; prefer it to whatever
	// the kind's binary is on PATH.
	if pinned := kind.info().pinned(); c.String("harness") == "" && isExecutable(pinned) {
		if err := c.Set("harness", pinned); err != nil {
			return nil, err
		}
	}
	return screen, nil
}

// demoDirs are the demo's workspace and the harness's HOME, in a temp
// directory of their own.
type demoDirs struct {
	root, workspace, home string
	// keep: left for inspection once the job ran (no --clean); started:
	// the job ran, or began to. A demo that never started leaves nothing.
	keep, started bool
}

func newDemoDirs(keep bool) (*demoDirs, error) {
	root, err := os.MkdirTemp("", "flower-demo-")
	if err != nil {
		return nil, fmt.Errorf("demo directory: %w", err)
	}
	d := &demoDirs{root: root, workspace: filepath.Join(root, "workspace"), home: filepath.Join(root, "home"), keep: keep}
	for _, dir := range []string{d.workspace, d.home} {
		if err := os.Mkdir(dir, 0o755); err != nil {
			_ = os.RemoveAll(root)
			return nil, fmt.Errorf("demo directory: %w", err)
		}
	}
	return d, nil
}

// close removes the directories, or says where they are kept; err is the
// demo's, joined with a failure to remove them.
func (d *demoDirs) close(err error, stderr io.Writer) error {
	switch {
	case !d.started:
		_ = os.RemoveAll(d.root)
	case d.keep:
		fmt.Fprintf(stderr, "workspace: %s (kept; remove it with rm -rf %s)\n", d.workspace, d.root)
	default:
		if rerr := os.RemoveAll(d.root); rerr != nil {
			return errors.Join(err, fmt.Errorf("remove the demo directory: %w", rerr))
		}
		fmt.Fprintf(stderr, "flower demo: removed %s (--clean)\n", d.root)
	}
	return err
}

// demoStream runs the demo's job headless, with the lines that say what it
// is before and what it did after.
func demoStream(ctx context.Context, set jobSettings, p proc, url string, d *demoDirs) error {
	job, err := setupJob(set, p)
	if err != nil {
		return err
	}
	// Closed before the demo's own closing lines, which would otherwise
	// land on the gauge's line.
	closeJob := sync.OnceFunc(job.close)
	defer closeJob()

	pol := job.rt.Policy()
	fmt.Fprintf(p.stderr, "flower demo: the real harness (%s), a scripted model on %s: no API key, no network\n", job.harnessPath, url)
	fmt.Fprintf(p.stderr, "flower demo: window %s · near notice at %s · handoff at %s · workspace %s\n",
		policy.FormatRound(pol.Window), policy.FormatRound(pol.WarnAt()), policy.FormatRound(pol.At()), d.workspace)
	fmt.Fprintf(p.stderr, "flower demo: task: %s\n", demo.Task)
	fmt.Fprintf(p.stderr, "flower demo: flower ps lists it while it runs; flower show, logs and ui -C %s show it\n\n", d.workspace)

	ctx, cancel := context.WithTimeout(ctx, demoTimeout)
	defer cancel()
	start := time.Now()
	d.started = true
	st, err := job.rt.RunStep(ctx, demo.Step, demo.Task)
	job.finish(st, err)
	closeJob()
	if err != nil {
		return err
	}
	if err := checkDemo(st, d.workspace); err != nil {
		return fmt.Errorf("demo: %w (the log is in %s)", err, job.runDir)
	}
	fmt.Fprintf(p.stderr, "flower demo: %d sessions, %d handoffs in %.1fs; the cost is the harness's reckoning of the scripted usage, nothing was billed\n",
		len(st.Generations), len(st.Generations)-1, time.Since(start).Seconds())
	if d.keep {
		fmt.Fprintf(p.stderr, "flower demo: the files it wrote: %s\n", strings.Join(demo.Files, " "))
		fmt.Fprintf(p.stderr, "flower demo: earlier handoffs are kept in %s\n", filepath.Join(workbench.NotesDir(workbench.DirOf(d.workspace)), "archive"))
		fmt.Fprintf(p.stderr, "flower demo: the harness's HOME (its session logs) is %s\n", d.home)
	}
	return nil
}

// demoScreen runs the demo in the harness's own screen: the same story,
// the person watching flower's status line and typing /exit at the end.
func demoScreen(c *cli.Context, set jobSettings, p proc, in *os.File, url, workspace, how string) error {
	lang, err := set.view.check()
	if err != nil {
		return err
	}
	fmt.Fprintf(p.stderr, "flower demo -i: the real harness's own screen, a scripted model on %s: no API key, no network\n", url)
	fmt.Fprintf(p.stderr, "flower demo -i: %s\n", how)
	start := time.Now()
	job, st, err := screenJob(c, set, p, in, lang, demo.Task)
	if job == nil {
		return err
	}
	defer job.close()
	if err != nil {
		return err
	}
	if err := checkDemo(st, workspace); err != nil {
		return fmt.Errorf("demo: %w (the log is in %s)", err, job.runDir)
	}
	fmt.Fprintf(p.stderr, "flower demo -i: %d sessions, %d handoffs in %.1fs\n", len(st.Generations), len(st.Generations)-1, time.Since(start).Seconds())
	return nil
}

// checkDemo makes `make demo` fail when the story did not play out: a demo
// that quietly shows less than it promises would hide a regression.
func checkDemo(st *manifest.StepResult, workspace string) error {
	var problems []string
	handoffs := 0
	for _, g := range st.Generations {
		if g.Handoff == nil {
			continue
		}
		handoffs++
		if g.Handoff.Degraded {
			problems = append(problems, fmt.Sprintf("generation %d's handoff is degraded: %s", g.N, g.Handoff.Why))
		}
	}
	if len(st.Generations) != demo.Generations || handoffs != demo.Generations-1 {
		problems = append(problems, fmt.Sprintf("%d generations and %d handoffs, want %d and %d",
			len(st.Generations), handoffs, demo.Generations, demo.Generations-1))
	}
	for _, f := range demo.Files {
		if _, err := os.Stat(filepath.Join(workspace, f)); err != nil {
			problems = append(problems, fmt.Sprintf("the agent's file %s is missing", f))
		}
	}
	if len(problems) > 0 {
		return errors.New(strings.Join(problems, "; "))
	}
	return nil
}
