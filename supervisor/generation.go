package supervisor

import (
	"context"
	"fmt"

	"github.com/flowerhq/flower/handoff"
	"github.com/flowerhq/flower/handoffwriter"
	"github.com/flowerhq/flower/manifest"
	"github.com/flowerhq/flower/policy"
	"github.com/flowerhq/flower/workbench"
)

// genEnd is how one generation ended: with the step (done, failed,
// interrupted, futile; err says why it did not succeed), or with a handoff
// frozen to disk (err is the generation limit, if this was the last one).
type genEnd struct {
	out    outcome
	gen    *manifest.Generation
	frozen handoff.Frozen
	err    error
}

// generation runs one generation of the step: the attempts of its harness,
// a crashed harness resumed up to the attempt limit (DESIGN.md «Retries»),
// until the step ends or the session hands off, its handoff frozen. It does
// not start the successor: RunStep launches it from the file (DESIGN.md
// «Launch from disk»), a remote front in a generation of its own.
// failedBefore is the step's attempt count when the call began.
func (s *stepRun) generation(ctx context.Context, l *launch, failedBefore int) genEnd {
	for {
		if err := s.boundBefore(); err != nil { // unattended: a bound reached already starts nothing
			s.abandon(*l)
			return genEnd{gen: s.st.Current(), err: err}
		}
		if why := s.admit(); why != "" { // a file the harness reads changed: nothing starts until the person looks
			s.abandon(*l)
			return genEnd{gen: s.st.Current(), err: s.untrustedStop(why)}
		}
		s.beginGeneration(l)
		gen := s.st.Current()
		if l.resume != "" && !s.rt.caps.Resumes {
			// This front cannot start a session again by its id: go on
			// from the step's latest handoff (or its task) instead.
			if err := s.relaunchRefused(gen, l, "this front cannot resume a session"); err != nil {
				return genEnd{gen: gen, err: err, out: outcome{kind: outcomeFailed, why: err.Error()}}
			}
			continue
		}
		out := s.runAttempt(ctx, gen, l)
		if end, again := s.afterAttempt(ctx, gen, l, out, failedBefore); !again {
			return end
		}
	}
}

// relaunchRefused replaces l, whose session the front refused to resume
// (why), with a launch from the step's latest handoff or its task. If
// there is none to go on from, the step ends failed with the error.
func (s *stepRun) relaunchRefused(gen *manifest.Generation, l *launch, why string) error {
	next, err := s.resumeRefused(gen, *l, why)
	if err != nil {
		s.failStep(err)
		return err
	}
	*l = next
	return nil
}

// runAttempt runs one attempt of l in gen and forgets what served that
// attempt only (spent). Stopped already (between attempts, during a
// handoff, say), it starts nothing and the outcome is an interruption; a
// harness that failed because flower is stopping (a second signal kills
// it at once) is an interruption too, no failure of the step.
func (s *stepRun) runAttempt(ctx context.Context, gen *manifest.Generation, l *launch) outcome {
	var out outcome
	if ctx.Err() != nil {
		s.abandon(*l)
		out = outcome{kind: outcomeInterrupted, why: context.Cause(ctx).Error()}
	} else {
		out = s.attempt(ctx, gen, *l)
	}
	l.spent()
	if out.kind == outcomeFailed && ctx.Err() != nil {
		out = outcome{kind: outcomeInterrupted, why: context.Cause(ctx).Error() + " (" + out.why + ")", sessionID: out.sessionID}
	}
	return out
}

// afterAttempt records what out, the outcome of an attempt in gen, does to
// the step. again reports that another attempt of the generation follows
// (a retry, or a session the front would not resume launched afresh);
// otherwise end is how the generation ended.
func (s *stepRun) afterAttempt(ctx context.Context, gen *manifest.Generation, l *launch, out outcome, failedBefore int) (end genEnd, again bool) {
	end = genEnd{out: out, gen: gen}
	switch out.kind {
	case outcomeDone:
		s.finishStep(manifest.StatusSucceeded)
	case outcomeInterrupted:
		// The session stays the step's latest (DESIGN.md «Continuation»): continue resumes it.
		s.st.AddError("interrupted: " + out.why)
		s.finishStep(manifest.StatusInterrupted)
		end.err = fmt.Errorf("step %s interrupted: %w", s.st.Name, context.Cause(ctx))
	case outcomeFailed:
		again, end.err = s.failedAttempt(gen, l, out, failedBefore)
	case outcomeFutile:
		end.err = s.futileStop(out)
	case outcomeHandoff:
		end.frozen, end.err = s.freezeHandoff(gen, out)
	case outcomeLimited: // unattended: a limit past --max-wait stops the step; its session stays live for continue
		end.err = s.limitStop(gen, out)
	case outcomeAuth: // refused credentials: no attempt would fare better
		end.err = s.authStop(out)
	case outcomeUnreachable: // no endpoint to talk to: neither would an attempt
		end.err = s.stop(manifest.StatusUnreachable, out.why)
	case outcomeUnanswered: // closed before anything was answered: no success
		end.err = s.stop(manifest.StatusInterrupted, out.why)
	}
	return end, again
}

