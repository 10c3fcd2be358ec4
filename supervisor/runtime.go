// Package supervisor owns the generation loop: it runs a step on the harness,
// watches the main thread's context, cuts the session at a message boundary
// when a handoff is due, has the same session write its handoff, freezes the
// handoff to disk, and starts the successor session from the file. It keeps
// the step's bookkeeping in manifest.json as it goes. Runtime is the library
// entry point (the seed's Runtime): RunStep runs a step, Continue picks one
// up where it was stopped (the seed's 継続), Rerun starts it again from its
// handoff file; one process at a time runs a given step of a workspace or
// of a run directory (DESIGN.md «One step, one owner»). It decides
// everything from the facts a front reports (package front), and each
// attempt is an explicit state machine whose timers all run on the
// Runtime's Clock (DESIGN.md «Fronts», «Engine states»). It names no
// harness: the front it is given (Options.Front) readies and starts its own.
package supervisor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/flowerhq/flower/front"
	"github.com/flowerhq/flower/runlog"

	"github.com/flowerhq/flower/atomicfile"
	"github.com/flowerhq/flower/child"
	"github.com/flowerhq/flower/handoff"
	"github.com/flowerhq/flower/inbox"
	"github.com/flowerhq/flower/manifest"
	"github.com/flowerhq/flower/policy"
	"github.com/flowerhq/flower/trust"
	"github.com/flowerhq/flower/workbench"
)

// Defaults for Options.
const (
	DefaultMaxAttempts    = 3
	DefaultCutTimeout     = 60 * time.Second
	DefaultWritingTimeout = 15 * time.Minute
	DefaultGrace          = child.DefaultGrace
)

// Errors a caller can branch on. A step that hits the generation limit
// returns a *policy.GenerationLimitError (errors.Is policy.ErrGenerationLimit).
var (
	ErrStepFailed = errors.New("step failed")
	ErrNoHarness  = errors.New("no harness executable")
	ErrNoFront    = errors.New("no front: Options.Front starts the harness")
)

