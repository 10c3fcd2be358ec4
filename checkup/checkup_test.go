package checkup

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// One line per fact, ✓ or ✗, naming the fact and its DESIGN.md section;
// a failure's reason is kept on that one line.
func TestResultLine(t *testing.T) {
	f := Fact{Name: "interrupt", Section: "Interrupt", check: func(context.Context, *Checkup) (string, error) {
		return "", errors.New("no result\nafter the interrupt")
	}}
	r := New(Config{}).One(context.Background(), f)
	if r.OK {
		t.Fatal("a failing check reported OK")
	}
	if got, want := r.Line(), "✗ interrupt (DESIGN.md «Interrupt»): no result after the interrupt"; got != want {
		t.Errorf("line %q, want %q", got, want)
	}
	f.check = func(context.Context, *Checkup) (string, error) { return "fine", nil }
	if got := New(Config{}).One(context.Background(), f).Line(); got != "✓ interrupt (DESIGN.md «Interrupt»): fine" {
		t.Errorf("line %q", got)
	}
}

// Every fact has a name of its own in its list, and a section.
func TestFactsAreNamedOnce(t *testing.T) {
	for _, facts := range [][]Fact{Facts(), CodexFacts()} {
		seen := map[string]bool{}
		for _, f := range facts {
			if f.Name == "" || f.Section == "" || f.check == nil || seen[f.Name] || strings.ContainsAny(f.Name, "()") {
				t.Errorf("fact %+v: want a unique name without parentheses, a section and a check", f)
			}
			seen[f.Name] = true
		}
	}
	seen := map[string]bool{}
	for _, f := range Facts() {
		seen[f.Name] = true
	}
	for _, name := range CompactionFacts {
		if !seen[name] {
			t.Errorf("compaction fact %q is not in the list", name)
		}
	}
}
