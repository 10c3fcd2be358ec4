package supervisor

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/tidwall/gjson"

	"github.com/flowerhq/flower/front"
	"github.com/flowerhq/flower/runlog"

	"github.com/flowerhq/flower/envinject"
	"github.com/flowerhq/flower/handoff"
	"github.com/flowerhq/flower/handoffwriter"
	"github.com/flowerhq/flower/inbox"
	"github.com/flowerhq/flower/manifest"
	"github.com/flowerhq/flower/policy"
	"github.com/flowerhq/flower/transcript"
)

type outcomeKind int

const (
	outcomeDone        outcomeKind = iota // the turn ended on its own: the step is done
	outcomeHandoff                        // cut (or overflowed): hand off to a successor
	outcomeFailed                         // the harness failed: retry, counted in attempts
	outcomeInterrupted                    // the caller cancelled
	outcomeFutile                         // a fresh session starts at or above the threshold
)

type outcome struct {
	kind      outcomeKind
	why       string // failure reason, or why a handoff is degraded
	sessionID string

	// handoffs
	reason         string // manifest.ReasonThreshold, ReasonOverflow or ReasonCompaction
	context        int
	floor          int    // futile: the measured start-up floor
	writeOutcome   string // manifest.Outcome*
	handoff        handoffwriter.Handoff
	writingSeconds float64
	writingCost    float64
	// early is the successor's harness, started when the handoff was
	// decided; predecessor is this attempt, whose harness is stopped once
	// early's first round is back (DESIGN.md «Warm successor»).
	early       front.Session
	predecessor *attemptRun
}

type phase int

const (
	phaseWorking phase = iota
	phaseCutting       // interrupt sent, waiting for the turn's result
	phaseWriting       // the handoff-writing turn (exempt from the threshold, DESIGN.md «Writing turn»)
)

// attempt runs one harness process for the current generation: it sends the
// first prompt at once (nothing waits for the harness's context-usage answer,
// DESIGN.md «Window from the harness») and follows the stream until the turn
// ends, a handoff is written, or the harness fails. A launch that carries a
// harness started early gives it the prompt (unless it has it already), and
// the predecessor's harness is stopped once the first round is back
// (DESIGN.md «Warm successor»).
func (s *stepRun) attempt(ctx context.Context, gen *manifest.Generation, l launch) outcome {
	rt := s.rt
	s.logState.Set(gen.N, l.resume, runlog.PhaseStarting)
	log := s.log
	sess := l.early
	if sess == nil {
		var err error
		if sess, err = rt.opts.Front.Launch(ctx, s.spec(gen.N, l.prompt, l.resume)); err != nil {
			return outcome{kind: outcomeFailed, why: err.Error(), sessionID: l.resume}
		}
		log.Info("harness started", "resume", l.resume)
	}
	rt.emit(Event{Kind: KindGeneration, Step: s.st.Name, Generation: gen.N, SessionID: l.resume,
		Window: rt.policy.Window, At: rt.policy.At(), WarnAt: rt.policy.WarnAt()})

	a := &attemptRun{stepRun: s, ctx: ctx, gen: gen, p: sess, log: log, fresh: l.resume == ""}
	a.meter.SessionID = l.resume
	defer a.finish() // stops the harness; records skipped output lines
	// DESIGN.md «Futile guard»: the run's measured floor judges a fresh
	// session before it costs a turn.
	a.predecessor = l.predecessor // stopped once this session's first round is back, or at the end
	if floor := rt.runFloor(); a.fresh && !l.begun && rt.policy.Enabled && floor >= rt.policy.At() {
		return a.futile(floor, "before its first turn")
	}
	var err error
	switch {
	case l.begun:
	case l.early != nil:
		err = sess.Send(l.prompt)
		log.Info("first prompt sent to the successor started early")
	default:
		err = sess.Begin()
	}
	if err != nil {
		return a.died(fmt.Sprintf("send prompt: %v", err))
	}
	a.setPhase(phaseWorking)
	if l.writing {
		a.writingResumed(l) // unattended: a session a limit stopped in its writing turn resumes in it
	}
	return a.follow(ctx)
}