// Options configure a Runtime. Workspace is required; everything else has a
// default (DESIGN.md «Policy»).
type Options struct {
	// Workspace is the harness's working directory. Required.
	Workspace string
	// RunDir holds manifest.json. Default: a new one,
	// <workspace>/.flower/runs/<start time>[-N] (workbench.NewRunDir).
	RunDir string
	// Workbench turns on handoff files under WorkbenchDir/notes (DESIGN.md «Handoff files»). With
	// it off, handoffs reach the successor through its prompt only (DESIGN.md «No workbench»).
	Workbench bool
	// WorkbenchDir defaults to <workspace>/.flower.
	WorkbenchDir string
	// Handoff is the handoff policy; nil is the default (on), and
	// policy.Switch gives a plain on or off — see policy.Resolve.
	Handoff *policy.HandoffPolicy
	// Compact is the agent's own compact policy (DESIGN.md «Auto-compact off»).
	Compact policy.CompactMode
	// HarnessPath is the harness's executable (its front knows which CLI it is). Required.
	HarnessPath string
	// HarnessArgs are the person's own, given to the front's Prepare,
	// which passes them to the harness with what it holds merged in
	// (DESIGN.md «Compaction levers»).
	HarnessArgs []string
	// HookBinary is the flower executable whose hidden "hook precompact"
	// command is flower's PreCompact hook: it records each blocked
	// compaction in the run. Empty: the hook blocks and records nothing.
	HookBinary string
	// Admit, when set, is asked before each harness starts (a generation,
	// a resumed session, a successor started early): an error stops the
	// step, status manifest.StatusUntrusted, with the error as the reason,
	// and nothing starts. The edge says what it checks (the trust gate's
	// scan, DESIGN.md «Trust store»); the engine only asks.
	Admit func() error
	// Reach, when set, says whether the API endpoint the harness talks to
	// can be reached at all. It is asked once an attempt, when the harness
	// retries a request that got no HTTP answer before any request of the
	// run went through, with the endpoint where the front knows it (""
	// where the edge does): an error (the edge's words, naming the
	// endpoint and what to check) stops the step, status
	// manifest.StatusUnreachable. The edge decides what is certain (a
	// refused connection, a name that does not resolve) and returns nil
	// for the rest, which the harness's own retries wait out.
	Reach func(endpoint string) error
	// Front starts the harness of each attempt, and knows which harness it
	// is (harness.Headless: the stream-json process).
	// Required.
	Front front.Launcher
	// HarnessKind names the harness Front runs, for the record (the
	// manifest's harness_kind, kept from the run's first start): the
	// engine never reads it.
	HarnessKind string
	// Model is passed as --model and used to guess the window.
	Model string
	// Env is the base environment of the harness (os.Environ() when nil).
	Env []string
	// MaxAttempts bounds failed attempts of one step (handoffs do not count).
	MaxAttempts int
	// TurnTimeout bounds one working turn; zero means no bound. In stream
	// mode one turn is the agent's whole loop until it stops on its own.
	TurnTimeout time.Duration
	// CutTimeout bounds the wait for the turn to end after an interrupt.
	CutTimeout time.Duration
	// WritingTimeout bounds the handoff-writing turn.
	WritingTimeout time.Duration
	// Grace bounds each stage of stopping a harness process.
	Grace time.Duration
	// OnEvent receives events; it is called from the step's goroutine.
	OnEvent func(Event)
	// Logger receives the structured log (discarded when nil).
	Logger *slog.Logger
	// AfterFreeze, if set, is called with the handoff's path after it is
	// written and before the successor reads it back (a person may edit the
	// file at that point; tests use this hook to do so).
	AfterFreeze func(path string)
	// TrustNotes: the person vouches for the run dir and the step's
	// handoff and task files even when the trust store holds no receipt of
	// them (DESIGN.md «Known documents»), which adopts them; without it
	// Continue and Rerun refuse such a run or file.
	TrustNotes bool
	// Trust is the trust store that holds the receipts of what flower
	// writes (DESIGN.md «Trust store»); nil: the store of flower's own
	// environment (trust.Open(os.Environ())).
	Trust *trust.Store
	// TaskCarry bounds how many characters of the task every successor's
	// first prompt carries verbatim next to the handoff: 0 means
	// handoff.DefaultTaskCarry, a negative value carries nothing.
	TaskCarry int
	// Clock is the engine's one time: every timer and deadline, and the
	// time of day its records carry (the machine's when nil; DESIGN.md
	// «Engine states»).
	Clock Clock
	// InboxPostsOnly: the step's inbox hears only the requests this
	// process posts (inbox.Watch without files), for tests on a fake
	// clock, beside which a file watch cannot run.
	InboxPostsOnly bool

	// unattended: the step's bounds and the limit wait (DESIGN.md «Unattended: limits, budget, deadline»).
	// MaxBudgetUSD bounds the step's cost (every generation, retry and
	// writing turn); 0 keeps the budget the step recorded, if any.
	// MaxDuration bounds this call's wall-clock time, waits included; 0:
	// none. MaxWait bounds the wait for a limit; 0: none. LimitBackoff is
	// the first wait for a limit with no reset known (DefaultLimitBackoff
	// when 0), doubled for each limit in a row.
	MaxBudgetUSD float64
	MaxDuration  time.Duration
	MaxWait      time.Duration
	LimitBackoff time.Duration
	// Deadline, when set, is the step's deadline itself (a remote step's,
	// fixed when it was submitted); it wins over MaxDuration. SpentUSD is
	// what the step cost where this run's manifest does not see it (a
	// remote step's other workers): the budget counts it when it is more
	// than the manifest's cost_usd.
	Deadline time.Time
	SpentUSD float64
}

