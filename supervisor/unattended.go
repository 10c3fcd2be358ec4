package supervisor

// An unattended run (DESIGN.md «Unattended: limits, budget, deadline»): a
// turn that ends on a rate or usage limit is waited out and the same
// session goes on; the step's budget and deadline cut the session at the
// message boundary, have it write its handoff, and stop the step with a
// status of its own. The engine's hooks into this file are each marked
// "// unattended:" where they sit.

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/flowerhq/flower/event"
	"github.com/flowerhq/flower/front"
	"github.com/flowerhq/flower/handoff"
	"github.com/flowerhq/flower/manifest"
	"github.com/flowerhq/flower/transcript"
)

// Defaults and bounds of the limit wait.
const (
	// DefaultLimitBackoff is the first wait for a limit whose reset the
	// harness did not say (a rate limit): it doubles with each limit in a
	// row, up to MaxLimitBackoff.
	DefaultLimitBackoff = time.Minute
	MaxLimitBackoff     = 30 * time.Minute
	// resetSlack is waited past a reset the harness said: it is in whole
	// seconds, and the API's clock is not flower's.
	resetSlack = time.Second
	// waitTick is how often a wait reports itself, for the gauge's countdown.
	waitTick = time.Second
)

// The events of an unattended run.
const (
	KindLimitWait = event.KindLimitWait
	KindBound     = event.KindBound
)

// ErrStopped is wrapped by the *StopError of a step a bound stopped.
var ErrStopped = errors.New("step stopped")

// StopError ends a step that a bound of an unattended run stopped: its
// budget, its deadline, or a limit lasting past --max-wait. Status is the
// manifest's (manifest.StatusBudget, StatusDeadline, StatusLimited); the
// step goes on with flower continue.
type StopError struct {
	Step   string
	Status string
	Why    string
}

func (e *StopError) Error() string {
	return fmt.Sprintf("step %s stopped (%s): %s; flower continue goes on", e.Step, e.Status, e.Why)
}

func (e *StopError) Unwrap() error { return ErrStopped }

// limitContinue is what a session is told once the limit that ended its
// turn has lifted: it is the same session, its context intact.
const limitContinue = "The API limit (or the outage) that stopped your last turn has lifted. This is the same session: " +
	"continue the task from where you left off."

// waitUntil says until when to wait out limit l, the n-th limit in a row
// (n ≥ 1): its reset when the harness said one that is ahead, else the
// wait the harness last announced for it (a retry-after) or the backoff,
// whichever is longer.
func waitUntil(l transcript.Limit, n int, base time.Duration, now time.Time) time.Time {
	if !l.ResetAt.IsZero() && l.ResetAt.After(now) {
		return l.ResetAt.Add(resetSlack)
	}
	return now.Add(max(backoff(n, base), l.RetryAfter))
}

// backoff is base doubled n-1 times, at most MaxLimitBackoff.
func backoff(n int, base time.Duration) time.Duration {
	if base <= 0 {
		base = DefaultLimitBackoff
	}
	d := base
	for i := 1; i < n && d < MaxLimitBackoff; i++ {
		d *= 2
	}
	return min(d, MaxLimitBackoff)
}

// limitRow is the row of limits the attempt met in a row: the backoff's n,
// and the time spent waiting in that row (what --max-wait bounds). A turn
// that ends otherwise ends the row.
type limitRow struct {
	n      int
	waited time.Duration
}

// waiting: a turn ended on a rate or usage limit (front.EndedLimited) and
// the session, its context intact, waits until the limit lifts; then the
// same session goes on (waitOver). It is the state of no turn: the turn
// timeout does not run (DESIGN.md «Engine states»).
type waiting struct {
	// dl is the wait's end, on the engine's clock; tick the countdown's
	// next report.
	dl, tick *deadline
	rec      int // index in gen.LimitWaits
	start    time.Time
	until    time.Time
	limit    transcript.Limit
	// then is what goes on once the limit lifts.
	then afterLimit
}

