package supervisor

import (
	"fmt"
	"log/slog"

	"github.com/flowerhq/flower/front"
	"github.com/flowerhq/flower/manifest"
)

// adoptWindow takes the harness's own figure for the context window. A
// window given by flag (or policy) wins, with one warning when the two
// disagree by more than 10%; otherwise the harness's figure replaces the
// guess from the model name, and the thresholds move with it. It logs to
// log: the step's logger, which stamps where in the run it was.
func (rt *Runtime) adoptWindow(log *slog.Logger, st *manifest.StepResult, w int, from string) {
	if w <= 0 {
		return
	}
	if rt.windowSource == manifest.WindowFromFlag {
		if !rt.windowWarned && disagree(rt.policy.Window, w) {
			rt.windowWarned = true
			knob := rt.policy.Knobs.WindowKnob()
			msg := fmt.Sprintf("%s %d disagrees with the harness's window of %d tokens for this model (%s) by more than 10%%; keeping %s", knob, rt.policy.Window, w, from, knob)
			log.Warn(msg)
			rt.emit(Event{Kind: KindNotice, Step: stepName(st), Text: msg})
		}
		return
	}
	if rt.windowSource == manifest.WindowFromHarness && rt.policy.Window == w {
		return
	}
	log.Info("window from the harness", "window", w, "was", rt.policy.Window, "source_was", rt.windowSource, "from", from)
	rt.policy.Window = w
	rt.windowSource = manifest.WindowFromHarness
	if st != nil {
		st.Window, st.WindowSource = w, manifest.WindowFromHarness
	}
}

func stepName(st *manifest.StepResult) string {
	if st == nil {
		return ""
	}
	return st.Name
}

// crossCheck weighs the window a turn's result reports (modelUsage) against
// the harness's answer to the context-usage request. The answer is the
// source; the result only checks it, and a disagreement of more than 10% is
// said once per run. Without an answer for this model (not yet, or the
// request failed) the result's figure is the harness's best word and is
// adopted (DESIGN.md «Window from the harness»).
func (a *attemptRun) crossCheck(w int) {
	rt := a.rt
	if p := rt.m.Probe; p != nil && p.Window > 0 && (p.Model == "" || a.model == "" || p.Model == a.model) {
		if !rt.crossWarned && disagree(p.Window, w) {
			rt.crossWarned = true
			msg := fmt.Sprintf("a turn's result reports a window of %d tokens, the harness's context-usage answer said %d; keeping %d", w, p.Window, rt.policy.Window)
			a.log.Warn(msg)
			a.st.AddError(msg)
			rt.emit(Event{Kind: KindNotice, Step: a.st.Name, Text: msg})
		}
		return
	}
	rt.adoptWindow(a.log, a.st, w, "the result's modelUsage")
}

// resultWindow is the window a result reports for the session's model
// (modelUsage.<model>.contextWindow), or the largest it reports when the
// model is not known or not among them.
func (a *attemptRun) resultWindow(ev front.TurnEnded) int {
	if w := ev.Windows[a.model]; a.model != "" && w > 0 {
		return w
	}
	w := 0
	for _, v := range ev.Windows {
		w = max(w, v)
	}
	return w
}

// disagree reports whether a and b differ by more than 10% of the larger.
func disagree(a, b int) bool {
	d := a - b
	if d < 0 {
		d = -d
	}
	return d*10 > max(a, b)
}

// WindowSource says where the window in force came from: manifest.WindowFromFlag,
// WindowFromHarness (once a session has reported it), or WindowFromModel.
func (rt *Runtime) WindowSource() string { return rt.windowSource }
