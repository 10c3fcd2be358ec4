package notify

import (
	"fmt"
	"time"

	"github.com/flowerhq/flower/event"
)

// fromUnattended is the notify event of a limit's wait begun or ended, or
// of a budget or deadline reached (DESIGN.md «Unattended: limits, budget,
// deadline»).
func fromUnattended(ev event.Event, runDir string) (Event, bool) {
	n := Event{Step: ev.Step, RunDir: runDir, Generation: ev.Generation, SessionID: ev.SessionID, CostUSD: ev.CostUSD}
	switch {
	case ev.Kind == event.KindLimitWait && (ev.Phase == event.PhaseBegun || ev.Phase == event.PhaseEnded):
		n.Kind, n.Limit, n.ResetAt = KindWaitBegin, ev.Limit, ev.ResetAt
		until := ""
		if ev.Until != nil {
			until = ev.Until.Format(time.DateTime)
		}
		n.Text = fmt.Sprintf("flower: step %s hit a %s; waiting until %s", ev.Step, ev.Limit, until)
		if ev.Phase == event.PhaseEnded {
			n.Kind = KindWaitEnd
			n.Text = fmt.Sprintf("flower: step %s waited out its %s and goes on", ev.Step, ev.Limit)
		}
	case ev.Kind == event.KindLimitWait && ev.Phase == event.PhaseExceeded:
		// The document flower left is a degraded handoff a person reads;
		// no successor starts from it (the session stays live).
		n.Kind, n.Path, n.Degraded, n.Why, n.Reason = KindHandoff, ev.Path, true, ev.Why, "limit_wait_exceeded"
		n.Text = fmt.Sprintf("flower: step %s left a degraded handoff (%s); its session stays live for flower continue: %s", ev.Step, ev.Why, ev.Path)
	case ev.Kind == event.KindBound && ev.Reason == "budget":
		n.Kind, n.BudgetUSD = KindBudget, ev.BudgetUSD
		n.Text = fmt.Sprintf("flower: step %s reached its budget of $%.2f; it hands off and stops", ev.Step, ev.BudgetUSD)
	case ev.Kind == event.KindBound && ev.Reason == "deadline":
		n.Kind = KindDeadline
		n.Text = fmt.Sprintf("flower: step %s reached its deadline; it hands off and stops", ev.Step)
	default:
		return Event{}, false
	}
	return n, true
}