// afterLimit is what a wait resumes once its limit lifts.
type afterLimit struct {
	resumes resumes
	// at is the cut the handoff under way was decided at (resumeWriting,
	// resumeWritingAgain); w is the writing turn the limit ended, whose
	// books go on (resumeWritingAgain).
	at cutAt
	w  *writing
}

// resumes names what a wait resumes.
type resumes int

const (
	// resumeWork: the work turn the limit ended, told to continue.
	resumeWork resumes = iota
	// resumeWriting: the writing turn of a cut whose turn the limit
	// ended, or of a handoff asked for during the wait.
	resumeWriting
	// resumeWritingAgain: the writing turn the limit ended, asked for its
	// document again.
	resumeWritingAgain
)

// handoffUnderWay: the wait resumes a handoff, not the work.
func (t afterLimit) handoffUnderWay() bool { return t.resumes != resumeWork }

// waitingForWork is the running wait when it resumes the work turn: no
// handoff is under way.
func (a *attemptRun) waitingForWork() (*waiting, bool) {
	w, ok := a.state.(*waiting)
	return w, ok && !w.then.handoffUnderWay()
}

func (*waiting) name() string             { return "waiting" }
func (*waiting) phase() string            { return "waiting" }
func (s *waiting) deadlines() []*deadline { return []*deadline{s.dl, s.tick} }

// stepBounds are the step's budget and deadline in this call.
type stepBounds struct {
	budget   float64   // 0: none
	deadline time.Time // zero: none
	// elsewhere is what the step cost beyond the manifest's cost_usd
	// (Options.SpentUSD).
	elsewhere float64
}

// setBounds takes the bounds of this call: the budget given, else the
// one the step recorded (a continued step keeps it unless raised); the
// deadline is this call's start plus --max-duration.
func (s *stepRun) setBounds(now time.Time) {
	rt, st := s.rt, s.st
	if rt.opts.MaxBudgetUSD > 0 {
		st.BudgetUSD = rt.opts.MaxBudgetUSD
	}
	s.bounds = stepBounds{budget: st.BudgetUSD, elsewhere: max(0, rt.opts.SpentUSD-st.CostUSD)}
	st.Deadline = nil
	d := rt.opts.Deadline
	if d.IsZero() && rt.opts.MaxDuration > 0 {
		d = now.Add(rt.opts.MaxDuration)
	}
	if !d.IsZero() {
		s.bounds.deadline, st.Deadline = d, &d
	}
}

// spent is the step's cost as the budget counts it: the booked cost, what
// was spent elsewhere, and running, the running turn's estimate.
func (s *stepRun) spent(running float64) float64 {
	return s.st.CostUSD + s.bounds.elsewhere + running
}

// reached names the bound the step has reached, with what it spent: the
// budget (its booked cost plus the running turn's estimate) or the deadline.
func (b stepBounds) reached(spent float64, now time.Time) (reason string) {
	switch {
	case b.budget > 0 && spent >= b.budget:
		return manifest.ReasonBudget
	case !b.deadline.IsZero() && !now.Before(b.deadline):
		return manifest.ReasonDeadline
	}
	return ""
}

// spendMeter estimates what the running turn has cost so far, response by
// response, from each response's usage and the model's price: the harness
// says the cost only in the turn's result. The result's figure replaces the
// estimate (DESIGN.md «Unattended: limits, budget, deadline»).
type spendMeter struct {
	turn float64
	seen map[string]bool // message ids of this turn: one response, several lines
	// unbooked is the estimate of the turns whose result carried no new
	// cost (a harness on its own screen says its cost only as it exits):
	// it counts until a result does; total is the process's last figure.
	unbooked, total float64
}

// observe prices one response of the running turn, main thread or
// subagent; each response once, whatever lines it takes.
func (m *spendMeter) observe(f front.Round, model string) {
	if f.Synthetic || f.Repeat {
		return
	}
	if f.MessageID != "" {
		if m.seen == nil {
			m.seen = map[string]bool{}
		}
		if m.seen[f.MessageID] {
			return
		}
		m.seen[f.MessageID] = true
	}
	m.turn += priceOf(firstNonEmpty(f.Model, model)).cost(f.Usage)
}