// spec says how to start generation n's harness.
func (s *stepRun) spec(n int, prompt, resume string) front.Spec {
	rt := s.rt
	return front.Spec{
		Step: s.st.Name, Generation: n,
		Path: rt.opts.HarnessPath, Args: s.harnessArgs(), Model: rt.opts.Model, Resume: resume,
		Prompt: prompt, Dir: rt.opts.Workspace, Env: rt.env, Logger: s.log, Grace: rt.opts.Grace, Inbox: s.inboxDir,
	}
}

type attemptRun struct {
	*stepRun
	ctx   context.Context
	gen   *manifest.Generation
	p     front.Session
	log   *slog.Logger
	meter transcript.Meter
	phase phase
	// fresh: a new session, not a resumed one (the futile guard is for
	// fresh sessions only).
	fresh bool
	// successorDue fires when the successor is to start early (warm.go).
	successorDue <-chan time.Time
	// model is the model the session runs, from its init line.
	model   string
	sawInit bool
	// over: the attempt has returned its outcome; nothing may cut any more.
	over bool
	// warned: the near notice was shown in this generation (DESIGN.md «Near notice»).
	warned bool

	lastCost     float64 // meter.CostUSD already booked
	reason       string
	cutContext   int
	writingStart time.Time
	writingCost0 float64
	writing      strings.Builder
	writingTools int
	// The writing turn called a tool: it was interrupted (once) and asked
	// again for the document only.
	writingInterrupted bool
	writingRetried     bool
	sawRound           bool // a main-thread round was seen (futile guard)
	firstRound         int  // the context of the session's first main-thread round
	compacted          bool // the backstop fired in this attempt
	// autoBlocked counts the automatic compactions flower's hook blocked
	// in this attempt; handoffWanted: a handoff was asked for before the
	// session's first round (inbox.go).
	autoBlocked   int
	handoffWanted bool
	// idle: a person-driven session's turn ended and no new one has shown.
	idle bool

	// The context-usage request, asked beside the turn (probe.go).
	probeAsked bool
	probing    chan probeAnswer // its answer; nil when none is awaited

	// early is the successor's harness, started when the handoff was
	// decided (warm.go); detached: this attempt ended in a handoff with
	// one, so its own harness is stopped only once the successor's first
	// round is back.
	early    front.Session
	detached bool
	// predecessor is the burned attempt this session took over from; its
	// harness is stopped once this session's first request is out.
	predecessor *attemptRun

	// unattended: limits met and waited out, the running turn's cost, the deadline's timer (unattended.go)
	lim           limitWatch
	spend         spendMeter
	deadlineDue   <-chan time.Time
	deadlineFired bool
}

func (a *attemptRun) setPhase(p phase) {
	a.phase = p
	a.logState.SetPhase(p.String())
}

// futile ends the attempt because the fresh session already sits at or
// above the threshold: every successor would hand off at once, burning the
// remaining generations for nothing.
func (a *attemptRun) futile(floor int, when string) outcome {
	a.log.Error("futile handoff: the session starts above the threshold", "floor", floor, "at", a.rt.policy.At(), "when", when)
	// Stop the turn where it is; closing stdin alone would let it run on.
	_ = a.p.Cancel()
	return outcome{kind: outcomeFutile, floor: floor, why: when, sessionID: a.meter.SessionID, context: floor}
}

