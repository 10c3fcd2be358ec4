package supervisor

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strings"

	"github.com/flowerhq/flower/front"
	"github.com/flowerhq/flower/runlog"

	"github.com/flowerhq/flower/handoff"
	"github.com/flowerhq/flower/handoffwriter"
	"github.com/flowerhq/flower/manifest"
	"github.com/flowerhq/flower/policy"
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
		rt.flush() // the generation is on disk before its harness starts
		var err error
		if sess, err = rt.opts.Front.Launch(ctx, s.spec(gen.N, l.prompt, l.resume)); err != nil {
			return outcome{kind: outcomeFailed, why: err.Error(), sessionID: l.resume}
		}
		log.Info("harness started", "resume", l.resume)
	}
	rt.emit(Event{Kind: KindGeneration, Step: s.st.Name, Generation: gen.N, SessionID: l.resume,
		Window: rt.policy.Window, At: rt.policy.At(), WarnAt: rt.policy.WarnAt()})

	a := &attemptRun{stepRun: s, ctx: ctx, gen: gen, p: sess, pull: newPuller(sess), log: log, fresh: l.resume == ""}
	a.meter.SessionID = l.resume
	defer a.finish() // stops the harness; records skipped output lines
	// DESIGN.md «Futile guard»: the run's measured floor judges a fresh
	// session before it costs a turn.
	a.predecessor = l.predecessor // stopped once this session's first round is back, or at the end
	if !l.begun {
		if out, end := a.act(a.futileAt(rt.runFloor(), "before its first turn")); end {
			return out
		}
	}
	// The work turn starts with the first prompt: a harness that cannot
	// take it failed the attempt.
	a.startWork(causeBegan)
	switch {
	case l.begun:
		if l.beginErr != nil {
			return a.fail(fmt.Sprintf("send prompt: %v", l.beginErr))
		}
	case l.early != nil:
		a.send(front.Turn{Kind: front.TurnFirst, Prompt: l.prompt}, "send prompt")
		if l.saveOnPrompt {
			rt.save(s.st)
		}
	default:
		a.order(effect{kind: doBegin, what: "send prompt"})
	}
	if out, end := a.act(outcome{}, false); end {
		return out
	}
	if l.early != nil && !l.begun {
		log.Info("first prompt sent to the successor started early")
	}
	if l.writing {
		a.writingResumed(l) // unattended: a session a limit stopped in its writing turn resumes in it
	}
	a.armDeadline() // unattended: the step's deadline cuts a turn stuck in a long tool too
	out := a.follow(ctx)
	if out.kind == outcomeHandoff {
		a.handOver(&out)
	}
	return out
}

// spec says how to start generation n's harness.
func (s *stepRun) spec(n int, prompt, resume string) front.Spec {
	rt, hold := s.rt, s.hold()
	return front.Spec{
		Step: s.st.Name, Generation: n,
		Path: rt.opts.HarnessPath, Args: rt.harness.Args(hold), Hold: hold, Model: rt.opts.Model, Resume: resume,
		Prompt: prompt, Ours: prompt != "" && prompt != s.st.Task, Dir: rt.opts.Workspace, Env: rt.env, Logger: s.log,
		Grace: rt.opts.Grace, Inbox: s.inboxDir, RunDir: rt.opts.RunDir, Now: rt.clock.Now,
	}
}