// failedAttempt records an attempt in gen that failed (out). A session the
// front refused to resume goes on from the step's latest handoff or task
// (relaunchRefused). Any other failure counts: at the attempt limit
// (DESIGN.md «Retries») the step ends failed with the error; below it
// another attempt follows (again), resuming the session when there is one,
// since its context is what this generation has built up.
func (s *stepRun) failedAttempt(gen *manifest.Generation, l *launch, out outcome, failedBefore int) (again bool, err error) {
	if refused := s.rt.caps.ResumeRefused; l.resume != "" && refused != nil && refused(out.why) {
		err := s.relaunchRefused(gen, l, out.why)
		return err == nil, err
	}
	rt, st := s.rt, s.st
	st.Attempts++
	st.AddError(fmt.Sprintf("attempt %d: %s", st.Attempts, out.why))
	s.log.Warn("attempt failed", "attempts", st.Attempts, "why", out.why)
	if st.Attempts-failedBefore >= rt.opts.MaxAttempts {
		s.finishStep(manifest.StatusFailed)
		return false, fmt.Errorf("%w: %s after %d attempts: %s", ErrStepFailed, st.Name, st.Attempts-failedBefore, out.why)
	}
	rt.save(st)
	rt.emit(Event{Kind: KindRetry, Step: st.Name, Generation: gen.N, Text: out.why})
	if out.sessionID != "" {
		l.resume = out.sessionID
		l.prompt = "The harness process running this session stopped unexpectedly (" + out.why + "). Continue the task from where you were."
	}
	return true, nil
}

// futileStop ends the step at the generation limit for a futile outcome:
// a fresh session at or above the threshold would hand off forever, so it
// stops now with the measured floor (DESIGN.md «Runaway guard»).
func (s *stepRun) futileStop(out outcome) error {
	rt := s.rt
	err := &policy.GenerationLimitError{Futile: true, Max: rt.policy.MaxGenerations, Window: rt.policy.Window, At: rt.policy.At(),
		Floor: out.floor, Knobs: rt.policy.Knobs}
	s.st.AddError(err.Error())
	s.finishStep(manifest.StatusGenerationLimit)
	return err
}

// freezeHandoff freezes the handoff out carries as gen's. Unattended, a
// step past its budget or deadline stops after the handoff: the error says
// so.
func (s *stepRun) freezeHandoff(gen *manifest.Generation, out outcome) (handoff.Frozen, error) {
	f, err := s.books().Freeze(gen, handoff.Cut{Handoff: out.handoff, Why: out.why, Reason: out.reason,
		Context: out.context, WritingSeconds: out.writingSeconds, WritingCostUSD: out.writingCost, Outcome: out.writeOutcome})
	if err == nil {
		err = s.boundStop(out.reason)
	}
	return f, err
}

// beginGeneration begins the generation l asks for, if it does. A
// successor waiting, started early, gets its prompt before the generation
// is saved (saveOnPrompt): a flower that dies before that save leaves the
// step as it was after the freeze, which a continue starts again from the
// file.
func (s *stepRun) beginGeneration(l *launch) {
	if !l.newGeneration {
		return
	}
	s.st.BeginGeneration("", s.rt.clock.Now())
	l.newGeneration = false
	if l.saveOnPrompt = l.early != nil && !l.begun; !l.saveOnPrompt {
		s.rt.save(s.st)
	}
}

// spent forgets what served one attempt only: a successor started early
// (a retry starts its own harness), and the writing turn to resume (a
// retry resumes the session as a working turn, cut again at its first
// round; unattended).
func (l *launch) spent() {
	l.saveOnPrompt = false
	l.early, l.predecessor, l.begun, l.beginErr = nil, nil, false, nil
	l.writing = false
}

// failStep ends the step failed for err, recorded.
func (s *stepRun) failStep(err error) {
	s.st.AddError(err.Error())
	s.finishStep(manifest.StatusFailed)
}

