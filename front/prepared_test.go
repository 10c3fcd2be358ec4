package front_test

import (
	"testing"

	"github.com/flowerhq/flower/front"
)

// TestPreparedFillsWhatAFrontLeaves: a front with no Prepare, or one whose
// Prepare gives no arguments or environment, starts its harness with the
// person's arguments and the run's environment as they are.
func TestPreparedFillsWhatAFrontLeaves(t *testing.T) {
	r := front.Run{Args: []string{"--x"}, Env: []string{"A=1"}}
	for name, c := range map[string]front.Capabilities{
		"no Prepare":    {},
		"a bare answer": {Prepare: func(front.Run) (front.Prepared, error) { return front.Prepared{Window: 5}, nil }},
	} {
		p, err := c.Prepared(r)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got := p.Args(&front.Hold{}); len(got) != 1 || got[0] != "--x" || len(p.Env) != 1 || p.Env[0] != "A=1" {
			t.Errorf("%s: args %q, env %q; want the run's", name, got, p.Env)
		}
	}
}