type attemptRun struct {
	*stepRun
	ctx   context.Context
	gen   *manifest.Generation
	p     front.Session
	pull  *puller // p's facts, one decided before the next (pull.go)
	log   *slog.Logger
	meter meter
	// state is the attempt's state (state.go): what runs, with its data
	// and deadline. Only enter changes it.
	state state
	// orders are the effects the decision under way orders (effect.go);
	// act carries them out once it is made.
	orders []effect
	// fresh: a new session, not a resumed one (the futile guard is for
	// fresh sessions only).
	fresh bool
	// model is the model the session runs, from its Init.
	model   string
	sawInit bool
	// authRetries counts the harness's retries of requests the API
	// refused as unauthenticated or forbidden (auth.go).
	authRetries int
	// reachAsked: Options.Reach was asked in this attempt (auth.go).
	reachAsked bool
	// refused: the API refused the credentials in a turn a person started
	// at the harness's screen, and no reply came since (auth.go).
	refused *outcome
	// warned: the near notice was shown in this generation (DESIGN.md «Near notice»).
	warned bool

	// replyTools: the main-thread reply read last calls a tool (a line
	// of it so far); onReply: the engine judges that reply as it is read.
	// replays: the harness says when it takes a prompt
	// (front.PromptTaken). A cut decided on a reply can then queue the
	// writing prompt (DESIGN.md «Queued cut»).
	replyTools, onReply, replays bool

	lastCost   float64 // meter.CostUSD already booked
	sawRound   bool    // a main-thread round was seen (futile guard)
	firstRound int     // the context of the session's first main-thread round
	compacted  bool    // the backstop fired in this attempt
	// autoBlocked counts the automatic compactions flower's hook blocked
	// in this attempt; handoffWanted: a handoff was asked for before the
	// session's first round (inbox.go).
	autoBlocked   int
	handoffWanted bool

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
	// harness is retired once this session's first round is back.
	predecessor *attemptRun

	// unattended: the row of limits met, the running turn's cost estimate, the step's deadline timer (unattended.go)
	lim      limitRow
	spend    spendMeter
	deadline *deadline
}

// futileAt is the futile guard (DESIGN.md «Futile guard»): a fresh session
// that starts at start (the run's measured floor, its first round) ends
// the attempt, for every successor would hand off at once, burning the
// remaining generations for nothing. The turn is stopped where it is;
// closing stdin alone would let it run on.
func (a *attemptRun) futileAt(start int, when string) (outcome, bool) {
	if !a.fresh || !a.rt.policy.Futile(start) {
		return outcome{}, false
	}
	a.log.Error("futile handoff: the session starts above the threshold", "floor", start, "at", a.rt.policy.At(), "when", when)
	a.order(effect{kind: doCancel})
	return outcome{kind: outcomeFutile, floor: start, why: when, sessionID: a.meter.SessionID, context: start}, true
}

// follow runs the attempt's loop: facts, the probe's answer, the inbox,
// and the state's timers, until an outcome.
func (a *attemptRun) follow(ctx context.Context) outcome {
	for {
		a.rt.flush()
		timer := first(append(a.state.deadlines(), a.deadline)...)
		select {
		case x := <-a.pull.C():
			f, ok := a.pull.got(x)
			if !ok {
				out, _ := a.act(a.exited(), true)
				return out
			}
			if out, end := a.act(a.handle(f)); end {
				return out
			}
		case ans := <-a.probing:
			if out, end := a.act(a.probed(ans)); end {
				return out
			}
		case r := <-a.requests:
			if out, end := a.act(a.heard(r)); end {
				return out
			}
		case <-timer.C():
			if out, end := a.act(a.fire(timer)); end {
				return out
			}
		case <-ctx.Done():
			// Let the current turn end at a message boundary, then go.
			a.endWait(false)          // unattended: a wait cut short is recorded as ended
			return a.interrupted(ctx) // stop.go
		}
	}
}

// fire runs what the passing of d, a timer of the state's or the step's
// deadline, means: the state's own deadline (its first) expires; its
// second is the queued cut's patience, the successor's start or a limit
// wait's countdown.
func (a *attemptRun) fire(d *deadline) (outcome, bool) {
	switch s := a.state.(type) {
	case *cutting:
		if d == s.wait {
			a.cutWaited()
			return outcome{}, false
		}
	case *writing:
		if d == s.successor {
			a.successorNow(s)
			return outcome{}, false
		}
	case *waiting:
		if d == s.tick { // unattended: the limit wait's countdown
			a.waitTicked()
			return outcome{}, false
		}
	}
	if d == a.deadline { // unattended: the step's deadline
		return a.deadlineReached()
	}
	return a.expired()
}

