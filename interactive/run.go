package interactive

import (
	"context"
	"errors"
	"fmt"
	"github.com/flowerhq/flower/console"
	"github.com/flowerhq/flower/handoff"
	"github.com/flowerhq/flower/harness"
	"github.com/flowerhq/flower/runlog"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/flowerhq/flower/manifest"
	"github.com/flowerhq/flower/policy"
	"github.com/flowerhq/flower/supervisor"
	"github.com/flowerhq/flower/transcript"
	"github.com/flowerhq/flower/workbench"
)

// Defaults for Options.
const (
	DefaultCutTimeout     = 60 * time.Second
	DefaultWritingTimeout = 15 * time.Minute
	DefaultGrace          = harness.DefaultGrace
	// DefaultSubmitTimeout bounds the wait for a typed prompt to show up in
	// the transcript.
	DefaultSubmitTimeout = 30 * time.Second
)

// Options configure Run.
type Options struct {
	// Workspace is the harness's working directory. Required.
	Workspace string
	// HarnessPath is the claude executable. Required.
	HarnessPath string
	// HarnessArgs are the harness's flags (--model included, if any).
	HarnessArgs []string
	// Model is recorded in the manifest.
	Model string
	// Env is the harness's complete environment (see package envinject).
	// Its HOME or CLAUDE_CONFIG_DIR says where the transcript is written.
	Env []string
	// Policy is the resolved handoff policy.
	Policy policy.HandoffPolicy
	// WindowSource is recorded in the manifest (manifest.WindowFrom…).
	WindowSource string
	// Manifest is the run's manifest; Run owns it until it returns.
	Manifest *manifest.Manifest
	// Workbench holds the handoff files; nil means none (R29).
	Workbench *workbench.Workbench
	// Step names the step ("main" when empty).
	Step string
	// Task is the first generation's first prompt; "" lets the person type
	// it (the first prompt they submit is then recorded as the task).
	Task string
	// In is the person's terminal (keys, modes, size); Out is the screen.
	In  *os.File
	Out io.Writer
	// Render decides what the person sees of events (PlainRenderer when nil).
	Render Renderer
	// OnEvent receives every event (for the log), from Run's goroutine.
	OnEvent func(supervisor.Event)
	// Logger receives the structured log (discarded when nil).
	Logger *slog.Logger
	// CutTimeout bounds the wait for the turn to end at a cut;
	// WritingTimeout the writing turn; SubmitTimeout the wait for a typed
	// prompt to arrive; Grace each stage of stopping a harness.
	CutTimeout, WritingTimeout, SubmitTimeout, Grace time.Duration
	// AfterFreeze, if set, is called with the handoff's path after it is
	// written and before the successor's prompt is read back from it.
	AfterFreeze func(path string)
	// TaskCarry bounds how many characters of the task a successor's first
	// prompt carries verbatim (0: handoff.DefaultTaskCarry; negative: none).
	TaskCarry int
	// Signals end the run when received (SIGINT, SIGTERM and SIGHUP when
	// nil, none when empty); the terminal is restored at once.
	Signals []os.Signal
	// Now is the clock (time.Now when nil).
	Now func() time.Time
}

// Run runs one step interactively: a harness in a pty on the person's
// terminal, handing off to a successor whenever the context fills up, until
// the person ends a harness (the step then succeeded), the harness fails, the
// generation limit is hit, or ctx is done. The terminal is restored before
// Run returns, however it returns. The step's record is also in the manifest.
func Run(ctx context.Context, opts Options) (*manifest.StepResult, error) {
	if err := opts.fill(); err != nil {
		return nil, err
	}
	t, err := NewTerminal(opts.In, opts.Out)
	if err != nil {
		return nil, err
	}
	r := &run{
		opts:      opts,
		term:      t,
		screen:    NewScreen(opts.Out),
		gate:      &Gate{},
		logState:  runlog.NewState(),
		configDir: transcript.ConfigDir(opts.Env),
		used:      map[string]bool{},
	}
	r.log = runlog.New(opts.Logger, r.logState, opts.Step).With("mode", "interactive")
	defer t.Restore()
	defer func() {
		if v := recover(); v != nil {
			t.Restore()
			panic(v)
		}
	}()
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stopSignals := r.handleSignals(cancel)
	defer stopSignals()
	go r.guard(func() { r.readKeys(opts.In) })
	return r.step(ctx)
}

func (o *Options) fill() error {
	switch {
	case o.Workspace == "":
		return errors.New("interactive: workspace is required")
	case o.HarnessPath == "":
		return supervisor.ErrNoHarness
	case o.Manifest == nil:
		return errors.New("interactive: manifest is required")
	}
	if o.Step == "" {
		o.Step = "main"
	}
	if o.Render == nil {
		o.Render = PlainRenderer{}
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.CutTimeout <= 0 {
		o.CutTimeout = DefaultCutTimeout
	}
	if o.WritingTimeout <= 0 {
		o.WritingTimeout = DefaultWritingTimeout
	}
	if o.SubmitTimeout <= 0 {
		o.SubmitTimeout = DefaultSubmitTimeout
	}
	if o.Grace <= 0 {
		o.Grace = DefaultGrace
	}
	if o.Signals == nil {
		o.Signals = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP}
	}
	return nil
}