// finishStep ends the step with status (a manifest status) and saves it.
func (s *stepRun) finishStep(status string) {
	s.st.Finish(status, s.rt.clock.Now())
	s.rt.save(s.st)
}

// How a generation run by RunGeneration ended (GenerationResult.End).
const (
	// EndHandoff: the session handed off; its handoff is frozen and the
	// next generation starts from it.
	EndHandoff = "handoff"
	// The step's own ends, as manifest statuses.
	EndSucceeded       = manifest.StatusSucceeded
	EndFailed          = manifest.StatusFailed
	EndGenerationLimit = manifest.StatusGenerationLimit
	EndInterrupted     = manifest.StatusInterrupted
)

// GenerationInput says which step a generation belongs to and what it
// starts from. The caller (a workflow) keeps the step's handoffs; the
// engine freezes, launches and records them as in a local run.
type GenerationInput struct {
	Step string
	Task string
	// Handoff is the handoff document (markdown) the generation starts
	// from; empty starts from the task (the step's first generation).
	Handoff string
	// Replaced says a person set Handoff in place of the one the previous
	// generation wrote: it is frozen to the handoff file (the previous one
	// archived) before the generation launches from the file.
	Replaced bool
	// Lost describes an earlier run of this generation whose machine was
	// lost; nil for a first run.
	Lost *LostGeneration
}

// LostGeneration is what was last heard of a generation that was lost with
// its machine (its last heartbeat).
type LostGeneration struct {
	// Why says how it was lost ("no heartbeat for 30s").
	Why       string
	SessionID string
	Context   int
	NumTurns  int
	CostUSD   float64
}

// String describes the lost generation for a person.
func (l LostGeneration) String() string {
	s := l.Why
	if l.SessionID != "" || l.NumTurns > 0 {
		s += fmt.Sprintf("; last heard: session %s, context %s, %d turns, $%.4f", firstNonEmpty(l.SessionID, "(none yet)"),
			policy.FormatUsed(l.Context), l.NumTurns, l.CostUSD)
	}
	return s
}

// GenerationResult is the outcome of RunGeneration: how the generation
// ended, and the handoff it froze, as the manifest records them.
type GenerationResult struct {
	Step string
	// N is the manifest's number of the generation that ran (a lost
	// generation makes way for a new one, so it may be past the
	// caller's count).
	N int
	// End is EndHandoff or how the step ended (EndSucceeded, …).
	End string
	// Error is why the step ended without success (the generation limit's
	// message, the failure); empty otherwise.
	Error string
	// Futile: the generation limit was the futile guard (DESIGN.md «Futile guard»).
	Futile bool

	// The handoff, when End is EndHandoff or EndGenerationLimit after one.
	Handoff  string // the document as frozen (markdown)
	Degraded bool
	Why      string
	Reason   string
	Outcome  string
	Path     string
	Sections []string

	// Started says what the generation started from, for a person: "the
	// task", a handoff file, or a degraded handoff after a lost machine.
	Started string
	// Launched is the handoff document (markdown) the generation's first
	// prompt carried, as read from disk; empty when it started from the task.
	Launched string

	SessionID    string
	Context      int
	Window       int
	WindowSource string
	// CostUSD and NumTurns are this call's share (retries included).
	CostUSD  float64
	NumTurns int
	// Retired and Errors are what this call added to the step's records.
	Retired []string
	Errors  []string
	// Generations are the manifest's records of the generations this call
	// ran or ended (a lost one, then its successor), in order.
	Generations []manifest.Generation
}

