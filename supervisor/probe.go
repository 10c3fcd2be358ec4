package supervisor

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/flowerhq/flower/front"
	"github.com/flowerhq/flower/manifest"
	"github.com/flowerhq/flower/transcript"
)

// probeTimeout bounds the context-usage request, on the engine's clock.
// Past it the run goes on with the fallback it records (DESIGN.md «Window
// from the harness»).
const probeTimeout = 10 * time.Second

type probeAnswer struct {
	resp transcript.ContextUsage
	err  error
	took time.Duration
}

// wantProbe reports whether this session should be asked what the harness
// knows of its context: the run has no answer yet (and no fallback), or has
// one for another model than the one this session runs.
func (a *attemptRun) wantProbe() bool {
	p := a.rt.m.Probe
	if p == nil {
		return true
	}
	return a.model != "" && p.Model != "" && p.Model != a.model
}

// startProbe asks, once per run, for the harness's view of the context
// (window, start-up floor, auto-compact) beside the running turn. It is
// called once the session's first round is back, so the request goes out
// after the first prompt's: the harness answers it with a burst of
// count_tokens calls to the API, which must not delay the first request.
func (a *attemptRun) startProbe() {
	if a.probeAsked || a.over() || !a.wantProbe() {
		return
	}
	if _, ok := a.p.(front.Prober); !ok {
		return
	}
	a.probeAsked = true
	a.log.Info("asking the harness for its context usage", "model", a.model)
	a.order(effect{kind: doProbe})
}

// askProbe sends the context-usage request: its answer comes on
// a.probing, within probeTimeout.
func (a *attemptRun) askProbe() {
	pr := a.p.(front.Prober)
	ch := make(chan probeAnswer, 1)
	a.probing = ch
	// The request's bound is on the engine's clock.
	ctx, cancel := context.WithCancelCause(a.ctx)
	clock := a.rt.clock
	timeout := clock.NewTimer(probeTimeout)
	start := clock.Now()
	go func() {
		select {
		case <-timeout.C():
			cancel(fmt.Errorf("no answer within %v: %w", probeTimeout, context.DeadlineExceeded))
		case <-ctx.Done():
		}
	}()
	go func() {
		defer cancel(nil)
		defer timeout.Stop()
		resp, err := pr.Probe(ctx)
		if err != nil && ctx.Err() != nil && a.ctx.Err() == nil {
			err = context.Cause(ctx)
		}
		ch <- probeAnswer{resp: resp, err: err, took: clock.Now().Sub(start)}
	}()
}

// settleProbe waits for an answer still on its way when the attempt ends
// (at most probeTimeout), so that the run's one answer is not lost because
// the turn was short. The harness is still up: it answers while idle.
func (a *attemptRun) settleProbe() {
	if a.probing != nil {
		a.act(a.probed(<-a.probing))
	}
}

// probed records the harness's answer as the run's (manifest.Probe): the
// window it reports replaces a guess (DESIGN.md «Window from the harness»),
// its floor is what the futile guard judges later sessions by, and an
// auto-compact that is on although handoff switched it off is said loudly
// (DESIGN.md «Compaction backstop»). The rounds seen so far are judged
// again against the new window. A request that timed out or was refused is
// recorded as the run's fallback and not asked again; one lost because the
// harness exited or flower is stopping is left for a later session.
func (a *attemptRun) probed(ans probeAnswer) (outcome, bool) {
	rt, st := a.rt, a.st
	a.probing = nil
	if ans.err != nil {
		if a.ctx.Err() != nil || errors.Is(ans.err, front.ErrExited) {
			a.log.Info("get_context_usage got no answer; a later session asks again", "err", ans.err)
			return outcome{}, false
		}
		msg := fmt.Sprintf("get_context_usage got no answer (%v); the window stays %d (%s) until a turn's result reports the harness's, and the futile guard judges each fresh session by its first round",
			ans.err, rt.policy.Window, rt.windowSource)
		rt.m.Probe = &manifest.Probe{Model: a.model, SessionID: a.meter.SessionID, At: rt.clock.Now(), Seconds: ans.took.Seconds(), Fallback: msg}
		st.AddError(msg)
		a.log.Warn(msg)
		rt.save(st)
		return outcome{}, false
	}
	resp := ans.resp
	p := &manifest.Probe{Model: firstNonEmpty(a.model, resp.Model), SessionID: a.meter.SessionID,
		At: rt.clock.Now(), Seconds: ans.took.Seconds(), Window: resp.Window, Floor: resp.Floor, AutoCompactEnabled: resp.AutoCompact}
	rt.m.Probe = p
	a.gen.HarnessWindow, a.gen.StartFloor, a.gen.AutoCompactEnabled = p.Window, p.Floor, p.AutoCompactEnabled
	if p.Window > 0 {
		rt.adoptWindow(a.log, st, p.Window, "get_context_usage")
	}
	if on := p.AutoCompactEnabled; on != nil && *on && a.backstopArmed() {
		// Something beat flower's levers (DESIGN.md «Compaction levers»):
		// a harness that reads its settings otherwise, say. Say so loudly;
		// should it compact, the backstop in handle hands off.
		msg := "the harness reports auto-compact ON although handoff switched it off (something overrode what flower holds it off with: a managed settings file, or a harness release that reads it otherwise; run flower doctor)"
		st.AddError(msg)
		a.log.Error(msg)
		rt.emit(Event{Kind: KindNotice, Step: st.Name, Generation: a.gen.N, Text: msg, IsError: true})
	}
	rt.save(st)
	a.log.Info("session probed", "max_tokens", p.Window, "floor", p.Floor, "auto_compact", autoCompact(resp.AutoCompact),
		"model", p.Model, "seconds", p.Seconds)
	return a.judge()
}

// autoCompact says what the harness said of its auto-compact, for the log.
func autoCompact(on *bool) string {
	if on == nil {
		return "unsaid"
	}
	return fmt.Sprint(*on)
}

// runFloor is the start-up floor the run measured, 0 when it has none.
func (rt *Runtime) runFloor() int {
	if p := rt.m.Probe; p != nil {
		return p.Floor
	}
	return 0
}