func (a *attemptRun) follow(ctx context.Context) outcome {
	rt := a.rt
	var timer <-chan time.Time
	arm := func(d time.Duration) {
		if d > 0 {
			timer = time.After(d)
		} else {
			timer = nil
		}
	}
	arm(rt.opts.TurnTimeout)
	ack, _ := a.p.(front.Acknowledger)
	for {
		select {
		case ev, ok := <-a.p.Records():
			if !ok {
				return a.exited()
			}
			before := a.phase
			if out, end := a.handle(&ev); end {
				return out
			}
			if ack != nil {
				ack.Handled()
			}
			if a.lim.wait != nil {
				arm(0) // unattended: no turn runs while a limit is waited out
			}
			if a.phase != before {
				switch a.phase {
				case phaseCutting:
					arm(rt.opts.CutTimeout)
				case phaseWriting:
					arm(rt.opts.WritingTimeout)
				}
			}
		case ans := <-a.probing:
			if out, end := a.probed(ans); end {
				return out
			}
		case r := <-a.requests:
			before := a.phase
			// What the harness said before it asked is folded in first:
			// the request is judged against it (its context, its round).
			if out, end := a.fold(ack); end {
				inbox.Done(a.inboxDir, r.Name)
				return out
			}
			if out, end := a.request(r); end {
				return out
			}
			if a.phase != before {
				switch a.phase {
				case phaseCutting:
					arm(rt.opts.CutTimeout)
				case phaseWriting:
					arm(rt.opts.WritingTimeout)
				}
			}
		case <-a.successorDue:
			a.successorDue = nil
			a.startSuccessor()
		case <-a.lim.wakeC(): // unattended: the limit lifted; the same session goes on
			if out, end := a.waitOver(); end {
				return out
			}
			if a.phase == phaseWriting {
				arm(rt.opts.WritingTimeout)
			} else {
				arm(rt.opts.TurnTimeout)
			}
		case <-a.lim.tickC(): // unattended: the wait's countdown
			a.waitTicked()
		case <-a.deadlineC(): // unattended: the deadline cuts a working turn at the message boundary
			if a.deadlineReached() {
				arm(rt.opts.CutTimeout)
			}
		case <-timer:
			switch a.phase {
			case phaseWorking:
				return a.fail(fmt.Sprintf("turn exceeded the turn timeout of %v", rt.opts.TurnTimeout))
			case phaseCutting:
				// The session would not stop: it cannot write its handoff.
				return a.handoffOutcome(handoffwriter.Handoff{}, fmt.Sprintf("the harness did not end the turn within %v of the interrupt", rt.opts.CutTimeout))
			default:
				return a.handoffOutcome(handoffwriter.Handoff{}, fmt.Sprintf("the writing turn did not finish within %v", rt.opts.WritingTimeout))
			}
		case <-ctx.Done():
			// Let the current turn end at a message boundary, then go.
			return a.interrupted(ctx) // stop.go
		}
	}
}

// fold handles the records the front has delivered already.
func (a *attemptRun) fold(ack front.Acknowledger) (outcome, bool) {
	for {
		select {
		case ev, ok := <-a.p.Records():
			if !ok {
				return a.exited(), true
			}
			if out, end := a.handle(&ev); end {
				return out, true
			}
			if ack != nil {
				ack.Handled()
			}
		default:
			return outcome{}, false
		}
	}
}

// exited ends the attempt of a harness that is gone. A person who ends the
// harness's own screen ends the step; any other exit while working is a
// failure, and one in the middle of a handoff degrades it.
func (a *attemptRun) exited() outcome {
	x := a.p.Exit()
	if x.ByPerson && a.phase == phaseWorking {
		a.log.Info("harness ended by the person")
		return outcome{kind: outcomeDone, sessionID: a.meter.SessionID}
	}
	return a.died(x.Why)
}

// exitWhy waits a grace period for the harness to exit after a turn it
// refused, and says how it ended.
func (a *attemptRun) exitWhy() string {
	deadline := time.After(a.rt.opts.Grace)
	for {
		select {
		case _, ok := <-a.p.Records():
			if !ok {
				return a.p.Exit().Why
			}
		case <-deadline:
			return "the harness is still running"
		}
	}
}

// died handles a harness that is gone. Mid-handoff, the handoff degrades
// (the session cannot write any more); otherwise the attempt failed.
func (a *attemptRun) died(why string) outcome {
	if a.phase != phaseWorking {
		return a.handoffOutcome(handoffwriter.Handoff{}, why)
	}
	return a.fail(why)
}

func (a *attemptRun) fail(why string) outcome {
	return outcome{kind: outcomeFailed, why: why, sessionID: a.meter.SessionID}
}

func (a *attemptRun) state() policy.State {
	return policy.State{Policy: a.rt.policy, WritingTurn: a.phase == phaseWriting, Context: a.meter.Context,
		SessionID: a.meter.SessionID, Warned: a.warned}
}

func (a *attemptRun) event(kind EventKind) Event {
	return Event{Kind: kind, Step: a.st.Name, Generation: a.gen.N, SessionID: a.meter.SessionID,
		Context: a.meter.Context, Window: a.rt.policy.Window, At: a.rt.policy.At(), WarnAt: a.rt.policy.WarnAt(),
		CostUSD: a.st.CostUSD}
}

