package registry

import (
	"bytes"
	"time"

	"github.com/tidwall/gjson"

	"github.com/flowerhq/flower/event"
)

// Event folds one of the run's events into the entry: the generation, the
// context and thresholds, the cost, the time of the latest main-thread
// response, and the status.
func (h *Handle) Event(ev event.Event) {
	if h == nil {
		return
	}
	now := time.Now()
	h.Update(func(e *Entry) {
		if ev.Step != "" {
			e.Step = ev.Step
		}
		if ev.Generation > 0 {
			e.Generation = ev.Generation
		}
		if ev.SessionID != "" {
			e.SessionID = ev.SessionID
		}
		if ev.Window > 0 {
			e.Window, e.At = ev.Window, ev.At
		}
		if ev.Context > 0 && !(ev.Kind == event.KindHandoff && ev.Phase == event.PhaseDone) {
			e.Context = ev.Context
		}
		if ev.CostUSD > e.CostUSD {
			e.CostUSD = ev.CostUSD
		}
		switch ev.Kind {
		case event.KindGeneration:
			e.Status = StatusStarting
			e.Context = 0
		case event.KindAPI:
			if ev.Phase == event.PhaseRetrying {
				e.Status = StatusAPIRetry
				if ev.Limit != "" {
					e.Status = StatusLimit
				}
			}
		case event.KindRaw:
			if mainResponse(ev.Raw) {
				e.LastResponse = now
				if e.Status != StatusNear {
					e.Status = StatusWorking
				}
			}
		case event.KindText, event.KindTool:
			if e.Status != StatusNear {
				e.Status = StatusWorking
			}
		case event.KindTurn:
			e.Status = StatusTurnEnded
		case event.KindRetry:
			e.Status = StatusRetrying
		case event.KindHandoff:
			switch ev.Phase {
			case event.PhaseNear:
				e.Status = StatusNear
			case event.PhaseWriting:
				e.Status = StatusWriting
			case event.PhaseDone:
				e.Status = StatusHandedOff
			}
		}
	})
}

// mainResponse reports whether a harness line is a main-thread assistant
// message (an API response, not a subagent's).
func mainResponse(raw []byte) bool {
	if !bytes.Contains(raw, []byte(`"assistant"`)) || !gjson.ValidBytes(raw) {
		return false
	}
	r := gjson.ParseBytes(raw)
	return r.Get("type").String() == "assistant" && r.Get("parent_tool_use_id").Type == gjson.Null
}

// Tee returns an event callback that updates the entry and then calls
// next (when not nil).
func (h *Handle) Tee(next func(event.Event)) func(event.Event) {
	if h == nil {
		return next
	}
	return func(ev event.Event) {
		h.Event(ev)
		if next != nil {
			next(ev)
		}
	}
}
