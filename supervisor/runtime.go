// Package supervisor owns the generation loop: it runs a step on the harness,
// watches the main thread's context, cuts the session at a message boundary
// when a handoff is due, has the same session write its handoff, freezes the
// handoff to disk, and starts the successor session from the file. It keeps
// the step's bookkeeping in manifest.json as it goes. Runtime is the library
// entry point (the seed's Runtime).
package supervisor

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/flowerhq/flower/envinject"
	"github.com/flowerhq/flower/handoffwriter"
	"github.com/flowerhq/flower/manifest"
	"github.com/flowerhq/flower/policy"
	"github.com/flowerhq/flower/workbench"
)

// Defaults for Options.
const (
	DefaultMaxAttempts    = 3
	DefaultCutTimeout     = 60 * time.Second
	DefaultWritingTimeout = 15 * time.Minute
	DefaultGrace          = 5 * time.Second
)

// Errors a caller can branch on. A step that hits the generation limit
// returns a *policy.GenerationLimitError (errors.Is policy.ErrGenerationLimit).
var (
	ErrStepFailed = errors.New("step failed")
	ErrNoHarness  = errors.New("no harness executable")
)

// Options configure a Runtime. Workspace is required; everything else has a
// default (SPEC R4).
type Options struct {
	// Workspace is the harness's working directory. Required.
	Workspace string
	// RunDir holds manifest.json. Default: <workspace>/.flower/runs/<start time>.
	RunDir string
	// Workbench turns on handoff files under WorkbenchDir/notes (R28). With
	// it off, handoffs reach the successor through its prompt only (R29).
	Workbench bool
	// WorkbenchDir defaults to <workspace>/.flower.
	WorkbenchDir string
	// Handoff is a policy.HandoffPolicy, a *policy.HandoffPolicy, a bool, or
	// nil for the default (on) — see policy.Resolve.
	Handoff any
	// Compact is the agent's own compact policy (R5, R6).
	Compact envinject.CompactMode
	// HarnessPath is the claude executable. Required.
	HarnessPath string
	// HarnessArgs are passed through to the harness after flower's own.
	HarnessArgs []string
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
	// Now is the clock (time.Now when nil).
	Now func() time.Time
}

// Runtime runs steps under generational handoff, recording them in one
// run directory's manifest.
type Runtime struct {
	opts         Options
	policy       policy.HandoffPolicy
	windowSource string
	windowWarned bool // the flag-versus-harness warning was given
	env          []string
	wb           *workbench.Workbench
	m            *manifest.Manifest
	log          *slog.Logger
}