// handle folds one record into the attempt; end reports that the attempt
// is over with the returned outcome.
func (a *attemptRun) handle(ev *transcript.Event) (out outcome, end bool) {
	rt, st := a.rt, a.st
	prevSession, prevResponses := a.meter.SessionID, a.meter.Responses
	a.meter.Observe(ev)
	a.unattendedRecord(ev) // unattended: limits seen, each response's cost; budget and deadline at every API response
	if a.meter.Responses != prevResponses {
		// One small record per main-thread response, the points of a run's
		// chart (DESIGN.md «Run page»); the phase says a writing turn's.
		a.log.Info("response", "context", a.meter.Context, "window", a.rt.policy.Window,
			"at", a.rt.policy.At(), "warn_at", a.rt.policy.WarnAt())
	}
	if a.phase != phaseWriting && ev.Raw != nil {
		// The harness's own line, for programs following the run; the
		// writing turn is not streamed (DESIGN.md «Writing turn»): its result is the done event.
		e := a.event(KindRaw)
		e.Raw = ev.Raw
		rt.emit(e)
	}
	if a.meter.SessionID != prevSession || (a.meter.SessionID != "" && a.gen.SessionID == "") {
		st.SetSessionID(a.meter.SessionID)
		a.logState.SetSession(a.meter.SessionID)
		rt.save(st)
		rt.emit(a.event(KindSession))
	}
	if ev.Kind == transcript.KindSystem && ev.Subtype == front.SubtypeSessionSwitch {
		a.switchSession(prevSession)
		return
	}
	if ev.Kind != transcript.KindAssistant && bytes.Contains(ev.Raw, []byte("Autocompact is thrashing")) {
		a.compaction(`"Autocompact is thrashing"`)
	}
	a.rt.checkVersion(ev)
	switch ev.Kind {
	case transcript.KindInit:
		a.sawInit = true
		if ev.Model != "" {
			a.model = ev.Model
		}
	case transcript.KindAssistant:
		if !ev.MainThread() {
			return
		}
		a.idle = false
		// The first prompt's request is out and answered: the one
		// context-usage request of the run may go now (probe.go), and
		// the predecessor's harness (warm.go).
		a.startProbe()
		a.retirePredecessor()
		if ev.Synthetic() {
			return
		}
		if a.phase == phaseWriting {
			// The writing turn is not streamed to the UI (DESIGN.md «Writing turn»).
			if ev.Text != "" {
				a.writing.WriteString(ev.Text)
				a.writing.WriteString("\n")
			}
			if len(ev.ToolUses) > 0 {
				a.writingTools += len(ev.ToolUses)
				if !a.writingInterrupted {
					// The writing turn is for text only: stop the tool and
					// ask again once (see result).
					a.writingInterrupted = true
					a.log.Warn("the writing turn called a tool; interrupting", "tool", ev.ToolUses[0].Name)
					_ = a.p.StopTool()
				}
			}
			return
		}
		if ev.Text != "" {
			e := a.event(KindText)
			e.Text = ev.Text
			rt.emit(e)
		}
		for _, tu := range ev.ToolUses {
			e := a.event(KindTool)
			e.Tool, e.Input = tu.Name, tu.Input
			rt.emit(e)
		}
		if out, end := a.check(); end {
			return out, true
		}
	case transcript.KindUser:
		if st.Task == "" && a.phase == phaseWorking && ev.MainThread() {
			// A person typed the task on the harness's own screen: it is
			// what a degraded handoff carries.
			if text := transcript.UserText(ev); isPrompt(text) {
				st.Task = text
				a.books().FreezeTask() // saves
			}
		}
	case transcript.KindSystem:
		if ev.Subtype == "compact_boundary" {
			md := gjson.GetBytes(ev.Raw, "compact_metadata")
			a.st.AddCompaction(manifest.Compaction{At: rt.opts.Now(), Trigger: md.Get("trigger").String(),
				PreTokens: int(md.Get("pre_tokens").Int()), PostTokens: int(md.Get("post_tokens").Int())})
			rt.save(st)
			a.log.Warn("the harness compacted its context", "trigger", md.Get("trigger").String(), "pre_tokens", md.Get("pre_tokens").Int(), "post_tokens", md.Get("post_tokens").Int())
			a.compaction("a compact_boundary line")
		}
		if ev.Subtype == "api_retry" {
			// The harness waits and asks the API again (a rate limit, an
			// overload): the run's page marks the wait (DESIGN.md «Run page»).
			r := gjson.ParseBytes(ev.Raw)
			a.log.Info("api retry", "attempt", r.Get("attempt").Int(), "max_retries", r.Get("max_retries").Int(),
				"retry_delay_ms", r.Get("retry_delay_ms").Int(), "error_status", r.Get("error_status").Int(), "error", r.Get("error").String())
		}
	case transcript.KindResult:
		a.startProbe()
		a.retirePredecessor()
		return a.result(ev)
	}
	return
}