// expired handles the passing of the state's deadline: it ends the
// attempt, except a limit's wait, whose end sends the session on.
func (a *attemptRun) expired() (outcome, bool) {
	rt := a.rt
	switch s := a.state.(type) {
	case *cutting:
		// The session would not stop: it cannot write its handoff.
		return a.handoff(s.at, handoffwriter.Handoff{}, fmt.Sprintf("the harness did not end the turn within %v of the interrupt", rt.opts.CutTimeout)), true
	case *writing:
		return a.handoff(s.at, handoffwriter.Handoff{}, fmt.Sprintf("the writing turn did not finish within %v", rt.opts.WritingTimeout)), true
	case *waiting:
		return a.waitOver(s) // unattended: the limit lifted; the same session goes on
	}
	return a.fail(fmt.Sprintf("turn exceeded the turn timeout of %v", rt.opts.TurnTimeout)), true
}

// fold handles the facts the front has already, without waiting for more.
func (a *attemptRun) fold() (outcome, bool) {
	for {
		f, ok := a.pull.ready()
		if !ok {
			if a.pull.eof {
				return a.act(a.exited(), true)
			}
			return outcome{}, false
		}
		if out, end := a.act(a.handle(f)); end {
			return out, true
		}
	}
}

// exited ends the attempt of a harness that is gone. A person who ends the
// harness's own screen ends the step; any other exit while working is a
// failure, and one in the middle of a handoff degrades it.
func (a *attemptRun) exited() outcome {
	x := a.p.Exit()
	a.bookExit(x)
	if x.ByPerson && a.working() {
		a.log.Info("harness ended by the person")
		if a.rt.caps.PersonTypes && !answeredAny(a.st) {
			return a.unanswered()
		}
		return outcome{kind: outcomeDone, sessionID: a.meter.SessionID}
	}
	return a.died(x.Why)
}

// bookExit books what the harness's exit said it cost beyond the turns
// already booked: a front that learns the cost only at exit says it there
// (front.Exit.CostUSD).
func (a *attemptRun) bookExit(x front.Exit) {
	if x.CostUSD <= a.lastCost {
		return
	}
	a.meter.CostUSD = max(a.meter.CostUSD, x.CostUSD)
	a.st.AddUsageOf(a.gen.N, x.CostUSD-a.lastCost, 0)
	a.lastCost = x.CostUSD
	a.rt.save(a.st)
	// The step's cost is the chain's: whatever shows it (the status line
	// in a successor's screen) hears it now, not at the next turn. No
	// generation: the burned one's exit may come after its successor
	// started.
	a.rt.emit(Event{Kind: KindCost, Step: a.st.Name, CostUSD: a.st.CostUSD})
}

// exitWhy waits a grace period for the harness to exit after a turn it
// refused, and says how it ended.
func (a *attemptRun) exitWhy() string {
	dl := a.rt.after(a.rt.opts.Grace, "exit")
	defer dl.stop()
	for {
		a.rt.flush()
		select {
		case x := <-a.pull.C():
			if _, ok := a.pull.got(x); !ok {
				return a.p.Exit().Why
			}
		case <-dl.C():
			return "the harness is still running"
		}
	}
}

// died handles a harness that is gone. Mid-handoff, the handoff degrades
// (the session cannot write any more); otherwise the attempt failed.
func (a *attemptRun) died(why string) outcome {
	if _, ok := a.waitingForWork(); ok {
		// unattended: a harness that exits while a work turn's limit is waited out failed like any other; the retry resumes the session
		return a.fail(why)
	}
	if !a.working() {
		return a.handoff(a.cutOf(), handoffwriter.Handoff{}, why)
	}
	return a.fail(why)
}

func (a *attemptRun) fail(why string) outcome {
	return outcome{kind: outcomeFailed, why: why, sessionID: a.meter.SessionID}
}

// cutOf is what the handoff under way was decided at.
func (a *attemptRun) cutOf() cutAt {
	switch s := a.state.(type) {
	case *cutting:
		return s.at
	case *writing:
		return s.at
	case *waiting:
		if s.then.handoffUnderWay() {
			return s.then.at
		}
	}
	return cutAt{reason: manifest.ReasonThreshold, context: a.meter.Context}
}

func (a *attemptRun) policyState() policy.State {
	_, writing := a.state.(*writing)
	return policy.State{Policy: a.rt.policy, WritingTurn: writing, Context: a.meter.Context,
		SessionID: a.meter.SessionID, Warned: a.warned}
}

