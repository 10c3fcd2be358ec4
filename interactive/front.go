package interactive

import (
	"context"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/flowerhq/flower/child"
	"github.com/flowerhq/flower/console"
	"github.com/flowerhq/flower/event"
	"github.com/flowerhq/flower/front"
	"github.com/flowerhq/flower/harness"
	"github.com/flowerhq/flower/inbox"
	"github.com/flowerhq/flower/transcript"
)

// Defaults for Options.
const (
	DefaultGrace = harness.DefaultGrace
	// DefaultSubmitTimeout bounds the wait for a typed prompt to show up in
	// the transcript; one that does not is logged and no longer awaited
	// (see session.Send).
	DefaultSubmitTimeout = 30 * time.Second
)

// Options configure a Front.
type Options struct {
	// In is the person's terminal (keys, modes, size); Out is the screen.
	In  *os.File
	Out io.Writer
	// Render decides what the person sees of events (PlainRenderer when nil).
	Render Renderer
	// Logger receives the front's own log (discarded when nil); each
	// harness logs to the logger of its front.Spec.
	Logger *slog.Logger
	// SubmitTimeout bounds the wait for a typed prompt to show up in the
	// transcript, and for a busy harness before one is typed
	// (DefaultSubmitTimeout when zero).
	SubmitTimeout time.Duration
	// Clock runs every wait and timing rule of the front: the typing pace,
	// the screen's protocol, the idle sign, the bounds above. It is the
	// engine's (supervisor.Options.Clock); the machine's when nil.
	Clock front.Clock
	// Signals end the run when received (SIGINT, SIGTERM and SIGHUP when
	// nil, none when empty); the terminal is restored at once.
	Signals []os.Signal
}

// Front runs each generation's harness on the person's terminal: its own
// screen in a pty, the person's keys passed through a Gate, and the meter
// read from the transcript file it writes. It implements front.Launcher for
// the engine (package supervisor), which decides every rule of a handoff.
type Front struct {
	opts   Options
	evLog  *slog.Logger // where events are logged: the engine's logger of the running harness
	term   *Terminal
	screen *Screen
	gate   *Gate
	log    *slog.Logger

	used map[string]bool // transcripts earlier generations followed (engine goroutine only)

	mu      sync.Mutex
	cur     *proc         // the running harness, for SIGWINCH
	waiting []event.Event // events whose lines wait for a free screen

	keys    *keyReader
	stopSig func()
	// inbox is the running step's (front.Spec.Inbox), where the handoff
	// key posts its request.
	inbox string
	// prompts holds flower's long prompts for the harness to read (quiet.go).
	prompts promptFiles
	// meter is flower's meter for the window title, for a harness whose
	// screen has no place for it (Codex); nil: none.
	meter func() string
}

var _ front.Launcher = (*Front)(nil)

// Open takes the terminal for an interactive run. The returned context is
// ctx, cancelled when one of opts.Signals arrives (the terminal is restored
// at once then). Close gives the terminal back; call it however the run
// ends.
func Open(ctx context.Context, opts Options) (*Front, context.Context, context.CancelCauseFunc, error) {
	if opts.Render == nil {
		opts.Render = PlainRenderer{}
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.SubmitTimeout <= 0 {
		opts.SubmitTimeout = DefaultSubmitTimeout
	}
	if opts.Clock == nil {
		opts.Clock = front.WallClock{}
	}
	if opts.Signals == nil {
		opts.Signals = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP}
	}
	t, err := NewTerminal(opts.In, opts.Out)
	if err != nil {
		return nil, nil, nil, err
	}
	f := &Front{opts: opts, term: t, screen: NewScreen(opts.Out), gate: &Gate{Clock: opts.Clock}, log: opts.Logger, evLog: opts.Logger, used: map[string]bool{}}
	ctx, cancel := context.WithCancelCause(ctx)
	f.stopSig = f.handleSignals(cancel)
	if f.keys, err = readKeys(opts.In, f.gate, f.handoffKey); err != nil {
		f.log.Warn("keys: the terminal cannot be read with a deadline; reading it directly", "err", err)
	}
	return f, ctx, cancel, nil
}

