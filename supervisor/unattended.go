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
	"github.com/flowerhq/flower/handoff"
	"github.com/flowerhq/flower/handoffwriter"
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
const limitContinue = "The API limit that stopped your last turn has lifted. This is the same session: " +
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

// limitWatch follows what the harness says of limits during one attempt.
type limitWatch struct {
	// seen: a limit the running turn met (a rate_limit_event, the
	// synthetic error line); retryAfter: the wait the harness last
	// announced for a 429 in this turn.
	seen       transcript.Limit
	saw        bool
	retryAfter time.Duration
	// row counts the limits in a row (the backoff's n), waited their time
	// spent waiting in that row (what --max-wait bounds).
	row    int
	waited time.Duration
	// wait is the wait running; nil when none.
	wait *limitWaiting
	// shown: the limit met was told (limitShown); false again once the
	// session answers.
	shown bool
}

// limitWaiting is a wait running: its record in the generation, when it
// ends, and its timers.
type limitWaiting struct {
	rec   int // index in gen.LimitWaits
	start time.Time
	until time.Time
	limit transcript.Limit
	wake  <-chan time.Time
	tick  *time.Ticker
}

// observe folds one record of a running turn into the watch.
func (w *limitWatch) observe(ev *transcript.Event, now time.Time) {
	if d, rate, ok := transcript.RetryAfterOf(ev); ok {
		if rate {
			w.retryAfter = d
		}
		return
	}
	if ev.Kind == transcript.KindResult {
		return // ended reads it
	}
	if l, ok := transcript.LimitOf(ev, now); ok {
		w.merge(l)
	}
}

// merge keeps what each record said of the limit: a usage limit's kind,
// the first exact reset (a rate_limit_event's epoch seconds come before
// the text's minute).
func (w *limitWatch) merge(l transcript.Limit) {
	if !w.saw {
		w.seen, w.saw = l, true
		return
	}
	if l.Kind == transcript.LimitUsage {
		w.seen.Kind = l.Kind
	}
	if w.seen.ResetAt.IsZero() {
		w.seen.ResetAt = l.ResetAt
	}
	w.seen.Window = firstNonEmpty(w.seen.Window, l.Window)
	w.seen.Message = firstNonEmpty(w.seen.Message, l.Message)
}

// ended reads a turn's result: whether the turn ended on a limit, and what
// is known of it. A turn that ended otherwise ends the row of limits.
func (w *limitWatch) ended(ev *transcript.Event, now time.Time) (transcript.Limit, bool) {
	defer func() { w.seen, w.saw, w.retryAfter = transcript.Limit{}, false, 0 }()
	l, ok := transcript.LimitOf(ev, now)
	if !ok || !ev.IsError {
		w.row, w.waited = 0, 0
		return transcript.Limit{}, false
	}
	w.merge(l)
	w.seen.RetryAfter = w.retryAfter
	return w.seen, true
}

// wakeC and tickC are the running wait's channels; nil when none runs.
func (w *limitWatch) wakeC() <-chan time.Time {
	if w.wait == nil {
		return nil
	}
	return w.wait.wake
}

func (w *limitWatch) tickC() <-chan time.Time {
	if w.wait == nil {
		return nil
	}
	return w.wait.tick.C
}

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