func (m *spendMeter) reset() { m.turn, m.seen = 0, nil }

// ended folds a turn's result: its cumulative cost (total_cost_usd)
// replaces the estimates when it grew; otherwise the turn's estimate goes
// on counting.
func (m *spendMeter) ended(total float64) {
	if total > m.total {
		m.total, m.unbooked = total, 0
	} else {
		m.unbooked += m.turn
	}
	m.reset()
}

// running is what the budget adds to the booked cost: the estimates not
// yet replaced by a figure of the harness's.
func (m *spendMeter) running() float64 { return m.unbooked + m.turn }

// price is a model's price in USD per million tokens.
type price struct{ input, output float64 }

// cost prices one response's usage: cache writes at 1.25 times the input
// price, cache reads at a tenth of it.
func (p price) cost(u transcript.Usage) float64 {
	return (float64(u.InputTokens)*p.input + float64(u.CacheCreationInputTokens)*p.input*1.25 +
		float64(u.CacheReadInputTokens)*p.input*0.1 + float64(u.OutputTokens)*p.output) / 1e6
}

// priceOf is the public list price of a model family; a model it does not
// know is priced as Sonnet. Only the estimate between results uses it.
func priceOf(model string) price {
	m := strings.ToLower(model)
	switch {
	case strings.Contains(m, "opus-4-5"), strings.Contains(m, "opus-4.5"), strings.Contains(m, "opus-4-6"), strings.Contains(m, "opus-5"):
		return price{5, 25}
	case strings.Contains(m, "opus"):
		return price{15, 75}
	case strings.Contains(m, "haiku-3-5"), strings.Contains(m, "3-5-haiku"):
		return price{0.8, 4}
	case strings.Contains(m, "haiku-3"), strings.Contains(m, "3-haiku"):
		return price{0.25, 1.25}
	case strings.Contains(m, "haiku"):
		return price{1, 5}
	}
	return price{3, 15}
}

// limitShown tells whoever starts the turns (a person at the harness's
// own screen, an application through the relay) of the limit that ended
// a turn: the engine does not wait it out then, but the reset is worth
// showing (the interactive front puts it in the terminal's title).
func (a *attemptRun) limitShown(l transcript.Limit) {
	e := a.event(KindLimitWait)
	e.Phase, e.Limit = event.PhaseShown, string(l.Kind)
	e.Text = limitMet(l.Kind)
	if !l.ResetAt.IsZero() {
		r := l.ResetAt
		e.ResetAt = &r
		e.Text += ": it resets at " + r.Local().Format("15:04")
	}
	a.log.Warn("limit shown to whoever starts the turns", "limit", l.Kind, "reset_at", e.ResetAt, "message", l.Message)
	a.rt.emit(e)
}

// checkBounds cuts a working turn once the step reached its budget or
// deadline, through handoffDue with the bound's reason, so the writing
// turn follows; the writing turn itself is exempt (DESIGN.md «Writing
// turn»). Called at every main-thread round (check) and by the deadline's
// timer.
func (a *attemptRun) checkBounds() (outcome, bool) {
	if !a.working() {
		return outcome{}, false
	}
	spent := a.spent(a.spend.running())
	reason := a.bounds.reached(spent, a.rt.clock.Now())
	if reason == "" {
		return outcome{}, false
	}
	// Nothing starts a successor: the step stops after the handoff.
	a.late = true
	e := a.event(KindBound)
	e.Reason, e.BudgetUSD, e.CostUSD = reason, a.bounds.budget, spent
	if reason == manifest.ReasonBudget {
		e.Text = fmt.Sprintf("the step's budget of $%.2f is reached ($%.2f spent): the session hands off at the message boundary, then the step stops", a.bounds.budget, spent)
	} else {
		e.Text = fmt.Sprintf("the step's deadline %s is reached: the session hands off at the message boundary, then the step stops", a.bounds.deadline.Format(time.TimeOnly))
	}
	a.log.Warn(e.Text, "reason", reason, "spent_usd", spent, "budget_usd", a.bounds.budget)
	// The cut goes out first: the event's sinks (the status lines, the
	// notify hook, a screen's title) are not on its path.
	out, end := a.handoffDue(cutAt{reason: reason, context: a.meter.Context})
	a.rt.emit(e)
	return out, end
}