func (a *attemptRun) event(kind EventKind) Event {
	return Event{Kind: kind, Step: a.st.Name, Generation: a.gen.N, SessionID: a.meter.SessionID,
		Context: a.meter.Context, Window: a.rt.policy.Window, At: a.rt.policy.At(), WarnAt: a.rt.policy.WarnAt(),
		CostUSD: a.st.CostUSD}
}

// handle folds one fact into the attempt, with the handler of its type;
// end reports that the attempt is over with the returned outcome.
func (a *attemptRun) handle(f front.Fact) (outcome, bool) {
	prevSession := a.meter.SessionID
	if a.meter.observe(f) {
		// One small record per main-thread response, the points of a run's
		// chart (DESIGN.md «Run page»); the phase says a writing turn's.
		a.log.Info("response", "context", a.meter.Context, "window", a.rt.policy.Window,
			"at", a.rt.policy.At(), "warn_at", a.rt.policy.WarnAt())
	}
	if r, ok := f.(front.Round); ok {
		a.spend.observe(r, a.model) // unattended: each response's cost, subagents' included
	}
	if f, ok := f.(front.SessionSwitched); ok {
		a.onSessionSwitched(f)
		return outcome{}, false
	}
	a.sessionNamed(prevSession)
	switch f := f.(type) {
	case front.Output:
		a.onOutput(f)
	case front.Init:
		a.onInit(f)
	case front.Round:
		return a.onRound(f)
	case front.UserMessage:
		return a.onUserMessage(f)
	case front.PromptTaken:
		return a.onPromptTaken(f)
	case front.Compacted:
		return a.onCompacted(f)
	case front.Retrying:
		return a.onRetrying(f)
	case front.TurnEnded:
		return a.onTurnEnded(f)
	}
	return outcome{}, false
}

// sessionNamed records the session the harness named, once it is new.
func (a *attemptRun) sessionNamed(prev string) {
	if a.meter.SessionID != prev || (a.meter.SessionID != "" && a.gen.SessionID == "") {
		a.st.SetSessionID(a.meter.SessionID)
		a.logState.SetSession(a.meter.SessionID)
		a.rt.save(a.st)
		a.rt.emit(a.event(KindSession))
	}
}

// onOutput passes the harness's own line on, for programs following the
// run; the writing turn is not streamed (DESIGN.md «Writing turn»): its
// result is the done event.
func (a *attemptRun) onOutput(f front.Output) {
	if _, writing := a.state.(*writing); writing || f.Echo {
		return
	}
	e := a.event(KindRaw)
	e.Raw = f.Raw
	a.rt.emit(e)
}

func (a *attemptRun) onInit(f front.Init) {
	a.sawInit = true
	if f.Model != "" {
		a.model = f.Model
	}
	a.rt.checkVersion(f.Version)
}

func (a *attemptRun) onRound(f front.Round) (outcome, bool) {
	if !f.MainThread {
		return outcome{}, false
	}
	if _, ok := a.state.(*idle); ok {
		a.startWork(causeTurnStarted) // someone started a turn
	}
	// The first prompt's request is out and back: the predecessor's
	// harness may go (warm.go); once the API answered it (no reply of
	// the harness's own, an error's), the one context-usage request of
	// the run may go too (probe.go), which a front may answer only after
	// a real round.
	a.retirePredecessor()
	if f.Synthetic {
		return outcome{}, false
	}
	a.startProbe()
	a.rt.through, a.refused = true, nil
	if w, ok := a.state.(*writing); ok {
		a.writingReply(w, f)
		return outcome{}, false
	}
	if !a.gen.Answered {
		// The first prompt is in the session's conversation now.
		a.gen.Answered = true
		a.rt.save(a.st)
	}
	if !f.Repeat {
		a.replyTools = false
	}
	a.replyTools = a.replyTools || len(f.ToolUses) > 0
	if c, ok := a.state.(*cutting); ok && c.wait != nil && !c.queued && a.replyTools {
		// The reply the cut was decided on calls a tool after all.
		a.queueWriting(c)
	}
	if f.Text != "" {
		e := a.event(KindText)
		e.Text = f.Text
		a.rt.emit(e)
	}
	for _, tu := range f.ToolUses {
		e := a.event(KindTool)
		e.Tool, e.Input = tu.Name, tu.Input
		a.rt.emit(e)
	}
	a.onReply = true
	defer func() { a.onReply = false }()
	return a.check()
}

