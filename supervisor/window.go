package supervisor

import (
	"fmt"

	"github.com/flowerhq/flower/manifest"
)

// adoptWindow takes the harness's own figure for the context window. A
// window given by flag (or policy) wins, with one warning when the two
// disagree by more than 10%; otherwise the harness's figure replaces the
// guess from the model name, and the thresholds move with it. It logs
// through the step's logger, which stamps where in the run it was.
func (s *stepRun) adoptWindow(w int, from string) {
	rt, st := s.rt, s.st
	if w <= 0 {
		return
	}
	if rt.windowSource == manifest.WindowFromFlag {
		if !rt.windowWarned && disagree(rt.policy.Window, w) {
			rt.windowWarned = true
			msg := fmt.Sprintf("--window %d disagrees with the harness's window of %d tokens for this model (%s) by more than 10%%; keeping --window", rt.policy.Window, w, from)
			s.log.Warn(msg)
			rt.emit(Event{Kind: KindNotice, Step: st.Name, Text: msg})
		}
		return
	}
	if rt.windowSource == manifest.WindowFromHarness && rt.policy.Window == w {
		return
	}
	s.log.Info("window from the harness", "window", w, "was", rt.policy.Window, "source_was", rt.windowSource, "from", from)
	rt.policy.Window = w
	rt.windowSource = manifest.WindowFromHarness
	st.Window, st.WindowSource = w, manifest.WindowFromHarness
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