// backstopArmed: auto-compact must not run (handoff on, and the agent did
// not ask for compact mode auto).
func (a *attemptRun) backstopArmed() bool {
	return a.rt.policy.Enabled && a.rt.opts.Compact != envinject.CompactAuto
}

// compaction is the backstop: the harness compacted although handoff had
// switched auto-compact off. The compacted context is not trusted: record
// it loudly and hand off at the next message boundary.
func (a *attemptRun) compaction(sign string) {
	if a.compacted || !a.backstopArmed() {
		return
	}
	a.compacted = true
	msg := "auto-compact ran although handoff switched it off (" + sign + "); handing off at the next boundary instead of trusting the compacted context"
	a.st.AddError(msg)
	a.rt.save(a.st)
	a.log.Error(msg)
	a.rt.emit(Event{Kind: KindNotice, Step: a.st.Name, Generation: a.gen.N, Text: msg, IsError: true})
	if a.phase == phaseWorking {
		a.cut(manifest.ReasonCompaction)
	}
}

// cut interrupts the running turn; its result starts the writing turn.
func (a *attemptRun) cut(reason string) {
	a.setPhase(phaseCutting)
	a.reason = reason
	a.cutContext = a.meter.Context
	a.log.Info("handoff due: interrupting at the message boundary", "reason", reason, "context", a.meter.Context, "at", a.rt.policy.At())
	if err := a.p.Cut(); err != nil {
		a.log.Warn("the cut failed", "err", err)
	}
}

// check applies the thresholds after a main-thread round (DESIGN.md «Threshold path», «Near notice») and the
// futile guard to the session's first round.
func (a *attemptRun) check() (outcome, bool) {
	if a.phase != phaseWorking || a.over {
		return outcome{}, false
	}
	if !a.sawRound {
		a.sawRound = true
		a.firstRound = a.meter.Context
		if out, end := a.futileRound(); end {
			return out, true
		}
	}
	return a.thresholds()
}

// judge applies the futile guard and the thresholds again after the window
// moved (the harness answered the context-usage request): the rounds seen
// before were judged against the window in force then.
func (a *attemptRun) judge() (outcome, bool) {
	if a.phase != phaseWorking || a.over || !a.sawRound {
		return outcome{}, false
	}
	if out, end := a.futileRound(); end {
		return out, true
	}
	return a.thresholds()
}

// futileRound is the futile guard on a fresh session's first round (DESIGN.md «Futile guard»).
func (a *attemptRun) futileRound() (outcome, bool) {
	if a.fresh && a.rt.policy.Enabled && a.firstRound >= a.rt.policy.At() {
		return a.futile(a.firstRound, "in its first round"), true
	}
	return outcome{}, false
}

// thresholds shows the near notice and cuts when a handoff is due.
func (a *attemptRun) thresholds() (outcome, bool) {
	s := a.state()
	if policy.NearDue(s) {
		a.warned = true
		e := a.event(KindHandoff)
		e.Phase = PhaseNear
		a.rt.emit(e)
	}
	if policy.HandoffDue(s) {
		a.cut(manifest.ReasonThreshold)
	} else if a.handoffWanted && a.meter.SessionID != "" {
		a.handoffWanted = false
		a.cut(manifest.ReasonRequested)
	}
	return outcome{}, false
}