// Runtime runs steps under generational handoff, recording them in one
// run directory's manifest.
type Runtime struct {
	opts Options
	// clock is opts.Clock: the engine's timers and deadlines.
	clock Clock
	// caps is what opts.Front can do, asked once.
	caps         front.Capabilities
	policy       policy.HandoffPolicy
	windowSource string
	windowWarned bool // the flag-versus-harness warning was given
	crossWarned  bool // the result-versus-answer warning was given
	versionSeen  bool // the harness's version was looked at (DESIGN.md «Doctor»)
	env          []string
	wb           *workbench.Workbench
	wbErr        error // why the workbench asked for could not be opened
	m            *manifest.Manifest
	log          *slog.Logger
	// held: steps whose locks Hold took for the next call to run them.
	held map[string]*stepLock
	// saveErr is the last manifest save's error, nil once a save succeeds
	// (DESIGN.md «Durable or loud»).
	saveErr error
	// unsaved is the step whose change to the manifest save noted and
	// flush has not yet written; nil when the file is up to date.
	unsaved *manifest.StepResult
	// runDir is the run dir held open while a step runs (holdRunDir), for
	// its manifest's saves; nil between steps.
	runDir *atomicfile.Dir
	// holds: the harness's own compaction is held off (each start's
	// Spec.Hold), as harness, the run's harness readied by the front,
	// holds it.
	holds   bool
	harness front.Prepared
	// trust holds the receipts (nil: none could be opened); loaded: the
	// manifest is on disk, written before this Runtime or by it (and then
	// the run dir has its receipt).
	trust  *trust.Store
	loaded bool
	// through: a request of this run reached the API and was answered
	// (a reply that is not the harness's own), so the endpoint is known to
	// take connections (auth.go).
	through bool
}

// New checks the options and opens the run directory (made when none is
// given), so that a bad option or an unwritable run directory fails before
// any harness starts. It writes no manifest: the step's first save does,
// right after its first harness started (DESIGN.md «Warm successor»).
func New(opts Options) (*Runtime, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	rt := &Runtime{opts: opts, caps: opts.Front.Capabilities(), log: log, clock: opts.Clock}
	// The front readies its harness once, here: a bad argument of the
	// person's fails before any harness starts. Its guess of the window
	// fills a policy that sets none (DESIGN.md «Window guess»).
	handoff := opts.Handoff == nil || opts.Handoff.Enabled
	if rt.harness, err = rt.caps.Prepared(front.Run{Args: opts.HarnessArgs, Env: opts.Env, Workspace: opts.Workspace,
		Model: opts.Model, Compact: opts.Compact, Handoff: handoff}); err != nil {
		return nil, err
	}
	if rt.policy, err = policy.Resolve(opts.Handoff, rt.harness.Window); err != nil {
		return nil, fmt.Errorf("handoff policy: %w", err)
	}
	rt.windowSource = windowSource(opts.Handoff)
	rt.holds = opts.Compact.Effective(handoff) == policy.CompactNoSummary
	rt.env = rt.harness.Env
	if n := rt.harness.Notice; n != "" {
		log.Warn("compact policy", "notice", n)
		rt.emit(Event{Kind: KindNotice, Text: n})
	}
	if err := rt.openRunDir(); err != nil {
		return nil, err
	}
	return rt, nil
}

// withDefaults is opts checked, with its paths absolute and every unset
// setting at its default.
func (opts Options) withDefaults() (Options, error) {
	if opts.Workspace == "" {
		return opts, errors.New("workspace is required")
	}
	ws, err := filepath.Abs(opts.Workspace)
	if err != nil {
		return opts, fmt.Errorf("workspace: %w", err)
	}
	if fi, err := os.Stat(ws); err != nil {
		return opts, fmt.Errorf("workspace: %w", err)
	} else if !fi.IsDir() {
		return opts, fmt.Errorf("workspace %s is not a directory", ws)
	}
	opts.Workspace = ws
	if opts.HarnessPath == "" {
		return opts, ErrNoHarness
	}
	if opts.Clock == nil {
		opts.Clock = wallClock{}
	}
	if opts.Front == nil {
		return opts, ErrNoFront
	}
	if opts.Env == nil {
		opts.Env = os.Environ()
	}
	if opts.MaxAttempts <= 0 {
		opts.MaxAttempts = DefaultMaxAttempts
	}
	if opts.CutTimeout <= 0 {
		opts.CutTimeout = DefaultCutTimeout
	}
	if opts.WritingTimeout <= 0 {
		opts.WritingTimeout = DefaultWritingTimeout
	}
	if opts.Grace <= 0 {
		opts.Grace = DefaultGrace
	}
	if opts.WorkbenchDir == "" {
		opts.WorkbenchDir = workbench.DirOf(ws)
	}
	if opts.RunDir != "" {
		if opts.RunDir, err = filepath.Abs(opts.RunDir); err != nil {
			return opts, fmt.Errorf("run dir: %w", err)
		}
	}
	return opts, nil
}