func (m *spendMeter) observe(ev *transcript.Event, model string) {
	if ev.Kind != transcript.KindAssistant || ev.Synthetic() {
		return
	}
	if ev.MessageID != "" {
		if m.seen == nil {
			m.seen = map[string]bool{}
		}
		if m.seen[ev.MessageID] {
			return
		}
		m.seen[ev.MessageID] = true
	}
	m.turn += priceOf(firstNonEmpty(ev.Model, model)).cost(ev.Usage)
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

// unattendedRecord folds one record of the running turn: the limits it
// shows, its responses' cost; at every API response of a working turn
// it applies the budget and the deadline.
func (a *attemptRun) unattendedRecord(ev *transcript.Event) {
	now := a.rt.opts.Now()
	a.lim.observe(ev, now)
	a.spend.observe(ev, a.model)
	a.limitShown(ev, now)
	if ev.Kind != transcript.KindAssistant || ev.Synthetic() {
		return
	}
	a.checkBounds(now)
}

// limitShown tells whoever starts the turns (a person at the harness's
// own screen) of a limit the session met, once per limit: the engine does
// not wait it out then, but the reset is worth showing (the interactive
// front puts it in the terminal's title).
func (a *attemptRun) limitShown(ev *transcript.Event, now time.Time) {
	if !a.rt.caps.OutsideTurns {
		return
	}
	if ev.Kind == transcript.KindAssistant && ev.MainThread() && !ev.Synthetic() {
		a.lim.shown = false // the session answers again
		return
	}
	if a.lim.shown || ev.Kind == transcript.KindResult {
		return
	}
	l, ok := transcript.LimitOf(ev, now)
	if !ok {
		return
	}
	a.lim.shown = true
	e := a.event(KindLimitWait)
	e.Phase, e.Limit = event.PhaseShown, string(l.Kind)
	e.Text = limitName(l.Kind) + " reached"
	if !l.ResetAt.IsZero() {
		r := l.ResetAt
		e.ResetAt = &r
		e.Text += ": it resets at " + r.Local().Format("15:04")
	}
	a.log.Warn("limit shown to whoever starts the turns", "limit", l.Kind, "reset_at", e.ResetAt, "message", l.Message)
	a.rt.emit(e)
}

// checkBounds cuts a working turn once the step reached its budget or
// deadline; the writing turn is exempt (DESIGN.md «Writing turn»).
func (a *attemptRun) checkBounds(now time.Time) bool {
	if a.phase != phaseWorking || a.over || a.lim.wait != nil || a.idle {
		return false
	}
	spent := a.spent(a.spend.running())
	reason := a.bounds.reached(spent, now)
	if reason == "" {
		return false
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
	a.rt.emit(e)
	a.cut(reason)
	return true
}

// deadlineC fires at the step's deadline; nil once it fired, or with none.
func (a *attemptRun) deadlineC() <-chan time.Time {
	if a.bounds.deadline.IsZero() || a.deadlineFired {
		return nil
	}
	if a.deadlineDue == nil {
		a.deadlineDue = time.After(a.bounds.deadline.Sub(a.rt.opts.Now()))
	}
	return a.deadlineDue
}

// deadlineReached is the deadline's timer: a working turn is cut then,
// not only at its next response. It reports whether it cut.
func (a *attemptRun) deadlineReached() bool {
	a.deadlineFired, a.deadlineDue = true, nil
	return a.checkBounds(a.bounds.deadline)
}

// unattendedResult reads a turn's result before the engine judges it: the
// estimate of the turn gives way to the harness's cost; a turn that ended
// on a limit is no failure: the step waits it out (ok, nothing ended), or
// stops when the wait would last past --max-wait or the deadline (ok and
// end, with the outcome).
func (a *attemptRun) unattendedResult(ev *transcript.Event) (out outcome, end, ok bool) {
	// The estimate against the harness's figure, for the run's log.
	a.log.Debug("turn cost", "estimate_usd", a.spend.turn, "harness_total_usd", ev.TotalCostUSD, "booked_usd", a.st.CostUSD)
	a.spend.ended(ev.TotalCostUSD)
	now := a.rt.opts.Now()
	l, limited := a.lim.ended(ev, now)
	if !limited || a.rt.caps.OutsideTurns {
		// Whoever starts the turns (a person at the harness's own
		// screen, an application through the relay) sees the limit and
		// decides; the engine sends nothing of its own then.
		return outcome{}, false, false
	}
	a.lim.row++
	until := waitUntil(l, a.lim.row, a.rt.opts.LimitBackoff, now)
	rec := manifest.LimitWait{Kind: string(l.Kind), Start: now, Until: until, Writing: a.phase == phaseWriting}
	if !l.ResetAt.IsZero() {
		r := l.ResetAt
		rec.ResetAt = &r
	}
	var why string
	switch {
	case a.rt.opts.MaxWait > 0 && a.lim.waited+until.Sub(now) > a.rt.opts.MaxWait:
		why = fmt.Sprintf("the %s lasts until %s, past --max-wait %s", limitName(l.Kind), until.Format(time.DateTime), a.rt.opts.MaxWait)
	case !a.bounds.deadline.IsZero() && until.After(a.bounds.deadline):
		why = fmt.Sprintf("the %s lasts until %s, past the deadline %s", limitName(l.Kind), until.Format(time.DateTime), a.bounds.deadline.Format(time.DateTime))
	}
	if why != "" {
		rec.Stopped, rec.End = true, &now
		a.gen.LimitWaits = append(a.gen.LimitWaits, rec)
		a.log.Warn("limit: stopping the step", "why", why, "limit", l.Kind, "message", l.Message)
		return outcome{kind: outcomeLimited, why: why, sessionID: a.meter.SessionID}, true, true
	}
	a.gen.LimitWaits = append(a.gen.LimitWaits, rec)
	a.lim.wait = &limitWaiting{rec: len(a.gen.LimitWaits) - 1, start: now, until: until, limit: l,
		wake: time.After(until.Sub(now)), tick: time.NewTicker(waitTick)}
	a.log.Warn("limit: waiting it out, then the same session goes on", "limit", l.Kind, "until", until,
		"reset_at", rec.ResetAt, "retry_after", l.RetryAfter, "in_a_row", a.lim.row, "message", l.Message)
	a.rt.emit(a.waitEvent(event.PhaseBegun))
	return outcome{}, false, true
}

// waitEvent reports the running wait.
func (a *attemptRun) waitEvent(phase string) Event {
	w := a.lim.wait
	e := a.event(KindLimitWait)
	e.Phase, e.Limit = phase, string(w.limit.Kind)
	until := w.until
	e.Until = &until
	if !w.limit.ResetAt.IsZero() {
		r := w.limit.ResetAt
		e.ResetAt = &r
	}
	switch phase {
	case event.PhaseBegun:
		e.Text = fmt.Sprintf("%s reached: waiting until %s (%s), then the same session goes on", limitName(w.limit.Kind),
			until.Format(time.TimeOnly), until.Sub(a.rt.opts.Now()).Round(time.Second))
	case event.PhaseEnded:
		e.Text = fmt.Sprintf("the wait for the %s is over: the same session goes on", limitName(w.limit.Kind))
	}
	return e
}

// waitTicked reports the running wait again, for the countdown.
func (a *attemptRun) waitTicked() {
	if a.lim.wait != nil {
		a.rt.emit(a.waitEvent(event.PhaseWaiting))
	}
}

// endWait closes the running wait's record; the wait is over (lifted:
// it ran its time; otherwise the attempt ended during it).
func (a *attemptRun) endWait(lifted bool) {
	w := a.lim.wait
	if w == nil {
		return
	}
	now := a.rt.opts.Now()
	w.tick.Stop()
	if w.rec < len(a.gen.LimitWaits) {
		a.gen.LimitWaits[w.rec].End = &now
	}
	a.lim.waited += now.Sub(w.start)
	e := a.waitEvent(event.PhaseEnded)
	if !lifted {
		e.Text = fmt.Sprintf("the wait for the %s was cut short", limitName(w.limit.Kind))
	}
	a.rt.emit(e)
	a.lim.wait = nil
	a.rt.save(a.st)
}

// waitOver ends the wait and sends the same session on: a working turn is
// told to continue, a cut turn's writing turn starts, a writing turn is
// asked for its document again (DESIGN.md «Writing turn»): no handoff is
// degraded for a limit.
func (a *attemptRun) waitOver() (outcome, bool) {
	a.endWait(true)
	switch a.phase {
	case phaseCutting:
		return a.startWriting()
	case phaseWriting:
		a.writing.Reset()
		a.log.Info("limit lifted: asking for the handoff again")
		if err := a.p.Send(handoff.WritingPrompt(a.cutContext, a.rt.policy.Window, a.st.Task, a.rt.opts.TaskCarry)); err != nil {
			return a.handoffOutcome(handoffwriter.Handoff{}, "send the handoff prompt after a limit: "+err.Error()), true
		}
	default:
		a.log.Info("limit lifted: the same session goes on")
		if err := a.p.Send(limitContinue); err != nil {
			return a.died(fmt.Sprintf("send the continuation after a limit: %v", err)), true
		}
	}
	return outcome{}, false
}

// boundStop stops the step after a handoff when its budget or deadline is
// reached (the handoff was cut for it, or was due anyway and the writing
// turn passed the budget). nil lets the successor start.
func (s *stepRun) boundStop(reason string) error {
	rt := s.rt
	if reason != manifest.ReasonBudget && reason != manifest.ReasonDeadline {
		reason = s.bounds.reached(s.spent(0), rt.opts.Now())
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
	switch s.bounds.reached(s.spent(0), s.rt.opts.Now()) {
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
	a.reason, a.cutContext = manifest.ReasonThreshold, l.writingContext
	a.setPhase(phaseWriting)
	a.writingStart, a.writingCost0 = a.rt.opts.Now(), a.meter.CostUSD
	e := a.event(KindHandoff)
	e.Phase, e.Context = PhaseWriting, a.cutContext
	a.rt.emit(e)
}

// limitStop stops the step on a limit that lasts too long: the session
// stays the step's live one, for flower continue.
func (s *stepRun) limitStop(out outcome) error {
	return s.stop(manifest.StatusLimited, out.why)
}

func (s *stepRun) stop(status, why string) error {
	rt, st := s.rt, s.st
	st.AddError("stopped: " + why)
	st.Finish(status, rt.opts.Now())
	rt.save(st)
	s.log.Warn("step stopped", "status", status, "why", why)
	return &StopError{Step: st.Name, Status: status, Why: why}
}

func limitName(k transcript.LimitKind) string {
	if k == transcript.LimitUsage {
		return "usage limit"
	}
	return "rate limit"
}

// outcomeLimited: a limit lasts past --max-wait or the deadline; the step
// stops, its session live.
const outcomeLimited outcomeKind = 100