// run is the state of one Run call.
type run struct {
	opts      Options
	term      *Terminal
	screen    *Screen
	gate      *Gate
	log       *slog.Logger
	logState  *runlog.State // generation, session and phase on every log record
	configDir string
	st        *manifest.StepResult
	used      map[string]bool // transcripts earlier generations followed

	mu      sync.Mutex
	cur     *proc              // the running harness, for SIGWINCH
	waiting []supervisor.Event // events whose lines wait for a free screen
}

// guard runs f; a panic restores the terminal before it takes the process
// down, since only the panicking goroutine's deferred calls run.
func (r *run) guard(f func()) {
	defer func() {
		if v := recover(); v != nil {
			r.term.Restore()
			panic(v)
		}
	}()
	f()
}

// handleSignals restores the terminal as soon as a terminating signal
// arrives (a second one may make the process exit at once) and ends the run;
// it also follows window-size changes.
func (r *run) handleSignals(cancel context.CancelCauseFunc) (stop func()) {
	sigs := make(chan os.Signal, 4)
	if len(r.opts.Signals) > 0 {
		signal.Notify(sigs, r.opts.Signals...)
	}
	winch := make(chan os.Signal, 1)
	signal.Notify(winch, syscall.SIGWINCH)
	done := make(chan struct{})
	go r.guard(func() {
		for {
			select {
			case sig := <-sigs:
				r.term.Restore()
				r.log.Warn("signal: ending the interactive run", "signal", sig.String())
				cancel(fmt.Errorf("%w by %v", context.Canceled, sig))
			case <-winch:
				// Under the lock: a harness is detached before its pty
				// is closed.
				r.mu.Lock()
				if r.cur != nil {
					r.cur.Resize(r.term.Size())
				}
				r.mu.Unlock()
			case <-done:
				return
			}
		}
	})
	return func() {
		signal.Stop(sigs)
		signal.Stop(winch)
		close(done)
	}
}

// readKeys copies the person's keys into the gate for as long as the
// terminal gives them.
func (r *run) readKeys(in io.Reader) {
	buf := make([]byte, 4096)
	for {
		n, err := in.Read(buf)
		if n > 0 {
			_, _ = r.gate.Write(buf[:n])
		}
		if err != nil {
			return
		}
	}
}

func (r *run) emit(ev supervisor.Event) {
	r.logEvent(ev)
	if r.opts.OnEvent != nil {
		r.opts.OnEvent(ev)
	}
}

// logEvent records an event in the run's log: the screen is the harness's,
// so the log is where `flower logs` finds what flower did. The step,
// generation, session and phase come from the log state.
func (r *run) logEvent(ev supervisor.Event) {
	level := slog.LevelInfo
	if ev.Kind == supervisor.KindText || ev.Kind == supervisor.KindTool {
		level = slog.LevelDebug
	}
	attrs := []any{"kind", string(ev.Kind)}
	for _, kv := range []struct {
		k   string
		v   any
		set bool
	}{
		{"handoff", ev.Phase, ev.Phase != ""},
		{"context", ev.Context, ev.Context != 0},
		{"window", ev.Window, ev.Window != 0},
		{"path", ev.Path, ev.Path != ""},
		{"degraded", ev.Degraded, ev.Kind == supervisor.KindHandoff && ev.Phase == supervisor.PhaseDone},
		{"why", ev.Why, ev.Why != ""},
		{"tool", ev.Tool, ev.Tool != ""},
		{"text", console.Abbrev(ev.Text, 200), ev.Text != ""},
	} {
		if kv.set {
			attrs = append(attrs, kv.k, kv.v)
		}
	}
	r.log.Log(context.Background(), level, "event", attrs...)
}

// show queues ev's lines for the next time the screen is free, and shows its
// title now.
func (r *run) show(ev supervisor.Event) {
	r.emit(ev)
	if t := r.opts.Render.Title(ev); t != "" {
		r.screen.SetTitle(t)
	}
	if r.opts.Render.Lines(ev) != "" {
		r.mu.Lock()
		r.waiting = append(r.waiting, ev)
		r.mu.Unlock()
	}
}

// flushLines prints the waiting lines; the terminal is not raw then, so
// "\n" starts a new line.
func (r *run) flushLines() {
	r.mu.Lock()
	evs := r.waiting
	r.waiting = nil
	r.mu.Unlock()
	for _, ev := range evs {
		_, _ = io.WriteString(r.opts.Out, r.opts.Render.Lines(ev))
	}
}

func (r *run) save() {
	if err := r.opts.Manifest.Save(); err != nil {
		r.log.Error("save manifest", "err", err)
	}
}

