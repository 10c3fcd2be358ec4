package main

import (
	"errors"
	"math"
	"strconv"
	"time"

	"github.com/flowerhq/flower/manifest"
	"github.com/flowerhq/flower/supervisor"
)

// The FLOWER_* variables of an unattended run's flags (DESIGN.md
// «Unattended: limits, budget, deadline»); the relay reads them too.
const (
	envMaxBudget   = "FLOWER_MAX_BUDGET_USD"
	envMaxDuration = "FLOWER_MAX_DURATION"
	envMaxWait     = "FLOWER_MAX_WAIT"
)

// Exit codes of a step a bound stopped, documented in docs/reference.md.
const (
	exitBudget    = 4 // --max-budget-usd reached; the handoff is written
	exitDeadline  = 5 // --max-duration reached; the handoff is written
	exitLimitWait = 6 // a rate or usage limit lasts past --max-wait; the session is live
	exitAuth      = 7 // the API refused the credentials (401/403) after a retry, or the harness has none
	exitEndpoint  = 8 // the API endpoint refused the connection or did not resolve, before any request went through
)

// stopCode is the exit code of a step a bound stopped; ok false for any
// other error.
func stopCode(err error) (int, bool) {
	var se *supervisor.StopError
	if !errors.As(err, &se) {
		return 0, false
	}
	switch se.Status {
	case manifest.StatusBudget:
		return exitBudget, true
	case manifest.StatusDeadline:
		return exitDeadline, true
	case manifest.StatusLimited:
		return exitLimitWait, true
	case manifest.StatusAuthFailed:
		return exitAuth, true
	case manifest.StatusUnreachable:
		return exitEndpoint, true
	case manifest.StatusUntrusted: // as a workspace refused at the start
		return exitUsage, true
	}
	return exitFailed, true
}

// checkUnattended refuses bounds that would mean nothing.
func (set jobSettings) checkUnattended() error {
	if set.maxBudgetUSD < 0 || math.IsNaN(set.maxBudgetUSD) || math.IsInf(set.maxBudgetUSD, 0) {
		return usagef("--max-budget-usd must be a positive amount of dollars, got %v", set.maxBudgetUSD)
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"--max-duration", set.maxDuration}, {"--max-wait", set.maxWait}, {"--limit-backoff", set.limitBackoff}} {
		if d.v < 0 {
			return usagef("%s must not be negative, got %v", d.name, d.v)
		}
	}
	return nil
}

// envUnattended reads the relay's FLOWER_MAX_BUDGET_USD and
// FLOWER_MAX_DURATION into set; unset or blank leaves a setting alone. The
// relay has no limit wait (the application decides), so no FLOWER_MAX_WAIT.
func envUnattended(set *jobSettings, env func(string) string) error {
	if v := env(envMaxBudget); v != "" {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f <= 0 || math.IsInf(f, 0) {
			return usagef("%s=%q: want a positive amount of dollars (unset it for no budget)", envMaxBudget, v)
		}
		set.maxBudgetUSD = f
	}
	for _, d := range []struct {
		name string
		to   *time.Duration
	}{{envMaxDuration, &set.maxDuration}} {
		v := env(d.name)
		if v == "" {
			continue
		}
		t, err := time.ParseDuration(v)
		if err != nil || t <= 0 {
			return usagef("%s=%q: want a positive duration such as 90m or 8h (unset it for no bound)", d.name, v)
		}
		*d.to = t
	}
	return nil
}

// interactiveWaits refuses the limit wait's flags in the interactive mode:
// the person at the harness's screen sees a limit and decides, flower
// waits nothing there (the title shows the reset).
func interactiveWaits(c interface{ IsSet(string) bool }) error {
	for _, name := range []string{"max-wait", "limit-backoff"} {
		if c.IsSet(name) {
			return usagef("--%s applies to headless runs: in the interactive mode the harness's screen shows a limit, and you decide when to go on", name)
		}
	}
	return nil
}