// Close stops reading keys and following signals, restores the terminal and
// prints the lines still waiting for a free screen.
func (f *Front) Close() {
	f.stopSig()
	f.keys.stop()
	// The engine stops every harness it starts; one still running here was
	// left by a run that ended without stopping it (a panic in the
	// engine's goroutine, recovered by a caller): it goes now, with all it
	// started, rather than outlive the run.
	f.mu.Lock()
	p := f.cur
	f.mu.Unlock()
	if p != nil {
		p.Kill()
		<-p.Exited()
	}
	f.gate.Close() // every harness is stopped by now: its writer has ended
	_ = f.term.Restore()
	f.flushLines()
}

// Sink wraps an event handler: every event goes to the log and to next;
// handoff events also become the window title now and their lines are
// printed when the screen is free.
func (f *Front) Sink(next func(event.Event)) func(event.Event) {
	return func(ev event.Event) {
		f.logEvent(ev)
		if next != nil {
			next(ev)
		}
		if f.meter != nil {
			if t := f.meter(); t != "" {
				f.screen.SetTitle(t)
			}
		}
		if t := limitTitle(ev); t != "" {
			f.screen.SetTitle(t) // unattended: a limit's reset in the title
		}
		if ev.Kind != event.KindHandoff {
			return
		}
		if t := f.opts.Render.Title(ev); t != "" {
			f.screen.SetTitle(t)
		}
		if f.opts.Render.Lines(ev) != "" {
			f.mu.Lock()
			f.waiting = append(f.waiting, ev)
			f.mu.Unlock()
		}
	}
}

// logEvent records an event in the run's log: the screen is the harness's,
// so the log is where `flower logs` finds what flower did.
func (f *Front) logEvent(ev event.Event) {
	if ev.Kind == event.KindRaw {
		return
	}
	level := slog.LevelInfo
	if ev.Kind == event.KindText || ev.Kind == event.KindTool {
		level = slog.LevelDebug
	}
	attrs := []any{"kind", string(ev.Kind), "mode", "interactive"}
	for _, kv := range []struct {
		k   string
		v   any
		set bool
	}{
		{"handoff", ev.Phase, ev.Phase != ""},
		{"context", ev.Context, ev.Context != 0},
		{"window", ev.Window, ev.Window != 0},
		{"path", ev.Path, ev.Path != ""},
		{"degraded", ev.Degraded, ev.Kind == event.KindHandoff && ev.Phase == event.PhaseDone},
		{"why", ev.Why, ev.Why != ""},
		{"tool", ev.Tool, ev.Tool != ""},
		{"text", console.Abbrev(ev.Text, 200), ev.Text != ""},
	} {
		if kv.set {
			attrs = append(attrs, kv.k, kv.v)
		}
	}
	f.mu.Lock()
	log := f.evLog
	f.mu.Unlock()
	log.Log(context.Background(), level, "event", attrs...)
}

// flushLines prints the waiting lines; the terminal is not raw then, so
// "\n" starts a new line.
func (f *Front) flushLines() {
	f.mu.Lock()
	evs := f.waiting
	f.waiting = nil
	f.mu.Unlock()
	for _, ev := range evs {
		_, _ = io.WriteString(f.opts.Out, f.opts.Render.Lines(ev))
	}
}

// handleSignals restores the terminal as soon as a terminating signal
// arrives (a second one may make the process exit at once) and ends the run;
// it also follows window-size changes. stop waits for its goroutine.
func (f *Front) handleSignals(cancel context.CancelCauseFunc) (stop func()) {
	sigs := make(chan os.Signal, 4)
	if len(f.opts.Signals) > 0 {
		signal.Notify(sigs, f.opts.Signals...)
	}
	winch := make(chan os.Signal, 1)
	signal.Notify(winch, syscall.SIGWINCH)
	done, exited := make(chan struct{}), make(chan struct{})
	go f.guard(func() {
		defer close(exited)
		for {
			select {
			case sig := <-sigs:
				_ = f.term.Restore()
				f.log.Warn("signal: ending the interactive run", "signal", sig.String())
				cancel(child.Interruption{Signal: sig})
			case <-winch:
				// Under the lock: a harness is detached before its pty
				// is closed.
				f.mu.Lock()
				if f.cur != nil {
					f.cur.Resize(f.term.Size())
				}
				f.mu.Unlock()
			case <-done:
				return
			}
		}
	})
	return func() {
		signal.Stop(sigs)
		signal.Stop(winch)
		close(done)
		<-exited
	}
}