// RunGeneration runs exactly one generation of a step with the engine a
// local run uses (harness, meter, cut, writing turn, retries of a crashed
// harness, degraded path, freeze to the workbench), recording it in the run
// directory's manifest, and returns its outcome. It is what a remote front
// runs as one unit of work (DESIGN.md «Many machines»); the caller decides
// whether another generation follows.
//
// A generation starts from in.Handoff as the handoff file holds it now
// (DESIGN.md «Launch from disk»), or from the task. A lost earlier run of
// it (in.Lost) is recorded and its session retired; the new run starts from
// the last handoff, or, with none, from a degraded handoff built from the
// task and what was last heard of the lost one, frozen as that generation's.
//
// The error is RunStep's for the same end (a *policy.GenerationLimitError,
// ErrStepFailed, an interruption); the result is valid with it, except for
// errors before anything ran (a busy step).
func (rt *Runtime) RunGeneration(ctx context.Context, in GenerationInput) (*GenerationResult, error) {
	s, err := rt.lockStep(in.Step)
	if err != nil {
		return nil, err
	}
	defer s.unlock()
	defer s.reap()
	// The successor is the caller's next generation, perhaps on another
	// machine: none is started early here (DESIGN.md «Warm successor»).
	s.late = true
	now := rt.clock.Now()
	st := rt.m.EnsureStep(in.Step, in.Task, now)
	if st.Task == "" {
		st.Task = in.Task
	}
	s.st = st
	if in.Task != "" && st.Task != in.Task {
		// A remote step's task is its workflow's, on every worker: a
		// manifest on the shared volume that says otherwise vouches for
		// nothing (DESIGN.md «Known documents»). Its task file is frozen
		// again, the other one archived.
		s.note(fmt.Sprintf("the run dir's manifest records another task for step %s than its workflow's; the workflow's is used", st.Name))
		st.Task, st.TaskSHA256 = in.Task, ""
	}
	fresh := st.TaskSHA256 == ""
	s.begin()
	if fresh {
		s.books().FreezeTask()
	}
	cost0, turns0, retired0, errors0 := st.CostUSD, st.NumTurns, len(st.Retired), len(st.Errors)
	gens0 := len(st.Generations)
	if cur := st.Current(); cur != nil && cur.Handoff == nil {
		gens0-- // an open generation: lost, or never got a session
	}

	res := &GenerationResult{Step: st.Name}
	l, g, done := s.generationStart(in, res)
	if !done {
		g = s.generation(ctx, &l, st.Attempts)
		if g.out.kind == outcomeHandoff {
			rt.emit(DoneEvent(st, g.gen, g.frozen, rt.policy))
			// Nothing was started early; should a front have, it stops.
			s.abandon(launch{early: g.out.early, predecessor: g.out.predecessor})
		}
	}
	// The harnesses let go are stopped before the result is read: what
	// they tell as they exit (a cost, skipped lines) is this generation's.
	s.reap()
	res.fill(st, g, rt)
	res.CostUSD, res.NumTurns = st.CostUSD-cost0, st.NumTurns-turns0
	res.Retired = append([]string{}, st.Retired[retired0:]...)
	res.Errors = append([]string{}, st.Errors[errors0:]...)
	res.Generations = append([]manifest.Generation{}, st.Generations[gens0:]...)
	return res, s.durable(g.err)
}

func (res *GenerationResult) fill(st *manifest.StepResult, g genEnd, rt *Runtime) {
	gen := g.gen
	if gen == nil {
		gen = st.Current()
	}
	if gen != nil {
		res.N = gen.N
		res.Context = gen.Context
		res.SessionID = gen.SessionID
	}
	res.Window, res.WindowSource = rt.policy.Window, rt.windowSource
	switch st.Status {
	case manifest.StatusRunning:
		res.End = EndHandoff
	default:
		res.End = st.Status
	}
	if g.err != nil {
		res.Error = g.err.Error()
	}
	res.Futile = g.out.kind == outcomeFutile
	if rec := g.frozen.Record; rec != nil {
		res.Handoff = g.frozen.Handoff.Markdown()
		res.Degraded, res.Why, res.Reason, res.Outcome = rec.Degraded, rec.Why, rec.Reason, rec.Outcome
		res.Path, res.Sections = g.frozen.Path, rec.Sections
	}
}

// generationStart decides how a generation of RunGeneration starts. done
// reports that it ended before a harness started (a lost generation's
// degraded handoff was the last the policy allows), with g saying how.
func (s *stepRun) generationStart(in GenerationInput, res *GenerationResult) (l launch, g genEnd, done bool) {
	rt, st := s.rt, s.st
	cur := st.Current()
	lostNote := ""
	if in.Lost != nil {
		lostNote = s.lostGeneration(cur, *in.Lost)
		cur = st.Current()
		if in.Handoff == "" {
			// Nothing was handed off yet: a degraded handoff from the task
			// and the last heartbeat, frozen as the lost generation's
			// (DESIGN.md «Degraded handoff»).
			gen := cur
			if gen == nil || gen.Handoff != nil {
				gen = st.BeginGeneration(in.Lost.SessionID, rt.clock.Now())
			}
			f, err := s.books().Freeze(gen, handoff.Cut{Why: "the machine running this generation was lost: " + in.Lost.String(),
				Reason: manifest.ReasonLost, Context: in.Lost.Context, Outcome: manifest.OutcomeNoWritingTurn})
			rt.emit(DoneEvent(st, gen, f, rt.policy))
			if err != nil {
				return launch{}, genEnd{out: outcome{kind: outcomeHandoff}, gen: gen, err: err}, true
			}
			res.Started = "a degraded handoff built from the task and the lost generation's last heartbeat"
			res.Launched = f.Handoff.Markdown()
			prompt := s.books().Launch(f)
			if f.Path != "" {
				if b, err := readFile(f.Path); err == nil {
					res.Launched = string(b)
				}
			}
			return launch{prompt: prompt, newGeneration: true, fallback: s.handoffFallback}, genEnd{}, false
		}
	}
	newGen := cur == nil || cur.Handoff != nil || cur.SessionID != ""
	if !newGen {
		cur.EndedAt = nil // a generation that never got a session runs on
	}
	if in.Handoff == "" {
		res.Started = "the task"
		task, _ := s.books().Task()
		return launch{prompt: lostNote + task, newGeneration: newGen, fallback: s.taskFallback}, genEnd{}, false
	}
	prompt, from, launched := s.launchFrom(in)
	res.Started, res.Launched = from, launched
	return launch{prompt: lostNote + prompt, newGeneration: newGen, fallback: s.handoffFallback}, genEnd{}, false
}