// New checks the options, creates the run directory and writes an initial
// manifest, so that an unwritable run directory fails before any harness
// starts.
func New(opts Options) (*Runtime, error) {
	if opts.Workspace == "" {
		return nil, errors.New("workspace is required")
	}
	ws, err := filepath.Abs(opts.Workspace)
	if err != nil {
		return nil, fmt.Errorf("workspace: %w", err)
	}
	if fi, err := os.Stat(ws); err != nil {
		return nil, fmt.Errorf("workspace: %w", err)
	} else if !fi.IsDir() {
		return nil, fmt.Errorf("workspace %s is not a directory", ws)
	}
	opts.Workspace = ws
	if opts.HarnessPath == "" {
		return nil, ErrNoHarness
	}
	if opts.Now == nil {
		opts.Now = time.Now
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
		opts.WorkbenchDir = filepath.Join(ws, ".flower")
	}
	if opts.RunDir == "" {
		opts.RunDir = filepath.Join(opts.WorkbenchDir, "runs", opts.Now().UTC().Format("20060102-150405"))
	}
	if opts.RunDir, err = filepath.Abs(opts.RunDir); err != nil {
		return nil, fmt.Errorf("run dir: %w", err)
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	// The model flag is what the harness will run, so the window guess
	// (R3) must see it too.
	guessEnv := opts.Env
	if opts.Model != "" {
		guessEnv = envinject.Set(append([]string(nil), opts.Env...), "ANTHROPIC_MODEL", opts.Model)
	}
	pol, err := policy.Resolve(opts.Handoff, guessEnv)
	if err != nil {
		return nil, fmt.Errorf("handoff policy: %w", err)
	}
	rt := &Runtime{opts: opts, policy: pol, windowSource: windowSource(opts.Handoff), log: log}

	plan := envinject.Child(opts.Env, opts.Compact, pol.Enabled, nil)
	rt.env = plan.Env
	if plan.Notice != "" {
		log.Warn("compact policy", "notice", plan.Notice)
		rt.emit(Event{Kind: KindNotice, Text: plan.Notice})
	}
	if opts.Workbench {
		if rt.wb, err = workbench.Open(opts.WorkbenchDir); err != nil {
			// R29: no workbench means no file, not no handoff. Say so.
			log.Warn("workbench unavailable; handoffs go through the prompt only", "err", err)
			rt.emit(Event{Kind: KindNotice, Text: fmt.Sprintf("workbench unavailable (%v); handoffs will reach the successor through its prompt only", err)})
			rt.wb = nil
		}
	}
	if m, err := manifest.Load(manifest.Path(opts.RunDir)); err == nil {
		rt.m = m
	} else if errors.Is(err, os.ErrNotExist) {
		rt.m = manifest.New(opts.RunDir, ws, opts.Now())
	} else {
		return nil, err
	}
	if err := os.MkdirAll(opts.RunDir, 0o755); err != nil {
		return nil, fmt.Errorf("run dir: %w", err)
	}
	if err := rt.m.Save(); err != nil {
		return nil, fmt.Errorf("run dir %s is not writable: %w", opts.RunDir, err)
	}
	return rt, nil
}

func windowSource(setting any) string {
	switch p := setting.(type) {
	case policy.HandoffPolicy:
		if p.Window > 0 {
			return manifest.WindowFromFlag
		}
	case *policy.HandoffPolicy:
		if p != nil && p.Window > 0 {
			return manifest.WindowFromFlag
		}
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
	if rt.opts.OnEvent != nil {
		rt.opts.OnEvent(ev)
	}
}

func (rt *Runtime) save(st *manifest.StepResult) {
	if err := rt.m.Save(); err != nil {
		// The run goes on: losing bookkeeping is bad, stopping the agent
		// for it is worse. The log and the next successful save carry it.
		rt.log.Error("save manifest", "step", st.Name, "err", err)
	}
}

// RunStep runs one step to its end: the task is sent to a fresh session, and
// each time the context fills up the session hands off to a successor. It
// returns the step's record (also in manifest.json) and an error when the
// step did not succeed.
func (rt *Runtime) RunStep(ctx context.Context, name, task string) (*manifest.StepResult, error) {
	now := rt.opts.Now()
	st := rt.m.EnsureStep(name, task, now)
	st.Task = task
	st.Status = manifest.StatusRunning
	st.Window = rt.policy.Window
	st.WindowSource = rt.windowSource
	st.Model = rt.opts.Model
	st.EndedAt = nil
	if st.StartedAt.IsZero() {
		st.StartedAt = now
	}
	s := &stepRun{rt: rt, st: st, log: rt.log.With("step", name)}
	return s.run(ctx, task)
}

// stepRun is the state of one RunStep call.
type stepRun struct {
	rt  *Runtime
	st  *manifest.StepResult
	log *slog.Logger
}

func (s *stepRun) run(ctx context.Context, task string) (*manifest.StepResult, error) {
	rt, st := s.rt, s.st
	prompt, resume := task, ""
	st.BeginGeneration("", rt.opts.Now())
	rt.save(st)
	for {
		gen := st.Current()
		out := s.attempt(ctx, gen, prompt, resume)
		gen.Context = st.Context
		switch out.kind {
		case outcomeDone:
			st.Finish(manifest.StatusSucceeded, rt.opts.Now())
			rt.save(st)
			return st, nil

		case outcomeInterrupted:
			st.AddError("interrupted: " + out.why)
			st.Finish(manifest.StatusInterrupted, rt.opts.Now())
			rt.save(st)
			return st, fmt.Errorf("step %s interrupted: %w", st.Name, context.Cause(ctx))

		case outcomeFailed:
			st.Attempts++
			st.AddError(fmt.Sprintf("attempt %d: %s", st.Attempts, out.why))
			s.log.Warn("attempt failed", "gen", gen.N, "attempts", st.Attempts, "why", out.why)
			if st.Attempts >= rt.opts.MaxAttempts {
				st.Finish(manifest.StatusFailed, rt.opts.Now())
				rt.save(st)
				return st, fmt.Errorf("%w: %s after %d attempts: %s", ErrStepFailed, st.Name, st.Attempts, out.why)
			}
			rt.save(st)
			rt.emit(Event{Kind: KindRetry, Step: st.Name, Generation: gen.N, Text: out.why})
			// Resume the same session when there is one: its context is
			// what this generation has built up.
			if out.sessionID != "" {
				resume = out.sessionID
				prompt = "The harness process running this session stopped unexpectedly (" + out.why + "). Continue the task from where you were."
			}

		case outcomeFutile:
			// Issue 6: a fresh session at or above the threshold would
			// hand off forever; stop now with the measured floor (R27).
			err := &policy.GenerationLimitError{Futile: true, Max: rt.policy.MaxGenerations, Window: rt.policy.Window, At: rt.policy.At(), Floor: out.floor}
			st.AddError(err.Error())
			st.Finish(manifest.StatusGenerationLimit, rt.opts.Now())
			rt.save(st)
			return st, err

		case outcomeHandoff:
			next, err := s.handOff(gen, out)
			if err != nil {
				return st, err
			}
			prompt, resume = next, ""
			st.BeginGeneration("", rt.opts.Now())
			rt.save(st)
		}
	}
}

// handOff freezes the handoff, records it, and returns the successor's first
// prompt, read back from disk (R28, R30).
func (s *stepRun) handOff(gen *manifest.Generation, out outcome) (string, error) {
	rt, st := s.rt, s.st
	h := out.handoff
	h.Step = st.Name
	rec := &manifest.HandoffRecord{
		Reason: out.reason, Context: out.context, At: rt.policy.At(), Window: rt.policy.Window,
		WritingSeconds: out.writingSeconds, WritingCostUSD: out.writingCost,
		WindowSource: rt.windowSource, Outcome: out.writeOutcome,
	}
	if !h.Complete() || out.why != "" {
		if out.why == "" {
			out.why = "handoff is missing " + strings.Join(h.Missing(), ", ")
		}
		h = handoffwriter.Degraded(st.Name, st.Task, out.why)
	}
	if h.IsDegraded() {
		rec.Degraded, rec.Why = true, out.why
		st.DegradedError(out.why) // R25
	}
	md := []byte(h.Markdown())
	rec.SHA256Written = digest(md)
	path, err := rt.wb.Freeze(st.Name, md, rt.opts.Now())
	if err != nil {
		// The successor still gets the document through its prompt (R29).
		st.AddError("write handoff: " + err.Error())
		s.log.Error("write handoff", "err", err)
		path = ""
	}
	rec.Path, rec.Sections = path, h.Filled()
	if path != "" {
		st.HandoffPath = path
	}
	gen.Handoff = rec
	end := rt.opts.Now()
	gen.EndedAt = &end
	st.Retire(gen.SessionID) // R32: this session is burned
	if st.SessionID == gen.SessionID {
		st.SessionID = "" // R33: never point continuation at a burned session
	}
	rt.save(st)
	s.log.Info("handoff written", "gen", gen.N, "reason", out.reason, "context", out.context, "degraded", rec.Degraded, "path", path)
	hc := h
	rt.emit(Event{Kind: KindHandoff, Phase: PhaseDone, Step: st.Name, Generation: gen.N, SessionID: gen.SessionID,
		Context: out.context, Window: rt.policy.Window, At: rt.policy.At(), Degraded: rec.Degraded, Why: rec.Why,
		Path: path, Sections: rec.Sections, Reason: out.reason, Handoff: &hc, CostUSD: st.CostUSD})

	if gen.N >= rt.policy.MaxGenerations {
		// R27: the only brake. The handoff is on disk for a rerun.
		err := &policy.GenerationLimitError{Max: rt.policy.MaxGenerations, Window: rt.policy.Window, At: rt.policy.At()}
		st.AddError(err.Error())
		st.Finish(manifest.StatusGenerationLimit, rt.opts.Now())
		rt.save(st)
		return "", err
	}

	if rt.opts.AfterFreeze != nil && path != "" {
		rt.opts.AfterFreeze(path)
	}
	// R30: a person may have edited the file; the successor reads it as it
	// is on disk now.
	launch := h
	if path != "" {
		b, err := os.ReadFile(path)
		switch {
		case err != nil:
			st.AddError(fmt.Sprintf("read handoff %s: %v; the successor gets the document as written", path, err))
		default:
			rec.SHA256Launched = digest(b)
			if onDisk := handoffwriter.Parse(string(b)); onDisk.Complete() {
				onDisk.Step = st.Name
				launch = onDisk
			} else {
				st.AddError(fmt.Sprintf("handoff %s lacks %s on disk; the successor gets the document as written", path, strings.Join(onDisk.Missing(), ", ")))
			}
		}
		rt.save(st)
	}
	return launch.PromptBlock(), nil
}

func digest(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