func (a *attemptRun) result(ev *transcript.Event) (outcome, bool) {
	rt, st := a.rt, a.st
	st.AddUsage(a.meter.CostUSD-a.lastCost, ev.NumTurns)
	a.lastCost = a.meter.CostUSD
	st.SetContext(a.meter.Context)
	if w := a.resultWindow(ev); w > 0 {
		a.crossCheck(w)
	}
	if out, end, ok := a.unattendedResult(ev); ok { // unattended: a turn ended on a limit waits it out (no attempt), or stops the step past --max-wait
		rt.save(st)
		return out, end
	}
	overflow := ev.TerminalReason == "prompt_too_long" || ev.TerminalReason == "blocking_limit" ||
		(ev.IsError && handoffwriter.IsOverflow(ev.Result))
	if a.phase == phaseCutting && !overflow && !a.endedAtCut(ev) {
		// The writing prompt goes out before the books are saved: their
		// syncs are not on the cut's path.
		out, end := a.startWriting()
		rt.save(st)
		return out, end
	}
	rt.save(st)
	switch a.phase {
	case phaseWorking:
		e := a.event(KindTurn)
		e.Text, e.IsError = ev.Result, ev.IsError
		rt.emit(e)
		if overflow {
			// DESIGN.md «Overflow path»: the session cannot run another turn; degrade and go on.
			a.reason = manifest.ReasonOverflow
			a.cutContext = a.meter.Context
			return a.handoffOutcome(handoffwriter.Handoff{}, "overflow: "+firstNonEmpty(ev.Result, ev.TerminalReason)), true
		}
		if a.rt.caps.OutsideTurns {
			// The person reads the turn's end (an error included) on the
			// harness's screen and types the next one.
			a.idle = true
			return outcome{}, false
		}
		if ev.IsError {
			why := "the turn ended in an error: " + firstNonEmpty(ev.Result, ev.Subtype, ev.TerminalReason)
			if !a.sawInit {
				// A result before any init line: the harness refused the
				// session (a resume of one it does not know, say). Its
				// reason is on stderr, and it exits now (DESIGN.md «Result lines»).
				why += "; " + a.exitWhy()
			}
			return a.fail(why), true
		}
		return outcome{kind: outcomeDone, sessionID: a.meter.SessionID}, true
	case phaseCutting:
		if overflow {
			a.reason = manifest.ReasonOverflow
			return a.handoffOutcome(handoffwriter.Handoff{}, "overflow at the cut: "+firstNonEmpty(ev.Result, ev.TerminalReason)), true
		}
		// The turn ended on its own before the interrupt reached it
		// (the round over the threshold was the agent's last reply): the
		// agent is done, and there is nothing to hand off (DESIGN.md «The cut»).
		a.log.Info("the turn ended on its own at the cut; the step is done")
		e := a.event(KindTurn)
		e.Text = ev.Result
		rt.emit(e)
		return outcome{kind: outcomeDone, sessionID: a.meter.SessionID}, true
	default: // writing
		if overflow {
			return a.handoffOutcome(handoffwriter.Handoff{}, "the writing turn overflowed: "+firstNonEmpty(ev.Result, ev.TerminalReason)), true
		}
		h := handoffwriter.Parse(a.writing.String())
		if h.Complete() {
			return a.handoffOutcome(h, ""), true
		}
		if a.writingInterrupted && !a.writingRetried {
			// It called a tool instead of writing: ask once more.
			a.writingRetried, a.writingInterrupted = true, false
			a.writing.Reset()
			a.log.Warn("asking again for the handoff document only")
			if err := a.p.Send(retryPrompt + handoff.WritingPrompt(a.cutContext, rt.policy.Window, a.st.Task, rt.opts.TaskCarry)); err != nil {
				return a.handoffOutcome(handoffwriter.Handoff{}, "send the handoff prompt again: "+err.Error()), true
			}
			return outcome{}, false
		}
		var why string
		switch {
		case a.writingRetried && a.writingTools > 1:
			why = fmt.Sprintf("the writing turn called tools instead of writing, also when asked again for the document only (%d tool calls)", a.writingTools)
		case ev.IsError:
			why = "the writing turn failed: " + firstNonEmpty(ev.Result, ev.Subtype, ev.TerminalReason)
		default:
			why = "the handoff is missing " + strings.Join(h.Missing(), ", ")
		}
		return a.handoffOutcome(h, why), true
	}
}