// guard runs fn; a panic restores the terminal before it takes the process
// down, since only the panicking goroutine's deferred calls run.
func (f *Front) guard(fn func()) {
	defer func() {
		if v := recover(); v != nil {
			_ = f.term.Restore()
			panic(v)
		}
	}()
	fn()
}

// maxArgPrompt bounds a first prompt given on the command line (Linux allows
// 128 KiB for one argument); a longer one is typed.
const maxArgPrompt = 100 << 10

// Capabilities implements front.Launcher: a successor's screen can start
// before its prompt is known (held off the person's terminal until it gets
// it, see launchEarly), and the person types the work turns.
func (f *Front) Capabilities() front.Capabilities {
	return front.Capabilities{StartEarly: true, Overlap: true, OutsideTurns: true, PersonTypes: true, Resumes: true,
		CredentialFix: harness.CredentialFix, Prepare: harness.Prepare,
		ResumeRefused: harness.ResumeRefused, Untested: harness.Untested}
}

// Launch starts one harness in a pty on the person's terminal, which is raw
// for exactly as long as a harness runs. A harness started early (the
// successor, beside the writing turn) gets the terminal only with its
// first prompt (launchEarly).
func (f *Front) Launch(ctx context.Context, s front.Spec) (front.Session, error) {
	log := s.Logger
	if log == nil {
		log = f.log
	}
	if s.Early {
		return f.launchEarly(ctx, s, log)
	}
	// The engine's logger stamps step, generation, session and phase on
	// every record: events are logged through it from now on.
	f.mu.Lock()
	f.evLog = log
	f.mu.Unlock()
	// The burned generation's harness, when the engine lets it go only
	// after this one started (front.Capabilities.Overlap): it keeps the
	// screen until this one is up.
	prev := f.running()
	if prev == nil {
		if err := f.takeScreen(); err != nil {
			return nil, err
		}
	}
	cfg, typed := f.procFor(s, log)
	launched := time.Now()
	p, handOver, err := f.startOnScreen(ctx, cfg, prev)
	if err != nil {
		return nil, err
	}
	f.setRunning(p, s.Inbox)
	g := f.newSession(ctx, p, s, cfg, typed, launched, nil)
	log.Info("harness started", "pid", p.PID(), "interactive", true)
	if handOver != nil {
		// The burned harness is stopped beside this session, not before
		// Launch returns: the engine hears this session from its first
		// line on (its name, its turns), however long the old one takes
		// to go.
		go handOver()
	}
	return g, nil
}

// launchEarly starts a successor's harness before its first prompt is
// known (DESIGN.md «Warm successor»), while the burned generation's harness
// still has the screen and the gate: what it draws is held, no key reaches
// it, and nothing of the front changes for it (the events' logger, the
// inbox), until its first Send takes the screen for it (session.sendFirst).
func (f *Front) launchEarly(ctx context.Context, s front.Spec, log *slog.Logger) (front.Session, error) {
	cfg, _ := f.procFor(s, log)
	launched := time.Now()
	held := &heldScreen{w: f.screen}
	cfg.Size = f.term.Size()
	p, err := startProc(context.WithoutCancel(ctx), cfg, held)
	if err != nil {
		return nil, err
	}
	g := f.newSession(ctx, p, s, cfg, "", launched, held)
	log.Info("harness started early", "pid", p.PID(), "interactive", true)
	return g, nil
}