// openRunDir checks flower's territory, opens the workbench and the trust
// store, makes the run dir when none was given, and reads its manifest
// when it has one.
func (rt *Runtime) openRunDir() error {
	opts, ws, log := rt.opts, rt.opts.Workspace, rt.log
	// Nothing of flower's territory is read or written before it is checked
	// (DESIGN.md «Territory»): a link or a thing of the wrong kind there is
	// refused, not worked around.
	if err := (workbench.Territory{Workspace: ws, Dir: opts.WorkbenchDir, RunDir: opts.RunDir}).Check(); err != nil {
		return err
	}
	if opts.Workbench {
		var err error
		if rt.wb, err = workbench.Open(opts.WorkbenchDir); err != nil {
			// DESIGN.md «No workbench»: no workbench means no file, not no handoff. Say so.
			log.Warn("workbench unavailable; handoffs go through the prompt only", "err", err)
			rt.emit(Event{Kind: KindNotice, Text: fmt.Sprintf("workbench unavailable (%v); handoffs will reach the successor through its prompt only", err)})
			rt.wb, rt.wbErr = nil, err
		}
	}
	rt.openTrust()
	if opts.RunDir == "" {
		// A run dir of its own, made now (DESIGN.md «One step, one owner»).
		dir, err := workbench.NewRunDir(workbench.RunsDir(opts.WorkbenchDir), opts.Clock.Now())
		if err != nil {
			return err
		}
		opts.RunDir, rt.opts.RunDir = dir, dir
	}
	if m, err := manifest.LoadBound(opts.RunDir); err == nil {
		rt.m, rt.loaded = m, true
	} else if errors.Is(err, os.ErrNotExist) {
		rt.m = manifest.New(opts.RunDir, ws, opts.Clock.Now())
	} else {
		return err
	}
	if rt.m.HarnessKind == "" {
		rt.m.HarnessKind = opts.HarnessKind
	}
	if p := rt.m.Probe; p != nil && p.Window > 0 {
		// The run asked the harness once already (DESIGN.md «Window from
		// the harness»); its answer holds for every later session.
		rt.adoptWindow(rt.log, nil, p.Window, "the run's context-usage answer in the manifest")
	}
	if err := workbench.MkdirRun(opts.RunDir, opts.WorkbenchDir); err != nil {
		return err
	}
	// Fail now if the run dir cannot take the manifest, but without
	// writing it: that costs two syncs, and the step's first harness is
	// to start at once (DESIGN.md «Warm successor»); the step's first
	// save follows right after it.
	if err := workbench.Writable(opts.RunDir); err != nil {
		return fmt.Errorf("run dir %s is not writable: %w", opts.RunDir, err)
	}
	return nil
}

func windowSource(setting *policy.HandoffPolicy) string {
	if setting != nil && setting.Window > 0 {
		return manifest.WindowFromFlag
	}
	return manifest.WindowFromModel
}

// Policy returns the effective handoff policy.
func (rt *Runtime) Policy() policy.HandoffPolicy { return rt.policy }

// RunDir returns the run directory.
func (rt *Runtime) RunDir() string { return rt.opts.RunDir }

// Manifest returns the run's manifest (owned by the Runtime; read it only
// between steps).
func (rt *Runtime) Manifest() *manifest.Manifest { return rt.m }

// ChildEnv returns the environment the harness is started with.
func (rt *Runtime) ChildEnv() []string { return append([]string(nil), rt.env...) }

// HandoffPath returns where a step's handoff file lives ("" without a
// workbench).
func (rt *Runtime) HandoffPath(step string) string { return rt.wb.HandoffPath(step) }

func (rt *Runtime) emit(ev Event) {
	rt.flush() // who hears of it may read the manifest
	if rt.opts.OnEvent != nil {
		rt.opts.OnEvent(ev)
	}
}

// save notes that st changed the manifest. The change is written by
// flush, before the engine next waits on anything (a fact, a timer, a
// harness's exit), tells anyone (emit), or ends the call: the saves of one
// decision are one write, and the file on disk is never older than the
// last fact decided (DESIGN.md «Durable or loud»).
func (rt *Runtime) save(st *manifest.StepResult) {
	if st == nil {
		st = &manifest.StepResult{}
	}
	rt.unsaved = st
}

