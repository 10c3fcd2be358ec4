package main

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/flowerhq/flower/manifest"
	"github.com/flowerhq/flower/supervisor"
)

// Bad bounds are refused before anything runs, with the flag or variable named.
func TestUnattendedUsageErrors(t *testing.T) {
	harness := os.Args[0] // never started
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--max-budget-usd", "-1", "x"}, "--max-budget-usd must be a positive amount"},
		{[]string{"--max-duration", "-5m", "x"}, "--max-duration must not be negative"},
		{[]string{"--max-wait", "-1s", "x"}, "--max-wait must not be negative"},
		{[]string{"--limit-backoff", "-1s", "x"}, "--limit-backoff must not be negative"},
		{[]string{"--max-budget-usd", "lots", "x"}, "lots"},
	} {
		code, stderr := runMain(t, append([]string{"--harness", harness, "-C", t.TempDir()}, c.args...)...)
		if code != exitUsage || !strings.Contains(stderr, c.want) {
			t.Errorf("flower %v: exit %d, stderr %q; want exit 2 saying %q", c.args, code, stderr, c.want)
		}
	}
	env := map[string]string{}
	get := func(k string) string { return env[k] }
	for k, v := range map[string]string{envMaxBudget: "0", envMaxDuration: "soon"} {
		clear(env)
		env[k] = v
		var set jobSettings
		if err := envUnattended(&set, get); err == nil || !strings.Contains(err.Error(), k) || exitCode(err) != exitUsage {
			t.Errorf("%s=%s: %v; want a usage error naming it", k, v, err)
		}
	}
	clear(env)
	env[envMaxBudget], env[envMaxDuration], env[envMaxWait] = "2.5", "90m", "6h"
	var set jobSettings
	if err := envUnattended(&set, get); err != nil || set.maxBudgetUSD != 2.5 || set.maxDuration != 90*time.Minute || set.maxWait != 0 {
		t.Errorf("envUnattended = %v, %+v; want $2.5, 90m, and no wait bound (the relay waits nothing)", err, set)
	}
	for _, name := range []string{"max-wait", "limit-backoff"} {
		err := interactiveWaits(isSet(name))
		if err == nil || exitCode(err) != exitUsage || !strings.Contains(err.Error(), "--"+name) {
			t.Errorf("interactive --%s: %v; want a usage error naming it", name, err)
		}
	}
	if err := interactiveWaits(isSet("max-budget-usd")); err != nil {
		t.Errorf("interactive --max-budget-usd refused: %v", err)
	}
}

// runMain runs flower in-process and returns its exit code and stderr.
func runMain(t *testing.T, args ...string) (int, string) {
	t.Helper()
	var stdout, stderr strings.Builder
	err := run(t.Context(), append([]string{"flower"}, args...), strings.NewReader(""), &stdout, &stderr)
	if err != nil {
		stderr.WriteString("flower: " + err.Error() + "\n")
	}
	return exitCode(err), stderr.String()
}

func TestStopExitCodes(t *testing.T) {
	for status, want := range map[string]int{manifest.StatusBudget: 4, manifest.StatusDeadline: 5, manifest.StatusLimited: 6} {
		err := fmt.Errorf("wrapped: %w", &supervisor.StopError{Step: "s", Status: status, Why: "why"})
		if got := exitCode(err); got != want {
			t.Errorf("%s: exit %d, want %d", status, got, want)
		}
		if !errors.Is(err, supervisor.ErrStopped) {
			t.Errorf("%s: not ErrStopped", status)
		}
	}
}

type isSet string

func (s isSet) IsSet(name string) bool { return name == string(s) }