// setRunning makes p the harness with the screen and the gate; the
// person's keys held over from the last harness wait until it is up: a pty
// echoes what it is given before the harness makes it raw.
func (f *Front) setRunning(p *proc, box string) (prev *proc) {
	f.mu.Lock()
	prev, f.cur = f.cur, p
	f.inbox = box
	// A window resized since p started (a successor started early, a
	// SIGWINCH while no harness was running) is p's size from now on.
	p.Resize(f.term.Size())
	f.mu.Unlock()
	f.gate.Hold()
	f.gate.Attach(p.pty)
	return prev
}

// newSession follows p, the harness of s started as cfg says, as a
// front.Session on the engine's clock; early holds what a harness started
// early draws.
func (f *Front) newSession(ctx context.Context, p *proc, s front.Spec, cfg procConfig, typed string, launched time.Time, early *heldScreen) *session {
	p.start, p.clock = f.opts.Clock.Now(), f.opts.Clock
	configDir := transcript.ConfigDir(s.Env)
	return newSession(ctx, f, p, cfg.Logger, sessionConfig{
		configDir: configDir, cwd: s.Dir, typed: typed, argPrompt: cfg.Prompt != "", resumed: s.Resume, early: early, inbox: s.Inbox,
		step: s.Step, gen: s.Generation, runDir: s.RunDir,
		loc:   locator{configDir: configDir, cwd: s.Dir, pid: p.PID(), since: launched.Add(-time.Second), used: f.used},
		probe: harness.Config{Path: s.Path, Args: s.Args, Model: s.Model, Dir: s.Dir, Env: s.Env, Logger: cfg.Logger, Grace: cfg.Grace},
	})
}

// procFor is how to start the harness s asks for; typed is a first prompt
// too long for the command line, to be typed instead. A first prompt of
// flower's own goes through a file (quiet.go): a fresh session's is a
// successor's, taking the step over.
func (f *Front) procFor(s front.Spec, log *slog.Logger) (cfg procConfig, typed string) {
	args := append([]string(nil), s.Args...)
	if s.Model != "" {
		args = append([]string{"--model", s.Model}, args...)
	}
	kind := front.TurnFirst
	if s.Resume != "" {
		args = append(args, "--resume", s.Resume)
		kind = front.TurnWork
	}
	prompt := s.Prompt
	if prompt != "" {
		prompt = f.prompts.quiet(s.RunDir, s.Step, s.Generation, kind, prompt, s.Ours, log)
	}
	argPrompt := prompt
	if len(prompt) > maxArgPrompt {
		argPrompt, typed = "", prompt
	}
	grace := s.Grace
	if grace <= 0 {
		grace = DefaultGrace
	}
	return procConfig{Path: s.Path, Args: args, Prompt: argPrompt, Dir: s.Dir, Env: s.Env, Grace: grace, Logger: log}, typed
}

// startOnScreen starts the harness of cfg on the person's terminal. With
// prev, the burned generation's harness that still has the screen, its
// start-up overlaps prev's exit: what it draws is held until prev is gone,
// then passed on (handOver, which runs beside the new session).
func (f *Front) startOnScreen(ctx context.Context, cfg procConfig, prev *proc) (p *proc, handOver func(), err error) {
	var screen io.Writer = f.screen
	held := &heldScreen{w: f.screen}
	if prev != nil {
		screen = held
	}
	cfg.Size = f.term.Size()
	// The harness is stopped by the engine, gracefully, not by ctx.
	p, err = startProc(context.WithoutCancel(ctx), cfg, screen)
	if err != nil {
		if prev == nil {
			_ = f.term.Restore()
		}
		return nil, nil, err
	}
	if prev == nil {
		return p, nil, nil
	}
	return p, func() { f.handOver(prev, p, held) }, nil
}

// takeOver gives p, a harness started early that has just been given its
// first prompt, the screen and the gate: at once when no harness has them,
// else beside the session (handOver).
func (f *Front) takeOver(p *proc, held *heldScreen, log *slog.Logger, box string) error {
	f.mu.Lock()
	f.evLog = log
	f.mu.Unlock()
	prev := f.setRunning(p, box)
	if prev != nil {
		go f.guard(func() { f.handOver(prev, p, held) })
		return nil
	}
	if err := f.takeScreen(); err != nil {
		f.detach(p)
		return err
	}
	held.open()
	p.Resize(f.term.Size()) // a resize since it started went to nobody
	return nil
}