// writingReply collects the writing turn's document. The writing turn is
// for text only: a tool it calls is stopped, and the handoff asked for
// again once (writingEnded). It is not streamed (DESIGN.md «Writing turn»).
func (a *attemptRun) writingReply(w *writing, f front.Round) {
	if f.Text != "" {
		w.doc.WriteString(f.Text)
		w.doc.WriteString("\n")
	}
	if len(f.ToolUses) == 0 {
		return
	}
	w.tools += len(f.ToolUses)
	if !w.stopped {
		w.stopped = true
		a.log.Warn("the writing turn called a tool; interrupting", "tool", f.ToolUses[0].Name)
		a.order(effect{kind: doStopTool})
	}
}

func (a *attemptRun) onUserMessage(f front.UserMessage) (outcome, bool) {
	st := a.st
	if _, ok := a.state.(*idle); ok && f.MainThread && isPrompt(f.Text) {
		a.startWork(causeTurnStarted) // someone started a turn with this prompt
	}
	if st.Task == "" && a.working() && f.MainThread && isPrompt(f.Text) {
		// A person typed the task on the harness's own screen: it is
		// what a degraded handoff carries.
		st.Task = f.Text
		a.order(effect{kind: doFreezeTask})
	}
	return outcome{}, false
}

func (a *attemptRun) onCompacted(f front.Compacted) (outcome, bool) {
	sign := f.Sign
	if sign == "" {
		sign = "as the harness said"
	}
	if !f.Boundary {
		return a.compaction(sign)
	}
	a.st.AddCompaction(manifest.Compaction{At: a.rt.clock.Now(), Trigger: f.Trigger, PreTokens: f.PreTokens, PostTokens: f.PostTokens})
	a.rt.save(a.st)
	a.log.Warn("the harness compacted its context", "trigger", f.Trigger, "pre_tokens", f.PreTokens, "post_tokens", f.PostTokens)
	return a.compaction(sign)
}

// onSessionSwitched retires the session the harness left and starts the
// meter over for the one it moved to.
func (a *attemptRun) onSessionSwitched(f front.SessionSwitched) {
	if f.From == "" || f.From == f.To {
		return
	}
	a.log.Info("the harness switched sessions", "from", f.From, "to", f.To)
	a.st.Retire(f.From)
	a.meter = meter{SessionID: f.To, CostUSD: a.meter.CostUSD, Turns: a.meter.Turns}
	a.warned = false
	a.st.SetSessionID(f.To)
	a.st.SetContext(0)
	a.logState.SetSession(f.To)
	a.rt.save(a.st)
	a.rt.emit(a.event(KindSession))
}

// backstopArmed: auto-compact must not run (handoff on, and the agent did
// not ask for compact mode auto).
func (a *attemptRun) backstopArmed() bool {
	return a.rt.policy.Enabled && a.rt.opts.Compact != policy.CompactAuto
}

// compaction is the backstop: the harness compacted although handoff had
// switched auto-compact off. The compacted context is not trusted: record
// it loudly and hand off at the next message boundary.
func (a *attemptRun) compaction(sign string) (outcome, bool) {
	if a.compacted || !a.backstopArmed() {
		return outcome{}, false
	}
	a.compacted = true
	msg := "the harness compacted its context although handoff switched that off (" + sign + "); handing off at the next boundary instead of trusting the compacted context"
	a.st.AddError(msg)
	a.rt.save(a.st)
	a.log.Error(msg)
	a.rt.emit(Event{Kind: KindNotice, Step: a.st.Name, Generation: a.gen.N, Text: msg, IsError: true})
	if a.working() {
		return a.handoffDue(cutAt{reason: manifest.ReasonCompaction, context: a.meter.Context})
	}
	return outcome{}, false
}