// armDeadline starts the step's deadline timer for this attempt, on the
// engine's clock.
func (a *attemptRun) armDeadline() {
	if a.bounds.deadline.IsZero() {
		return
	}
	a.deadline = a.rt.after(max(a.bounds.deadline.Sub(a.rt.clock.Now()), time.Millisecond), "deadline")
}

// deadlineReached is the deadline's timer: a working turn is cut then,
// not only at its next round; a session with no turn running writes at
// once. Past the cut, it does nothing: the handoff under way is exempt.
func (a *attemptRun) deadlineReached() (outcome, bool) {
	a.deadline = nil
	return a.checkBounds()
}

// turnCost folds a turn's end into the estimate: the harness's cost
// replaces it (DESIGN.md «Unattended: limits, budget, deadline»). A turn
// that did not end on a limit ends the row of limits.
func (a *attemptRun) turnCost(f front.TurnEnded) {
	a.log.Debug("turn cost", "estimate_usd", a.spend.turn, "harness_total_usd", f.CostUSD, "booked_usd", a.st.CostUSD)
	a.spend.ended(f.CostUSD)
	if f.How != front.EndedLimited {
		a.lim = limitRow{}
	}
}

// limited waits out the limit that ended a turn (no attempt is counted):
// the session waits in state waiting until the limit lifts, then goes on
// as then says. A wait that would last past
// --max-wait or the deadline is not started: the step stops (limitStop).
func (a *attemptRun) limited(f front.TurnEnded, then afterLimit) (outcome, bool) {
	rt := a.rt
	var l transcript.Limit
	if f.Limit != nil {
		l = *f.Limit
	}
	now := rt.clock.Now()
	a.lim.n++
	until := waitUntil(l, a.lim.n, rt.opts.LimitBackoff, now)
	rec := manifest.LimitWait{Kind: string(l.Kind), Start: now, Until: until, Writing: then.resumes == resumeWritingAgain}
	if !l.ResetAt.IsZero() {
		r := l.ResetAt
		rec.ResetAt = &r
	}
	var why string
	switch {
	case rt.opts.MaxWait > 0 && a.lim.waited+until.Sub(now) > rt.opts.MaxWait:
		why = fmt.Sprintf("the %s did not lift within --max-wait %s (it lasts until %s)", limitName(l.Kind), rt.opts.MaxWait, until.Format(time.DateTime))
	case !a.bounds.deadline.IsZero() && until.After(a.bounds.deadline):
		why = fmt.Sprintf("the %s does not lift before the deadline %s (it lasts until %s)", limitName(l.Kind), a.bounds.deadline.Format(time.DateTime), until.Format(time.DateTime))
	}
	if why != "" {
		rec.Stopped, rec.End = true, &now
		a.gen.LimitWaits = append(a.gen.LimitWaits, rec)
		a.log.Warn("limit: stopping the step", "why", why, "limit", l.Kind, "message", l.Message)
		return outcome{kind: outcomeLimited, why: why, sessionID: a.meter.SessionID}, true
	}
	a.gen.LimitWaits = append(a.gen.LimitWaits, rec)
	s := &waiting{dl: rt.after(max(until.Sub(now), time.Millisecond), "limit"), tick: rt.after(waitTick, "tick"),
		rec: len(a.gen.LimitWaits) - 1, start: now, until: until, limit: l, then: then}
	a.enter(s, causeLimited)
	rt.save(a.st)
	a.log.Warn("limit: waiting it out, then the same session goes on", "limit", l.Kind, "until", until,
		"reset_at", rec.ResetAt, "retry_after", l.RetryAfter, "in_a_row", a.lim.n, "message", l.Message)
	rt.emit(a.waitEvent(s, event.PhaseBegun))
	return outcome{}, false
}