// handOver stops prev, the burned generation's harness, as a session's Stop
// stops it (its exit keys typed into its own pty, then signals), gives the
// terminal back as between two harnesses and takes it for p, which by then
// has the gate and is the running harness; then what p drew meanwhile
// (held) is passed on.
func (f *Front) handOver(prev, p *proc, held *heldScreen) {
	prev.Stop(prev.typeExit)
	if !f.holds(p) {
		// The successor is gone already (stopped, or it died): the
		// screen is not its to take, and may be a later harness's.
		return
	}
	// The terminal given back as between two harnesses, then taken
	// for the successor.
	_ = f.term.Restore()
	if err := f.takeScreen(); err != nil {
		p.log.Warn("the successor's harness cannot have the screen; it is stopped", "err", err)
		p.Kill()
		return
	}
	held.open()
	p.Resize(f.term.Size()) // a resize during the hand-over went to the old one
}

// handoffKey posts the person's request for a handoff to the step's
// inbox, as flower handoff now does (DESIGN.md «Inbox»).
func (f *Front) handoffKey() {
	f.mu.Lock()
	box := f.inbox
	f.mu.Unlock()
	if box == "" {
		f.log.Info("handoff key pressed, but the step has no inbox")
		return
	}
	if _, err := inbox.Post(box, inbox.Request{Kind: inbox.KindHandoff, From: HandoffKeyName + " on the screen"}); err != nil {
		f.log.Warn("handoff key: the request could not be posted", "err", err)
	}
}

// detach forgets the stopped harness p and gives the terminal back, when p
// has it still: not once a successor took it (startOnScreen).
func (f *Front) detach(p *proc) {
	if !f.detached(p) {
		return
	}
	f.gate.Attach(nil)
	_ = f.term.Restore()
}

// detached forgets p as the running harness; false: it was not.
func (f *Front) detached(p *proc) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.cur != p {
		return false
	}
	f.cur = nil
	return true
}

// running is the harness that has the screen, if any.
func (f *Front) running() *proc {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.cur
}

// holds: p has the screen and the gate.
func (f *Front) holds(p *proc) bool { return f.running() == p }

// takeScreen readies the terminal for a harness: the lines that waited
// for a free screen printed, then raw mode.
func (f *Front) takeScreen() error {
	f.flushLines()
	if err := f.term.MakeRaw(); err != nil {
		return err
	}
	f.screen.Reset()
	return nil
}

// keyReader copies the person's keys into the gate for as long as the
// terminal gives them. It reads a second descriptor of the terminal opened
// non-blocking, so that stop can end the read and wait for the goroutine.
type keyReader struct {
	f    *os.File
	done chan struct{}
}

func readKeys(in *os.File, g *Gate, onHandoff func()) (*keyReader, error) {
	f, err := reopenTerminal(in)
	if err == nil {
		if err = f.SetReadDeadline(time.Time{}); err != nil {
			f.Close()
		}
	}
	if err != nil {
		// No second descriptor: read the terminal itself. Nothing can end
		// that read, so this goroutine lives as long as the program.
		go copyKeys(in, g, onHandoff)
		return nil, err
	}
	k := &keyReader{f: f, done: make(chan struct{})}
	go func() {
		defer close(k.done)
		copyKeys(f, g, onHandoff)
	}()
	return k, nil
}

// copyKeys passes what the terminal gives to the gate until a read fails;
// the handoff key goes to onHandoff instead.
func copyKeys(r io.Reader, g *Gate, onHandoff func()) {
	buf := make([]byte, 4096)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			keys, asked := takeHandoffKeys(buf[:n])
			if len(keys) > 0 {
				_, _ = g.Write(keys)
			}
			if asked > 0 && onHandoff != nil {
				onHandoff()
			}
		}
		if err != nil {
			return
		}
	}
}

// stop ends the reader and waits for it.
func (k *keyReader) stop() {
	if k == nil {
		return
	}
	_ = k.f.SetReadDeadline(time.Now())
	<-k.done
	_ = k.f.Close()
}