// step is the generation loop (the headless one is supervisor's stepRun.run).
func (r *run) step(ctx context.Context) (*manifest.StepResult, error) {
	o := r.opts
	now := o.Now()
	st := o.Manifest.EnsureStep(o.Step, o.Task, now)
	r.st = st
	if o.Task != "" {
		st.Task = o.Task
	}
	st.Status = manifest.StatusRunning
	st.Window = o.Policy.Window
	st.WindowSource = o.WindowSource
	st.Model = o.Model
	st.EndedAt = nil
	if st.StartedAt.IsZero() {
		st.StartedAt = now
	}
	prompt := o.Task
	r.books().FreezeTask()
	st.BeginGeneration("", now)
	r.save()
	for {
		gen := st.Current()
		out := r.generation(ctx, gen, prompt)
		gen.Context = st.Context
		r.flushLines()
		switch out.kind {
		case outcomeDone:
			st.Finish(manifest.StatusSucceeded, o.Now())
			r.save()
			return st, nil
		case outcomeInterrupted:
			st.AddError("interrupted: " + out.why)
			st.Finish(manifest.StatusInterrupted, o.Now())
			r.save()
			return st, fmt.Errorf("step %s interrupted: %w", st.Name, context.Cause(ctx))
		case outcomeFailed:
			st.Attempts++
			st.AddError(fmt.Sprintf("attempt %d: %s", st.Attempts, out.why))
			st.Finish(manifest.StatusFailed, o.Now())
			r.save()
			return st, fmt.Errorf("%w: %s: %s", supervisor.ErrStepFailed, st.Name, out.why)
		case outcomeHandoff:
			next, err := r.handOff(gen, out.cut)
			r.flushLines()
			if err != nil {
				return st, err
			}
			prompt = next
			st.BeginGeneration("", o.Now())
			r.save()
		}
	}
}

type outcomeKind int

const (
	outcomeDone        outcomeKind = iota // the person ended the harness
	outcomeHandoff                        // cut (or overflowed): hand off to a successor
	outcomeFailed                         // the harness failed
	outcomeInterrupted                    // ctx is done
)

type outcome struct {
	kind outcomeKind
	why  string
	cut  handoff.Cut
}

// generation runs one harness on the terminal until it ends. The terminal is
// raw for exactly as long as the harness runs.
func (r *run) generation(ctx context.Context, gen *manifest.Generation, prompt string) outcome {
	o := r.opts
	r.logState.Set(gen.N, "", runlog.PhaseStarting)
	log := r.log
	if err := r.term.MakeRaw(); err != nil {
		return outcome{kind: outcomeFailed, why: err.Error()}
	}
	defer r.term.Restore()
	r.screen.Reset()
	// A prompt too long for one argument (Linux: 128 KiB) is typed instead.
	argPrompt, typed := prompt, ""
	if len(prompt) > maxArgPrompt {
		argPrompt, typed = "", prompt
	}
	launched := o.Now()
	// The harness is stopped by flower, gracefully, not by ctx.
	p, err := startProc(context.WithoutCancel(ctx), procConfig{
		Path: o.HarnessPath, Args: o.HarnessArgs, Prompt: argPrompt, Dir: o.Workspace, Env: o.Env,
		Size: r.term.Size(), Grace: o.Grace, Logger: log,
	}, r.screen)
	if err != nil {
		return outcome{kind: outcomeFailed, why: err.Error()}
	}
	r.mu.Lock()
	r.cur = p
	r.mu.Unlock()
	// Keys held over from the last harness wait until this one is up: a
	// pty echoes what it is given before the harness makes it raw.
	r.gate.Hold()
	r.gate.Attach(p.pty)
	g := &genRun{
		run: r, gen: gen, p: p, log: log, typedPrompt: typed, argPrompt: argPrompt != "",
		loc: locator{configDir: r.configDir, cwd: o.Workspace, pid: p.PID(), since: launched.Add(-time.Second), used: r.used},
	}
	// However this generation ends (a panic included), the harness is
	// stopped and its transcript read to the end.
	defer func() {
		r.mu.Lock()
		r.cur = nil
		r.mu.Unlock()
		g.finish()
	}()
	log.Info("harness started", "pid", p.PID(), "interactive", true)
	g.setPhase(phaseWorking)
	r.emit(supervisor.Event{Kind: supervisor.KindGeneration, Step: r.st.Name, Generation: gen.N,
		Window: o.Policy.Window, At: o.Policy.At(), WarnAt: o.Policy.WarnAt()})
	return g.follow(ctx)
}

// maxArgPrompt bounds a first prompt given on the command line.
const maxArgPrompt = 100 << 10

// exitKeys ends a harness as a person would: Ctrl-C twice.
func (r *run) exitKeys() error {
	if err := r.gate.Type([]byte(keyCtrlC)); err != nil {
		return err
	}
	time.Sleep(150 * time.Millisecond)
	return r.gate.Type([]byte(keyCtrlC))
}