// lostGeneration records that the open generation cur was lost with its
// machine: its session is retired (it lives in the lost machine's harness
// state) and the generation ended. It returns the note a successor's first
// prompt opens with.
func (s *stepRun) lostGeneration(cur *manifest.Generation, lost LostGeneration) string {
	rt, st := s.rt, s.st
	n := 1
	if cur != nil {
		n = cur.N
		if cur.Handoff == nil && cur.EndedAt == nil {
			st.Retire(cur.SessionID)
			end := rt.clock.Now()
			cur.EndedAt = &end
		} else {
			n++
		}
	}
	st.Retire(lost.SessionID)
	if st.SessionID != "" && st.SessionID == lost.SessionID || cur != nil && st.SessionID == cur.SessionID {
		st.SessionID = ""
	}
	msg := fmt.Sprintf("generation %d was lost with its machine (%s); a fresh session takes over", n, lost.String())
	st.AddError(msg)
	s.log.Warn(msg)
	rt.emit(Event{Kind: KindNotice, Step: st.Name, Generation: n, Text: msg, IsError: true})
	rt.save(st)
	return "A session that worked on this step after the document below was lost with its machine " +
		"(" + lost.String() + "). Check the workspace for work it already did before you redo anything.\n\n"
}

// launchFrom returns the first prompt of a generation that starts from
// in.Handoff, what it started from, and the document as launched. The
// handoff file is the document when this run directory recorded it (a
// person may have edited it, DESIGN.md «Launch from disk»); a document
// the step's records do not know (set by a person, or recorded on another
// machine's disk) is frozen to the file first.
func (s *stepRun) launchFrom(in GenerationInput) (prompt, from, launched string) {
	rt, st := s.rt, s.st
	rec := s.lastHandoff()
	f := handoff.Frozen{Handoff: parseHandoff(in.Handoff, st.Name), Record: rec}
	known := rec != nil && rec.Path != "" && !in.Replaced && rec.SHA256Written == handoff.Digest([]byte(in.Handoff))
	if known {
		f.Path = rec.Path
	} else {
		if rec == nil {
			rec = &manifest.HandoffRecord{} // nowhere to record the launch
			f.Record = rec
		}
		path, err := rt.wb.Freeze(st.Name, []byte(in.Handoff), rt.clock.Now())
		if err != nil {
			st.AddError("write handoff: " + err.Error())
			s.log.Error("write handoff", "err", err)
		}
		f.Path = path
		if in.Replaced {
			msg := fmt.Sprintf("the next generation starts from a handoff a person set (sha256 %s)", handoff.Digest([]byte(in.Handoff))[:16])
			st.AddError(msg)
			s.log.Info(msg)
			rt.emit(Event{Kind: KindNotice, Step: st.Name, Text: msg})
		}
	}
	prompt = s.books().Launch(f)
	from, launched = "the handoff as given", in.Handoff
	if f.Path != "" {
		from = f.Path
		if b, err := readFile(f.Path); err == nil {
			launched = string(b)
		}
	}
	return prompt, from, launched
}

func parseHandoff(doc, step string) handoffwriter.Handoff {
	h := handoffwriter.Parse(doc)
	h.Step = step
	return h
}

// readFile reads a handoff file flower froze, under its cap and without
// following a link (DESIGN.md «Territory»).
func readFile(path string) ([]byte, error) {
	return workbench.ReadNote(path, workbench.MaxHandoff, "a handoff")
}
