package interactive

import (
	"github.com/flowerhq/flower/event"
)

// limitTitle is the window title for a limit the session met (DESIGN.md
// «Unattended: limits, budget, deadline»): the person at the harness's
// screen decides when to go on, and the title says when the limit resets
// (the harness's own screen says it in a line that scrolls away); "" for
// any other event.
func limitTitle(ev event.Event) string {
	if ev.Kind != event.KindLimitWait || ev.Phase != event.PhaseShown {
		return ""
	}
	name := "rate limit"
	if ev.Limit == "usage_limit" {
		name = "usage limit"
	}
	if ev.ResetAt == nil {
		return "flower · " + name + " reached"
	}
	return "flower · " + name + " · resets " + ev.ResetAt.Local().Format("15:04")
}