// flush writes the manifest when a save is pending. A failure does not
// stop the run: losing bookkeeping is bad, stopping the agent for it is worse; every later save
// tries again, and a save that succeeds writes everything. But it is said
// where a person sees it (the log may be on the same full disk), once per
// run of failures, and the step then ends with a *NotSavedError unless a
// later save succeeded (DESIGN.md «Durable or loud»).
func (rt *Runtime) flush() {
	st := rt.unsaved
	if st == nil {
		return
	}
	rt.unsaved = nil
	err := rt.m.SaveIn(rt.runDir)
	if err == nil && !rt.loaded {
		// The run dir's receipt goes with its manifest's first write, after
		// the step's first harness started (DESIGN.md «Known documents»,
		// «Warm successor»).
		rt.loaded = true
		rt.receipt("run dir", rt.opts.RunDir, nil)
	}
	switch {
	case err == nil && rt.saveErr != nil:
		rt.saveErr = nil
		msg := "the manifest is saved again: " + manifest.Path(rt.opts.RunDir)
		rt.log.Info(msg, "step", st.Name)
		rt.emit(Event{Kind: KindNotice, Step: st.Name, Text: msg})
	case err != nil && rt.saveErr == nil:
		rt.saveErr = err
		msg := fmt.Sprintf("cannot save the manifest %s: %v; the step goes on, every save tries again, and flower will exit non-zero unless one succeeds", manifest.Path(rt.opts.RunDir), err)
		rt.log.Error(msg, "step", st.Name)
		rt.emit(Event{Kind: KindNotice, Step: st.Name, Text: msg, IsError: true})
		// In the record the next save that succeeds writes.
		st.AddError(fmt.Sprintf("save manifest: %v", err))
	case err != nil:
		rt.saveErr = err
	}
}

// RunStep runs one step to its end: the task is sent to a fresh session, and
// each time the context fills up the session hands off to a successor. It
// returns the step's record (also in manifest.json) and an error when the
// step did not succeed, or a *NotSavedError when its records could not all
// be written. A step another flower is running in the same workspace or run
// directory is refused with a *BusyError before anything starts.
func (rt *Runtime) RunStep(ctx context.Context, name, task string) (*manifest.StepResult, error) {
	return rt.RunStepResuming(ctx, name, task, "")
}

// RunStepResuming is RunStep for a step whose first generation resumes
// session, a conversation the caller brought along (an Agent SDK
// application resuming one of its own, DESIGN.md «Agent SDK relay»). The
// session is not fresh: it has no start-up floor, and the futile guard
// does not apply to it; it hands off like any other.
func (rt *Runtime) RunStepResuming(ctx context.Context, name, task, session string) (*manifest.StepResult, error) {
	s, err := rt.lockStep(name)
	if err != nil {
		return nil, err
	}
	defer s.unlock()
	s.st = rt.m.EnsureStep(name, task, rt.clock.Now())
	s.st.Task = task
	l := launch{prompt: task, resume: session, newGeneration: true, fallback: s.taskFallback}
	if session == "" {
		// The first prompt goes out at once: the harness starts with the
		// task before the step's bookkeeping is written (DESIGN.md «Warm successor»).
		l.early, l.beginErr = s.startFirst(ctx, task)
		l.begun = l.early != nil
	}
	s.begin()
	// After the first harness started: it reads the task, never these
	// files (DESIGN.md «Warm successor», «Known documents»).
	if err := s.setAsideUnknown(name); err != nil {
		s.st.AddError(err.Error())
		s.log.Error("set aside", "err", err)
	}
	s.books().FreezeTask()
	st, err := s.run(ctx, l)
	return st, s.durable(err)
}

// stepRun is the state of one RunStep, Continue or Rerun call.
type stepRun struct {
	rt   *Runtime
	st   *manifest.StepResult
	log  *slog.Logger
	lock *stepLock
	// logState stamps generation, session and phase on every record of log.
	logState *runlog.State
	// retiring: burned generations' harnesses being stopped (warm.go).
	retiring []retiring
	// lost: records of the step that could not be written (a handoff
	// file, the task file), each with why (DESIGN.md «Durable or loud»).
	lost []string
	// The step's inbox (inbox.go): its directory, the requests read from
	// it, and what hears them.
	inboxDir string
	requests <-chan inbox.Request
	inbox    *inbox.Watcher
	// vouched: notes files used on the person's word before the step
	// was known, for its errors (territory.go).
	vouched []string
	// late: no harness of this step starts before its first prompt is
	// known, whatever the front can (warm.go).
	late bool
	// unattended: the step's budget and deadline in this call (unattended.go)
	bounds stepBounds
}

