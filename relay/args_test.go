package relay

import (
	"slices"
	"testing"

	"github.com/flowerhq/flower/front"
)

func TestWanted(t *testing.T) {
	for _, c := range []struct {
		args []string
		want bool
	}{
		{[]string{"--output-format", "stream-json", "--verbose", "--input-format", "stream-json"}, true},
		{[]string{"--input-format=stream-json"}, true},
		{[]string{"--input-format", "text"}, false},
		{[]string{"run", "fix the tests", "--", "--input-format"}, false},
		{nil, false},
	} {
		if got := Wanted(c.args); got != c.want {
			t.Errorf("Wanted(%q) = %v, want %v", c.args, got, c.want)
		}
	}
}

func TestWithoutSession(t *testing.T) {
	in := []string{"--verbose", "--resume=abc", "--model=m", "--session-id", "s1", "--continue", "--fork-session",
		"--resume-session-at=u1", "-r", "x", "--max-turns=5"}
	want := []string{"--verbose", "--model=m", "--max-turns=5"}
	if got := withoutSession(in); !slices.Equal(got, want) {
		t.Errorf("withoutSession = %q, want %q", got, want)
	}
}

func TestValueAndReplace(t *testing.T) {
	args := []string{"--max-turns=9", "--model", "haiku", "--max-turns", "7"}
	if v, ok := Value(args, "--max-turns"); !ok || v != "7" {
		t.Errorf("Value = %q %v, want the last one, 7", v, ok)
	}
	if v, ok := Value(args, "--model"); !ok || v != "haiku" {
		t.Errorf("Value(--model) = %q %v", v, ok)
	}
	if _, ok := Value(args, "--resume"); ok {
		t.Error("an absent flag was found")
	}
	got := Replace(args, "--max-turns", "3")
	want := []string{"--max-turns=3", "--model", "haiku", "--max-turns=3"}
	if !slices.Equal(got, want) {
		t.Errorf("Replace = %q, want %q", got, want)
	}
	if got := Replace([]string{"--verbose"}, "--max-turns", "3"); !slices.Equal(got, []string{"--verbose"}) {
		t.Errorf("Replace added an absent flag: %q", got)
	}
}

func TestLeft(t *testing.T) {
	if got := leftTurns("10", 4); got != "6" {
		t.Errorf("leftTurns = %s", got)
	}
	if got := leftTurns("3", 9); got != "1" {
		t.Errorf("leftTurns past the budget = %s, want 1", got)
	}
	if got := leftBudget("2.5", 1); got != "1.5" {
		t.Errorf("leftBudget = %s", got)
	}
	if got := leftBudget("1", 3); got != "0.01" {
		t.Errorf("leftBudget past the budget = %s, want 0.01", got)
	}
}

// A successor starts fresh with what the cut turn left of the app's
// budgets; a retry resumes its own session.
func TestArgsFor(t *testing.T) {
	r := New(Config{Args: []string{"--verbose", "--resume=A", "--max-turns=10", "--max-budget-usd", "2", "--fork-session"}})
	r.usedTurns, r.usedCost = 4, 0.5
	if got := r.argsFor(kindFirst, front.Spec{}); !slices.Equal(got, r.cfg.Args) {
		t.Errorf("first launch: %q, want the app's arguments as given", got)
	}
	want := []string{"--verbose", "--max-turns=6", "--max-budget-usd=1.5"}
	if got := r.argsFor(kindSuccessor, front.Spec{Generation: 2}); !slices.Equal(got, want) {
		t.Errorf("successor: %q, want %q", got, want)
	}
	want = []string{"--verbose", "--max-turns=6", "--max-budget-usd=1.5", "--resume=B"}
	if got := r.argsFor(kindRetry, front.Spec{Generation: 2, Resume: "B"}); !slices.Equal(got, want) {
		t.Errorf("retry: %q, want %q", got, want)
	}
}