// handoffOutcome ends the attempt with a handoff; a non-empty why degrades
// it (DESIGN.md «Degraded handoff»). The process is stopped by attempt's deferred Stop.
func (a *attemptRun) handoffOutcome(h handoffwriter.Handoff, why string) outcome {
	if a.reason == "" {
		a.reason = manifest.ReasonThreshold
	}
	if a.cutContext == 0 {
		a.cutContext = a.meter.Context
	}
	// An overflow, or a harness that died, decides the handoff only now:
	// the successor starts at once, beside the freeze.
	a.startSuccessor()
	out := outcome{kind: outcomeHandoff, handoff: h, why: why, sessionID: a.meter.SessionID,
		reason: a.reason, context: a.cutContext, early: a.early}
	if a.early != nil {
		// The successor takes it from here; this harness is stopped after
		// the successor has its prompt (DESIGN.md «Warm successor»).
		out.predecessor, a.early, a.detached = a, nil, true
	}
	switch {
	case a.writingStart.IsZero():
		out.writeOutcome = manifest.OutcomeNoWritingTurn
	case why != "":
		out.writeOutcome = manifest.OutcomeDegraded
	case a.writingRetried:
		out.writeOutcome = manifest.OutcomeWrittenOnRetry
	default:
		out.writeOutcome = manifest.OutcomeWritten
	}
	if !a.writingStart.IsZero() {
		out.writingSeconds = a.rt.opts.Now().Sub(a.writingStart).Seconds()
		out.writingCost = a.meter.CostUSD - a.writingCost0
	}
	return out
}

// endedAtCut: the cut turn ended on its own, not by the interrupt.
func (a *attemptRun) endedAtCut(ev *transcript.Event) bool {
	return !ev.IsError && gjson.GetBytes(ev.Raw, "stop_reason").String() == "end_turn" && !a.rt.caps.OutsideTurns
}

// startWriting begins the writing turn once the cut turn has ended.
func (a *attemptRun) startWriting() (outcome, bool) {
	rt := a.rt
	a.setPhase(phaseWriting)
	a.writingStart = rt.opts.Now()
	a.writingCost0 = a.meter.CostUSD
	e := a.event(KindHandoff)
	e.Phase = PhaseWriting
	e.Context = a.cutContext
	rt.emit(e)
	if err := a.p.Send(handoff.WritingPrompt(a.cutContext, rt.policy.Window, a.st.Task, rt.opts.TaskCarry)); err != nil {
		return a.handoffOutcome(handoffwriter.Handoff{}, "send the handoff prompt: "+err.Error()), true
	}
	// The cut is over and the handoff certain: the successor's harness
	// starts beside the writing turn, once the writing request is out
	// (DESIGN.md «Warm successor»).
	a.successorDue = time.After(successorDelay)
	return outcome{}, false
}

// retryPrompt precedes the handoff prompt when the writing turn called a
// tool instead of writing.
const retryPrompt = "You called a tool. Do not call any tool now, not even to look something up: " +
	"reply with the handoff document only, from what you already know.\n\n"

func firstNonEmpty(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

// switchSession retires the session the harness left and starts the meter
// over for the one it moved to.
func (a *attemptRun) switchSession(prev string) {
	if prev == "" || prev == a.meter.SessionID {
		return
	}
	a.log.Info("the harness switched sessions", "from", prev, "to", a.meter.SessionID)
	a.st.Retire(prev)
	sid := a.meter.SessionID
	cost, turns := a.meter.CostUSD, a.meter.Turns
	a.meter = transcript.Meter{SessionID: sid, CostUSD: cost, Turns: turns}
	a.warned = false
	a.st.SetSessionID(sid)
	a.st.SetContext(0)
	a.logState.SetSession(sid)
	a.rt.save(a.st)
	a.rt.emit(a.event(KindSession))
}

// isPrompt tells a prompt a person typed from the user records the harness
// writes of its own (tool results, reminders, notifications, commands,
// interrupt notes) and from flower's handoff prompt.
func isPrompt(text string) bool {
	t := strings.TrimSpace(text)
	return t != "" && !strings.HasPrefix(t, "<") && !strings.HasPrefix(t, "[Request interrupted") &&
		!strings.Contains(t, handoffwriter.PromptTag)
}