// begin marks the step running under this Runtime's settings.
func (s *stepRun) begin() {
	rt, st := s.rt, s.st
	now := rt.clock.Now()
	st.Status = manifest.StatusRunning
	st.Window = rt.policy.Window
	st.WindowSource = rt.windowSource
	st.Model = rt.opts.Model
	st.EndedAt = nil
	if st.StartedAt.IsZero() {
		st.StartedAt = now
	}
	s.setBounds(now) // unattended: the budget given or recorded, the deadline from now
	if rt.wbErr != nil {
		// DESIGN.md «No workbench» goes on without a file; the manifest says why there is none.
		st.AddError(fmt.Sprintf("workbench unavailable (%v): handoffs reach the successor through its prompt only", rt.wbErr))
	}
	rt.save(st)
}

// launch says how the next attempt starts.
type launch struct {
	prompt string
	// resume is the session to resume; "" starts a fresh session.
	resume string
	// newGeneration begins a generation first; false runs the attempt in
	// the current one (a retry, a continuation, or a generation that never
	// got a session).
	newGeneration bool
	// fallback gives the first prompt of a fresh session when resume is
	// refused by the harness (the session is unknown to it), and what it
	// starts from, for the record.
	fallback func() (prompt, from string, err error)
	// early is a harness started before the attempt: a successor started
	// while its predecessor wrote the handoff (prompt is its first Send),
	// or a new step's first harness (begun). predecessor is the attempt
	// whose harness is stopped once early's first round is back (DESIGN.md
	// «Warm successor»).
	early       front.Session
	predecessor *attemptRun
	// begun: early was given its prompt already, or failed to take it
	// (beginErr).
	begun    bool
	beginErr error
	// saveOnPrompt: the generation begun for early is saved once early has
	// its prompt, not before: off the switch's path (generation).
	saveOnPrompt bool
	// unattended: writing resumes a session a limit stopped in its writing turn; prompt is the writing prompt, at the cut's context
	writing        bool
	writingContext int
}

func (s *stepRun) run(ctx context.Context, l launch) (*manifest.StepResult, error) {
	// MaxAttempts bounds the failures of this call: a continued step gets
	// a fresh budget, while Attempts keeps counting for the record (DESIGN.md «Manifest»).
	failedBefore := s.st.Attempts
	defer s.reap()
	for {
		g := s.generation(ctx, &l, failedBefore)
		if g.out.kind != outcomeHandoff {
			return s.st, g.err
		}
		next, err := s.launch(g.gen, g.frozen, g.err)
		if err != nil {
			s.abandon(launch{early: g.out.early, predecessor: g.out.predecessor})
			return s.st, err
		}
		l = launch{prompt: next, newGeneration: true, fallback: s.handoffFallback,
			early: g.out.early, predecessor: g.out.predecessor}
	}
}

// books is what package handoff records this step's handoffs in.
func (s *stepRun) books() handoff.Books {
	rt := s.rt
	return handoff.Books{Step: s.st, Policy: rt.policy, WindowSource: rt.windowSource, Workbench: rt.wb,
		Now: rt.clock.Now, Save: func() { rt.save(s.st) }, Log: s.log, Failed: s.lose,
		TaskCarry: rt.opts.TaskCarry, ManifestPath: manifest.Path(rt.opts.RunDir)}
}

// launch reports a frozen handoff and returns the successor's first prompt
// from the file as it is on disk now; err is Freeze's (the generation limit).
func (s *stepRun) launch(gen *manifest.Generation, f handoff.Frozen, err error) (string, error) {
	rt := s.rt
	rt.emit(DoneEvent(s.st, gen, f, rt.policy))
	if err != nil {
		return "", err // DESIGN.md «Runaway guard»: the only brake; the handoff is on disk for a rerun
	}
	if rt.opts.AfterFreeze != nil && f.Path != "" {
		rt.opts.AfterFreeze(f.Path)
	}
	// What the launch records (the sha256 launched, the task carried)
	// goes to disk with the successor's generation, saved before its
	// prompt (generation), or with the step's stop: not in saves of its
	// own before that one.
	b := s.books()
	b.Save = func() {}
	return b.Launch(f), nil
}