// waitEvent reports wait s.
func (a *attemptRun) waitEvent(s *waiting, phase string) Event {
	e := a.event(KindLimitWait)
	e.Phase, e.Limit = phase, string(s.limit.Kind)
	until := s.until
	e.Until = &until
	if !s.limit.ResetAt.IsZero() {
		r := s.limit.ResetAt
		e.ResetAt = &r
	}
	switch phase {
	case event.PhaseBegun:
		e.Text = fmt.Sprintf("%s: waiting until %s (%s), then the same session goes on", limitMet(s.limit.Kind),
			until.Format(time.TimeOnly), until.Sub(a.rt.clock.Now()).Round(time.Second))
	case event.PhaseEnded:
		e.Text = fmt.Sprintf("the wait for the %s is over: the same session goes on", limitName(s.limit.Kind))
	}
	return e
}

// waitTicked reports the running wait again, for the countdown, and arms
// the next report.
func (a *attemptRun) waitTicked() {
	s := a.state.(*waiting)
	s.tick = a.rt.after(waitTick, "tick")
	a.rt.emit(a.waitEvent(s, event.PhaseWaiting))
}

// endWait closes the running wait's record; lifted: it ran its time,
// otherwise the attempt ended during it.
func (a *attemptRun) endWait(lifted bool) {
	s, ok := a.state.(*waiting)
	if !ok {
		return
	}
	now := a.rt.clock.Now()
	if s.rec < len(a.gen.LimitWaits) {
		a.gen.LimitWaits[s.rec].End = &now
	}
	a.lim.waited += now.Sub(s.start)
	e := a.waitEvent(s, event.PhaseEnded)
	if !lifted {
		e.Text = fmt.Sprintf("the wait for the %s was cut short", limitName(s.limit.Kind))
	}
	a.rt.emit(e)
	a.rt.save(a.st)
}

// waitOver ends wait s and sends the same session on: a working turn is
// told to continue, a cut turn's writing turn starts, a writing turn is
// asked for its document again (DESIGN.md «Writing turn»): no handoff is
// degraded for a limit.
func (a *attemptRun) waitOver(s *waiting) (outcome, bool) {
	rt := a.rt
	a.endWait(true)
	switch s.then.resumes {
	case resumeWriting:
		return a.startWriting(s.then.at, causeLifted)
	case resumeWritingAgain:
		old := s.then.w
		w := &writing{at: old.at, dl: rt.after(rt.opts.WritingTimeout, "writing"), started: old.started, cost0: old.cost0,
			tools: old.tools, again: old.again}
		a.enter(w, causeLifted)
		a.log.Info("limit lifted: asking for the handoff again")
		a.send(front.Turn{Kind: front.TurnWriting, Prompt: a.writingPrompt(w.at)}, "send the handoff prompt after a limit")
		if a.early == nil {
			w.successor = rt.after(successorDelay, "successor")
		}
		return outcome{}, false
	}
	a.startWork(causeLifted)
	a.log.Info("limit lifted: the same session goes on")
	a.send(front.Turn{Kind: front.TurnWork, Prompt: limitContinue}, "send the continuation after a limit")
	return outcome{}, false
}

// boundStop stops the step after a handoff when its budget or deadline is
// reached (the handoff was cut for it, or was due anyway and the writing
// turn passed the budget). nil lets the successor start.
func (s *stepRun) boundStop(reason string) error {
	rt := s.rt
	if reason != manifest.ReasonBudget && reason != manifest.ReasonDeadline {
		reason = s.bounds.reached(s.spent(0), rt.clock.Now())
	}
	var status, why string
	switch reason {
	case manifest.ReasonBudget:
		status, why = manifest.StatusBudget, fmt.Sprintf("the budget of $%.2f is reached ($%.4f spent)", s.bounds.budget, s.spent(0))
	case manifest.ReasonDeadline:
		status, why = manifest.StatusDeadline, "the deadline "+s.bounds.deadline.Format(time.DateTime)+" is reached"
	default:
		return nil
	}
	return s.stop(status, why)
}

