package runview

import (
	"testing"
	"time"

	"github.com/flowerhq/flower/manifest"
)

func TestBudgetLine(t *testing.T) {
	d := time.Date(2026, 12, 2, 7, 0, 0, 0, time.Local)
	for _, c := range []struct {
		st   manifest.StepResult
		want string
	}{
		{manifest.StepResult{CostUSD: 3}, ""},
		{manifest.StepResult{CostUSD: 5, BudgetUSD: 20}, "$5.0000 of $20.0000 spent (25%)"},
		{manifest.StepResult{CostUSD: 21, BudgetUSD: 20, Deadline: &d}, "$21.0000 of $20.0000 spent (105%) · deadline 2026-12-02 07:00:00"},
	} {
		if got := budgetLine(&c.st); got != c.want {
			t.Errorf("budgetLine(%+v) = %q, want %q", c.st, got, c.want)
		}
	}
}