func digest(b []byte) string { return handoff.Digest(b) }

// ErrNotSaved is wrapped by the *NotSavedError of a step whose records
// could not all be written.
var ErrNotSaved = errors.New("records not saved")

// NotSavedError ends a step whose records are not all on disk (DESIGN.md
// «Durable or loud»): the manifest's last save failed, or a handoff or task
// file could not be written. Whatever the step achieved, flower does not
// report success while its records are lost.
type NotSavedError struct {
	Step string
	// Status is the step's status as it ended (the manifest on disk may
	// still say an earlier one).
	Status string
	// Reasons say what could not be written, and why.
	Reasons []string
	// Err is the step's own error, if it had one.
	Err error
}

// Error describes the failure; it is what a person sees.
func (e *NotSavedError) Error() string {
	msg := fmt.Sprintf("step %s ended %s, but its records are not all saved: %s; flower show and flower continue go on from what was saved",
		e.Step, e.Status, strings.Join(e.Reasons, "; "))
	if e.Err != nil {
		msg = e.Err.Error() + "; and " + msg
	}
	return msg
}

// Unwrap makes errors.Is(err, ErrNotSaved) true, and the step's own error
// visible to errors.Is and errors.As.
func (e *NotSavedError) Unwrap() []error {
	if e.Err == nil {
		return []error{ErrNotSaved}
	}
	return []error{ErrNotSaved, e.Err}
}

// lose records that a file of the step's records could not be written, and
// says so where a person sees it.
func (s *stepRun) lose(what string, err error) {
	s.lost = append(s.lost, fmt.Sprintf("%s: %v", what, err))
	msg := fmt.Sprintf("cannot write the %s: %v; flower will exit non-zero", what, err)
	s.rt.emit(Event{Kind: KindNotice, Step: s.st.Name, Text: msg, IsError: true})
}

// durable is the step's end: err, or a *NotSavedError around it when the
// step's records are not all on disk. A manifest whose last save failed
// gets one more try first.
func (s *stepRun) durable(err error) error {
	rt := s.rt
	rt.flush()
	if s.st == nil {
		return err
	}
	if rt.saveErr != nil {
		rt.save(s.st)
		rt.flush()
	}
	if rt.saveErr == nil && len(s.lost) == 0 {
		return err
	}
	e := &NotSavedError{Step: s.st.Name, Status: s.st.Status, Reasons: append([]string(nil), s.lost...), Err: err}
	if rt.saveErr != nil {
		e.Reasons = append(e.Reasons, fmt.Sprintf("manifest %s: %v", manifest.Path(rt.opts.RunDir), rt.saveErr))
	}
	return e
}

// LaunchSpec says how the first generation of step would start its
// harness: the executable, flags, model, directory and environment a run
// gives it, for a fresh session whose prompt the caller fills in. flower
// doctor starts the harness through it, so that it checks the harness as a
// run starts it (DESIGN.md «Doctor»).
func (rt *Runtime) LaunchSpec(step string) front.Spec {
	s := &stepRun{rt: rt, st: &manifest.StepResult{Name: step}, log: rt.log}
	return s.spec(1, "", "")
}

// Launcher is the front that starts this Runtime's harnesses.
func (rt *Runtime) Launcher() front.Launcher { return rt.opts.Front }

// checkVersion looks once per Runtime at the version the harness reports
// (front.Init) and says in one line, in the front's words, when it is
// newer than any flower was tested on (DESIGN.md «Doctor»).
func (rt *Runtime) checkVersion(v string) {
	if rt.versionSeen || v == "" || rt.caps.Untested == nil {
		return
	}
	rt.versionSeen = true
	if msg := rt.caps.Untested(v); msg != "" {
		rt.log.Warn("harness newer than tested", "version", v)
		rt.emit(Event{Kind: KindNotice, Text: msg})
	}
}