// check applies, after a main-thread round of a work turn, the futile
// guard to the session's first round and then the thresholds (DESIGN.md
// «Threshold path», «Near notice»). A budget or a deadline of the whole
// step, checked at every round, cuts here too, with a reason of its own.
func (a *attemptRun) check() (outcome, bool) {
	if _, ok := a.state.(*working); !ok {
		return outcome{}, false
	}
	if !a.sawRound {
		a.sawRound = true
		a.firstRound = a.meter.Context
	}
	if out, end := a.judge(); end || !a.working() {
		return out, end
	}
	return a.checkBounds() // unattended: the step's budget and deadline, at every round
}

// judge applies the futile guard and the thresholds, after a round or
// again after the window moved (the harness answered the context-usage
// request: the rounds seen before were judged against the window in force
// then).
func (a *attemptRun) judge() (outcome, bool) {
	if !a.working() || !a.sawRound {
		return outcome{}, false
	}
	if out, end := a.futileAt(a.firstRound, "in its first round"); end {
		return out, true
	}
	s := a.policyState()
	if policy.NearDue(s) {
		a.warned = true
		e := a.event(KindHandoff)
		e.Phase = PhaseNear
		a.rt.emit(e)
	}
	switch {
	case policy.HandoffDue(s):
		return a.handoffDue(cutAt{reason: manifest.ReasonThreshold, context: a.meter.Context})
	case a.handoffWanted && a.meter.SessionID != "":
		a.handoffWanted = false
		return a.handoffDue(cutAt{reason: manifest.ReasonRequested, context: a.meter.Context})
	}
	return outcome{}, false
}

// handoffDue starts the handoff decided at at: a running work turn is cut;
// a session with no turn running (idle: a person's or an application's,
// between turns) has nothing to interrupt, and its writing turn starts at
// once.
func (a *attemptRun) handoffDue(at cutAt) (outcome, bool) {
	if w, ok := a.waitingForWork(); ok {
		// unattended: no turn runs while a limit is waited out; the writing turn starts once it lifts
		w.then = afterLimit{resumes: resumeWriting, at: at}
		return outcome{}, false
	}
	if _, idle := a.state.(*idle); idle {
		a.log.Info("handoff due with no turn running: writing at once", "reason", at.reason, "context", at.context)
		return a.startWriting(at, causeHandoffDue)
	}
	a.cut(at)
	return outcome{}, false
}

// onTurnEnded books the turn's cost and window, then ends the turn of the
// state it finds.
func (a *attemptRun) onTurnEnded(f front.TurnEnded) (outcome, bool) {
	a.startProbe()
	a.retirePredecessor()
	st := a.st
	st.AddUsageOf(a.gen.N, a.meter.CostUSD-a.lastCost, f.Turns)
	a.lastCost = a.meter.CostUSD
	st.SetContext(a.meter.Context)
	if w := a.resultWindow(f); w > 0 {
		a.crossCheck(w)
	}
	a.turnCost(f) // unattended: the harness's cost replaces the estimate
	switch s := a.state.(type) {
	case *cutting:
		return a.cutEnded(s, f)
	case *writing:
		return a.writingEnded(s, f)
	}
	return a.workEnded(f)
}

// workEnded ends a work turn (or a turn someone else started while idle).
func (a *attemptRun) workEnded(f front.TurnEnded) (outcome, bool) {
	a.rt.save(a.st)
	e := a.event(KindTurn)
	e.Text, e.IsError = f.Text, f.How != front.EndedOnOwn
	a.rt.emit(e)
	switch {
	case f.How == front.EndedOverflow:
		// DESIGN.md «Overflow path»: the session cannot run another turn; degrade and go on.
		at := cutAt{reason: manifest.ReasonOverflow, context: a.meter.Context}
		return a.handoff(at, handoffwriter.Handoff{}, "overflow: "+firstNonEmpty(f.Text, f.Detail)), true
	case a.rt.caps.OutsideTurns:
		// The person reads the turn's end (an error included) on the
		// harness's screen and types the next one.
		if f.How == front.EndedLimited && f.Limit != nil {
			a.limitShown(*f.Limit) // unattended: a limit's reset, for whoever starts the turns
		}
		if f.APIErrorStatus == http.StatusUnauthorized || f.APIErrorStatus == http.StatusForbidden || f.NoCredentials {
			a.refusedShown(f)
		}
		if _, ok := a.state.(*idle); !ok {
			// A turn that showed no prompt nor round (a command of the
			// harness's own screen) leaves an idle session as it was.
			a.enter(&idle{}, causeIdle)
		}
		return outcome{}, false
	case f.How == front.EndedOnOwn:
		return outcome{kind: outcomeDone, sessionID: a.meter.SessionID}, true
	case f.How == front.EndedLimited:
		// unattended: a limit is waited out in state waiting, then the same session goes on (no attempt)
		return a.limited(f, afterLimit{resumes: resumeWork})
	}
	if f.APIErrorStatus == http.StatusUnauthorized || f.APIErrorStatus == http.StatusForbidden || f.NoCredentials {
		return a.authRefused(f.APIErrorStatus, firstNonEmpty(f.Text, f.Detail)), true
	}
	why := "the turn ended in an error: " + firstNonEmpty(f.Text, f.Detail)
	if !a.sawInit {
		// A result before any init line: the harness refused the
		// session (a resume of one it does not know, say). Its
		// reason is on stderr, and it exits now (DESIGN.md «Result lines»).
		why += "; " + a.exitWhy()
	}
	return a.fail(why), true
}

