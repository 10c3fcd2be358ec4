package integration_test

// The seeded fault campaign: a job that needs at least three sessions runs
// on the real harness against the scripted API while faults land at random
// moments drawn from a seed — flower SIGKILLed or SIGTERMed (then `flower
// continue`), the harness SIGKILLed, the API answering 500, 529, resetting
// the connection, stalling the stream or saying the prompt is too long,
// and a person editing the handoff file in the launch window. After every
// exit of flower and at the end the invariants are checked (chaos_check_test.go).
//
// CHAOS_FRONT (headless, interactive, or both: the default) names the
// fronts; CHAOS_SEED (default 40) is the first round's seed, CHAOS_ROUNDS
// the number of rounds per front (default 3 headless, 2 interactive: an
// interactive round is slower), round i using seed CHAOS_SEED+i;
// CHAOS_FAULTS (default 6) faults of distinct kinds are drawn per round.
// The defaults are what `make test` runs: on each front the default seeds
// between them plan every kind. `make chaos` runs more rounds from a fresh
// seed. A failing round prints the command that replays it.

import (
	"fmt"
	"math/rand"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// chaosConfig is the campaign's size, from the environment.
type chaosConfig struct {
	seed   int64
	rounds int // 0: the front's default
	faults int
}

// roundsFor is how many rounds a front runs.
func (c chaosConfig) roundsFor(fr front) int {
	switch {
	case c.rounds > 0:
		return c.rounds
	case fr.name() == "interactive":
		return 2
	}
	return 3
}

func chaosConfigFromEnv(t *testing.T) chaosConfig {
	c := chaosConfig{seed: 40, faults: 6}
	for _, v := range []struct {
		name string
		set  func(int64)
	}{
		{"CHAOS_SEED", func(n int64) { c.seed = n }},
		{"CHAOS_ROUNDS", func(n int64) { c.rounds = int(n) }},
		{"CHAOS_FAULTS", func(n int64) { c.faults = int(n) }},
	} {
		s := os.Getenv(v.name)
		if s == "" {
			continue
		}
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			t.Fatalf("%s=%q: %v", v.name, s, err)
		}
		v.set(n)
	}
	return c
}

func TestChaos(t *testing.T) {
	cfg := chaosConfigFromEnv(t)
	harness := harnessPath(t)
	flower := flowerBinary(t)
	for _, fr := range chaosFronts(t) {
		var results []*roundResult
		rounds := cfg.roundsFor(fr)
		for i := 0; i < rounds; i++ {
			seed := cfg.seed + int64(i)
			t.Run(fmt.Sprintf("%s/seed=%d", fr.name(), seed), func(t *testing.T) {
				r := newRound(t, fr, seed, cfg.faults, flower, harness)
				res := r.run()
				results = append(results, res)
				if len(res.broken) > 0 {
					t.Errorf("%d invariant(s) broken; replay this round with:\n  CHAOS_FRONT=%s CHAOS_SEED=%d CHAOS_ROUNDS=1 CHAOS_FAULTS=%d make chaos\n  (or: CHAOS_FRONT=%s CHAOS_SEED=%d CHAOS_ROUNDS=1 CHAOS_FAULTS=%d go test -run 'TestChaos$' -count=1 -v ./integration)",
						len(res.broken), fr.name(), seed, cfg.faults, fr.name(), seed, cfg.faults)
				}
			})
		}
		t.Logf("fault campaign, %s front, seeds %d..%d, %d faults drawn per round:\n%s",
			fr.name(), cfg.seed, cfg.seed+int64(rounds)-1, cfg.faults, summary(results))
	}
}

// chaosFronts are the fronts CHAOS_FRONT names: headless, interactive, or
// both (the default).
func chaosFronts(t *testing.T) []front {
	switch v := os.Getenv("CHAOS_FRONT"); v {
	case "", "both":
		return []front{headless{}, interactive{}}
	case "headless":
		return []front{headless{}}
	case "interactive":
		return []front{interactive{}}
	default:
		t.Fatalf("CHAOS_FRONT=%q: want headless, interactive or both", v)
		return nil
	}
}

// summary is the campaign's figures as a table a person can quote.
func summary(results []*roundResult) string {
	var b strings.Builder
	planned, done := map[faultKind]int{}, map[faultKind]int{}
	sessions, gens, runs, edits, broken := 0, 0, 0, 0, 0
	var degraded, brokenList []string
	var took time.Duration
	fmt.Fprintf(&b, "%-8s %-6s %-9s %-11s %-5s %-8s %-6s %-7s %s\n", "seed", "faults", "sessions", "generations", "runs", "degraded", "edits", "broken", "time")
	for _, r := range results {
		n := 0
		for _, f := range r.faults {
			planned[f.kind]++
			if f.done() {
				done[f.kind]++
				n++
			}
		}
		fmt.Fprintf(&b, "%-8d %-6s %-9d %-11d %-5d %-8d %-6d %-7d %.0fs\n", r.seed, fmt.Sprintf("%d/%d", n, len(r.faults)),
			r.sessions, r.generations, r.runs, len(r.degraded), r.edits, len(r.broken), r.took.Seconds())
		sessions += r.sessions
		gens += r.generations
		runs += r.runs
		edits += r.edits
		broken += len(r.broken)
		degraded = append(degraded, r.degraded...)
		for _, x := range r.broken {
			brokenList = append(brokenList, fmt.Sprintf("seed %d: %s", r.seed, x))
		}
		took += r.took
	}
	fmt.Fprintf(&b, "total: %d rounds, %d sessions, %d generations, %d flower runs, %d degraded successors, %d successors carried a person's edit, %d invariants broken, %.0fs\n",
		len(results), sessions, gens, runs, len(degraded), edits, broken, took.Seconds())
	b.WriteString("faults by kind (injected/planned; a fault is not injected when the job ended before its moment):\n")
	for _, k := range faultKinds {
		fmt.Fprintf(&b, "  %-22s %d/%d\n", k, done[k], planned[k])
	}
	for _, d := range degraded {
		b.WriteString("degraded: " + d + "\n")
	}
	for _, x := range brokenList {
		b.WriteString("broken: " + x + "\n")
	}
	for _, r := range results {
		for _, f := range r.faults {
			fmt.Fprintf(&b, "seed %d: %s: %s\n", r.seed, f, firstNonEmptyStr(f.note, fmt.Sprintf("%d request(s) hit", f.hits)))
		}
	}
	return b.String()
}

func firstNonEmptyStr(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}

// TestChaosDefaultSeeds: the default seeds plan every kind on each front,
// as the campaign's comment promises (a new kind may need a new default
// seed).
func TestChaosDefaultSeeds(t *testing.T) {
	cfg := chaosConfig{seed: 40, faults: 6}
	t.Setenv("CHAOS_SEED", "")
	t.Setenv("CHAOS_ROUNDS", "")
	t.Setenv("CHAOS_FAULTS", "")
	if got := chaosConfigFromEnv(t); got != cfg {
		t.Fatalf("default config %+v, want %+v", got, cfg)
	}
	for _, fr := range []front{headless{}, interactive{}} {
		seen := map[faultKind]bool{}
		for i := 0; i < cfg.roundsFor(fr); i++ {
			for _, f := range planRound(rand.New(rand.NewSource(cfg.seed+int64(i))), fr, cfg.faults) {
				seen[f.kind] = true
			}
		}
		for _, k := range faultKinds {
			if !seen[k] {
				t.Errorf("%s front: the default seeds plan no %q", fr.name(), k)
			}
		}
	}
}
