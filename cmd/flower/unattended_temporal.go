//go:build temporal

package main

import (
	"time"

	"github.com/urfave/cli/v2"

	"github.com/flowerhq/flower/fleet"
)

// submitBounds reads submit's --max-budget-usd and --max-duration into the
// step's input: the deadline is fixed now, so that every worker counts it
// from the submission (DESIGN.md «Unattended: limits, budget, deadline»).
func submitBounds(c *cli.Context, in *fleet.StepInput, now time.Time) error {
	set := jobSettings{maxBudgetUSD: c.Float64("max-budget-usd"), maxDuration: c.Duration("max-duration")}
	if err := set.checkUnattended(); err != nil {
		return err
	}
	in.BudgetUSD = set.maxBudgetUSD
	if set.maxDuration > 0 {
		d := now.Add(set.maxDuration)
		in.Deadline = &d
	}
	return nil
}
