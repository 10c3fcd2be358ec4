package main

import (
	"bytes"
	"context"
	"regexp"
	"strings"
	"testing"
)

// defaultWord finds the places a flag's help line states a default.
var defaultWord = regexp.MustCompile(`(?i)\bdefault\b`)

// TestHelp: the help of flower and of each command, as a person reads it.
// Every flag states its default at most once (a zero that means "ask the
// harness" or "none" says so instead of "(default: 0)").
func TestHelp(t *testing.T) {
	for _, cmd := range []string{"", "run", "continue", "rerun", "show", "logs", "ps", "ui", "demo", "worker", "submit", "doctor", "stop", "version"} {
		name := cmd
		if name == "" {
			name = "flower"
		}
		t.Run(name, func(t *testing.T) {
			args := []string{"flower", "--help"}
			if cmd != "" {
				args = []string{"flower", cmd, "--help"}
			}
			var out, errOut bytes.Buffer
			if err := run(context.Background(), args, strings.NewReader(""), &out, &errOut); err != nil {
				t.Fatalf("%v: %v\n%s", args, err, errOut.String())
			}
			flags := 0
			for _, l := range strings.Split(out.String(), "\n") {
				if !strings.HasPrefix(strings.TrimSpace(l), "--") {
					continue
				}
				flags++
				if n := len(defaultWord.FindAllString(l, -1)); n > 1 {
					t.Errorf("a flag states %d defaults: %s", n, strings.TrimSpace(l))
				}
			}
			if flags == 0 {
				t.Fatalf("no flags in the help of %v:\n%s", args, out.String())
			}
			golden(t, "help_"+name+".golden", out.Bytes())
		})
	}
}