// writingEnded ends a writing turn: the handoff, whole or degraded, or the
// writing turn asked again once after it called a tool.
//
// A handoff is saved by its freeze (handoff.Books.Freeze), with all the
// books: no save of its own stands between the writing turn's result and
// the successor's prompt.
func (a *attemptRun) writingEnded(w *writing, f front.TurnEnded) (outcome, bool) {
	if f.How == front.EndedOverflow {
		return a.handoff(w.at, handoffwriter.Handoff{}, "the writing turn overflowed: "+firstNonEmpty(f.Text, f.Detail)), true
	}
	if f.How == front.EndedLimited {
		// unattended: the writing turn met a limit; it is asked again once the limit lifts, so the handoff is not degraded for it.
		// The writing turn is flower's on every front, a person's screen too.
		a.rt.save(a.st)
		return a.limited(f, afterLimit{resumes: resumeWritingAgain, at: w.at, w: w})
	}
	h := handoffwriter.Parse(w.doc.String())
	if h.Complete() {
		return a.handoff(w.at, h, ""), true
	}
	if f.How == front.EndedInterrupted && w.lateCut && !w.stopped && !w.again {
		// The queued cut's interrupt crossed the harness's taking of the
		// writing prompt, and ended the writing turn: ask again.
		a.log.Warn("the cut's interrupt ended the writing turn; asking again")
		return a.askAgain(w, causeLateCut, "", false)
	}
	if w.stopped && !w.again {
		// It called a tool instead of writing: ask once more.
		a.log.Warn("asking again for the handoff document only")
		return a.askAgain(w, causeAskAgain, retryPrompt, true)
	}
	var why string
	switch {
	case w.again && w.tools > 1:
		why = fmt.Sprintf("the writing turn called tools instead of writing, also when asked again for the document only (%d tool calls)", w.tools)
	case f.How != front.EndedOnOwn:
		why = "the writing turn failed: " + firstNonEmpty(f.Text, f.Detail)
	default:
		why = "the handoff is missing " + strings.Join(h.Missing(), ", ")
	}
	return a.handoff(w.at, h, why), true
}

// askAgain asks for the handoff document once more, prefix before the
// writing prompt, in a writing state that carries on w's deadline,
// successor and books; again: the second ask after a tool call.
func (a *attemptRun) askAgain(w *writing, c cause, prefix string, again bool) (outcome, bool) {
	a.enter(&writing{at: w.at, dl: w.dl, successor: w.successor, started: w.started, cost0: w.cost0,
		tools: w.tools, again: again, taken: w.taken}, c)
	a.send(front.Turn{Kind: front.TurnWriting, Prompt: prefix + a.writingPrompt(w.at)}, "send the handoff prompt again")
	a.rt.save(a.st)
	return outcome{}, false
}