// boundBefore stops the step before an attempt starts when a bound is
// reached already: a step continued without raising its budget, a retry
// after the deadline. Nothing runs that the bound would cut at its first
// response; the step's last handoff is on disk.
func (s *stepRun) boundBefore() error {
	var why string
	switch s.bounds.reached(s.spent(0), s.rt.clock.Now()) {
	case manifest.ReasonBudget:
		why = fmt.Sprintf("the budget of $%.2f is spent already ($%.4f): raise it with --max-budget-usd", s.bounds.budget, s.spent(0))
		return s.stop(manifest.StatusBudget, why)
	case manifest.ReasonDeadline:
		why = "the deadline " + s.bounds.deadline.Format(time.DateTime) + " has passed: give a new one with --max-duration"
		return s.stop(manifest.StatusDeadline, why)
	}
	return nil
}

// resumeWriting is how flower continue picks up a step a limit stopped in
// the writing turn (its context at the threshold): the live session is
// resumed and asked for its handoff again, so that the handoff is whole,
// not rebuilt from the task.
func (s *stepRun) resumeWriting(gen *manifest.Generation, session string, begin func()) launch {
	rt := s.rt
	begin()
	gen.EndedAt = nil
	s.log.Info("resuming the session in its writing turn", "resume", session, "context", gen.Context)
	return launch{prompt: handoff.WritingPrompt(gen.Context, rt.policy.Window, s.st.Task, rt.opts.TaskCarry), resume: session,
		writing: true, writingContext: gen.Context, fallback: s.handoffFallback}
}

// writingResumed puts an attempt resumed by resumeWriting in its writing
// turn: its first prompt was the writing prompt.
func (a *attemptRun) writingResumed(l launch) {
	rt := a.rt
	at := cutAt{reason: manifest.ReasonThreshold, context: l.writingContext}
	a.enter(&writing{at: at, dl: rt.after(rt.opts.WritingTimeout, "writing"), started: rt.clock.Now(), cost0: a.meter.CostUSD, taken: true}, causeResumed)
	e := a.event(KindHandoff)
	e.Phase, e.Context = PhaseWriting, at.context
	rt.emit(e)
}

// limitStop stops the step on a limit that lasts too long. The session
// cannot write while the API refuses it, so flower writes the handoff
// document itself, a degraded one (DESIGN.md «Degraded handoff»), for a
// person to find on disk; but the session is not burned: its context is
// intact, it stays the step's live one, and flower continue resumes it.
func (s *stepRun) limitStop(gen *manifest.Generation, out outcome) error {
	path := s.books().Leave(out.why)
	if n := len(gen.LimitWaits); n > 0 {
		gen.LimitWaits[n-1].HandoffPath = path
	}
	msg := "the limit outlasts the wait: a degraded handoff is on disk"
	if path != "" {
		msg += " at " + path
	}
	msg += "; the session " + firstNonEmpty(out.sessionID, s.st.SessionID) + " stays the one flower continue resumes"
	s.log.Warn(msg)
	s.rt.emit(Event{Kind: KindLimitWait, Phase: event.PhaseExceeded, Step: s.st.Name, Generation: gen.N, SessionID: out.sessionID,
		Path: path, Why: out.why, Text: msg, IsError: true, CostUSD: s.st.CostUSD})
	return s.stop(manifest.StatusLimited, out.why)
}

func (s *stepRun) stop(status, why string) error {
	rt, st := s.rt, s.st
	st.AddError("stopped: " + why)
	st.Finish(status, rt.clock.Now())
	rt.save(st)
	s.log.Warn("step stopped", "status", status, "why", why)
	return &StopError{Step: st.Name, Status: status, Why: why}
}

func limitName(k transcript.LimitKind) string {
	switch k {
	case transcript.LimitUsage:
		return "usage limit"
	case transcript.LimitNetwork:
		return "network outage"
	}
	return "rate limit"
}

// limitMet says that a limit of kind k ended a turn.
func limitMet(k transcript.LimitKind) string {
	if k == transcript.LimitNetwork {
		return "no connection to the API (a network outage)"
	}
	return limitName(k) + " reached"
}

// outcomeLimited: a limit lasts past --max-wait or the deadline; the step
// stops, its session live.
const outcomeLimited outcomeKind = 100