// handoff ends the attempt with a handoff decided at at; a non-empty why
// degrades it (DESIGN.md «Degraded handoff»). The process is stopped by
// attempt's deferred finish.
func (a *attemptRun) handoff(at cutAt, h handoffwriter.Handoff, why string) outcome {
	if at.reason == "" {
		at.reason = manifest.ReasonThreshold
	}
	if at.context == 0 {
		at.context = a.meter.Context
	}
	w, _ := a.state.(*writing)
	// An overflow, or a harness that died, decides the handoff only now:
	// the successor starts at once, beside the freeze (handOver).
	a.startSuccessor()
	out := outcome{kind: outcomeHandoff, handoff: h, why: why, sessionID: a.meter.SessionID,
		reason: at.reason, context: at.context}
	switch {
	case w == nil:
		out.writeOutcome = manifest.OutcomeNoWritingTurn
	case why != "":
		out.writeOutcome = manifest.OutcomeDegraded
	case w.again:
		out.writeOutcome = manifest.OutcomeWrittenOnRetry
	default:
		out.writeOutcome = manifest.OutcomeWritten
	}
	if w != nil {
		out.writingSeconds = a.rt.clock.Now().Sub(w.started).Seconds()
		out.writingCost = a.meter.CostUSD - w.cost0
	}
	return out
}

// handOver gives the handoff out the successor's harness, started early
// (DESIGN.md «Warm successor»), once the attempt's last effects are
// carried out.
func (a *attemptRun) handOver(out *outcome) {
	switch {
	case a.early != nil:
		// The successor takes it from here; this harness is stopped after
		// the successor has its prompt.
		out.early, out.predecessor, a.early, a.detached = a.early, a, nil, true
	case a.rt.caps.Overlap:
		// No successor is up, but one may start beside this harness: it
		// is stopped after the successor started, not before.
		out.predecessor, a.detached = a, true
	}
}

// writingPrompt is the handoff-writing prompt of a cut at at.
func (a *attemptRun) writingPrompt(at cutAt) string {
	return handoff.WritingPrompt(at.context, a.rt.policy.Window, a.st.Task, a.rt.opts.TaskCarry)
}

// startWriting begins the writing turn once the cut turn has ended (or at
// once, with no turn to cut, or once a limit lifted), for cause c.
func (a *attemptRun) startWriting(at cutAt, c cause) (outcome, bool) {
	w := a.enterWriting(at, c, false)
	a.send(front.Turn{Kind: front.TurnWriting, Prompt: a.writingPrompt(at)}, "send the handoff prompt")
	if !a.replays {
		// A harness that echoes its prompts says when it takes this one
		// (onPromptTaken); any other has it once it is sent.
		a.writingTaken(w, false)
	}
	return outcome{}, false
}

// enterWriting enters the writing turn for cause c; taken: the harness has
// taken its prompt already.
func (a *attemptRun) enterWriting(at cutAt, c cause, taken bool) *writing {
	rt := a.rt
	w := &writing{at: at, dl: rt.after(rt.opts.WritingTimeout, "writing"), started: rt.clock.Now(), cost0: a.meter.CostUSD}
	a.enter(w, c)
	e := a.event(KindHandoff)
	e.Phase = PhaseWriting
	e.Context = at.context
	rt.emit(e)
	if taken {
		a.writingTaken(w, true)
	}
	return w
}

// writingTaken: the writing prompt is the harness's. The cut is over and
// the handoff certain: the successor's harness starts beside the writing
// turn, once the harness is building the writing request (DESIGN.md «Warm
// successor»): at once when the harness said it took the prompt (heard),
// successorDelay after it was sent otherwise.
func (a *attemptRun) writingTaken(w *writing, heard bool) {
	w.taken = true
	if heard {
		a.successorNow(w)
		return
	}
	w.successor = a.rt.after(successorDelay, "successor")
}

// successorNow starts the successor of the writing state w now, and keeps
// the handoff file it replaces, off the way from the handoff to the
// successor's prompt.
func (a *attemptRun) successorNow(w *writing) {
	w.successor.stop()
	w.successor = nil
	a.startSuccessor()
	a.order(effect{kind: doKeep})
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

// isPrompt tells a prompt a person typed from the user records the harness
// writes of its own (tool results, reminders, notifications, commands,
// interrupt notes); the engine's own writing prompt comes only in the
// writing state, where no task is taken.
func isPrompt(text string) bool {
	t := strings.TrimSpace(text)
	return t != "" && !strings.HasPrefix(t, "<") && !strings.HasPrefix(t, "[Request interrupted")
}
