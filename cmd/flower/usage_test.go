package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Every usage error has one shape, at every level: one line, exit 2, no
// help printed unasked, nothing made on disk.
func TestUsageErrorsOneShape(t *testing.T) {
	ws := t.TempDir()
	t.Setenv("FLOWER_PS_DIR", t.TempDir())
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"ps", "--jsn"}, "unknown flag --jsn (see flower ps --help)"},
		{[]string{"ps", "-x"}, "unknown flag -x (see flower ps --help)"},
		{[]string{"status", "--jsn"}, "unknown flag --jsn (see flower ps --help)"},
		{[]string{"show", "--bogus"}, "unknown flag --bogus (see flower show --help)"},
		{[]string{"logs", "--bogus"}, "unknown flag --bogus"},
		{[]string{"continue", "--bogus"}, "unknown flag --bogus"},
		{[]string{"stop", "--bogus"}, "unknown flag --bogus"},
		{[]string{"handoff", "set", "--bogus"}, "unknown flag --bogus"},
		{[]string{"worker", "--temporal", "127.0.0.1:1"}, "flower worker needs --task-queue"},
		{[]string{"--max-duration", "8", "x"}, "--max-duration 8 needs a unit, e.g. 8h or 30m"},
		{[]string{"run", "--max-wait", "90", "x"}, "--max-wait 90 needs a unit"},
		{[]string{"ps", "-w", "--interval", "2", "x"}, "--interval 2 needs a unit"},
		{[]string{"--turn-timeout", "soon", "x"}, `--turn-timeout "soon" is not a duration`},
		{[]string{"--window", "200x", "x"}, "200K or 1M"},
		{[]string{"--window", "0k", "x"}, "--window must be at least 1, got 0"},
		{[]string{"help", "nosuch"}, "flower help lists the commands"},
		// A size with its unit parses: the run gets as far as the harness.
		{[]string{"--harness", "/nonexistent/claude", "--window", "200k", "--headroom", "0.02M", "--task-carry", "1K", "x"}, "/nonexistent/claude"},
	} {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			var stdout, stderr strings.Builder
			err := run(context.Background(), append([]string{"flower", "-C", ws}, tt.args...), strings.NewReader(""), &stdout, &stderr)
			if code := exitCode(err); code != exitUsage {
				t.Fatalf("exit %d (%v), want %d", code, err, exitUsage)
			}
			if msg := err.Error(); !strings.Contains(msg, tt.want) || strings.Contains(msg, "\n") {
				t.Errorf("error %q: want one line containing %q", msg, tt.want)
			}
			if stdout.Len()+stderr.Len() > 0 {
				t.Errorf("printed besides the error:\n%s%s", stdout.String(), stderr.String())
			}
			if _, err := os.Stat(filepath.Join(ws, ".flower")); err == nil {
				t.Errorf("a usage error made %s", filepath.Join(ws, ".flower"))
			}
		})
	}
}

// A variable's bad value is one line naming the variable, a duration's
// unit said; sizes in variables take K and M too (the relay reads them).
func TestUsageErrorsOfVariables(t *testing.T) {
	for _, tt := range []struct{ name, value, want string }{
		{"FLOWER_MAX_DURATION", "8", "FLOWER_MAX_DURATION=8 needs a unit, e.g. 8h or 30m"},
		{"FLOWER_MAX_WAIT", "soon", `FLOWER_MAX_WAIT="soon" is not a duration`},
		{"FLOWER_WINDOW", "abc", `FLOWER_WINDOW="abc": want a whole number such as 200000, 200K or 1M`},
		{"FLOWER_WINDOW", "0k", "FLOWER_WINDOW must be at least 1, got 0"},
	} {
		t.Run(tt.name+"="+tt.value, func(t *testing.T) {
			t.Setenv(tt.name, tt.value)
			var stdout, stderr strings.Builder
			err := run(context.Background(), []string{"flower", "-C", t.TempDir(), "--harness", os.Args[0], "a task"}, strings.NewReader(""), &stdout, &stderr)
			if code := exitCode(err); code != exitUsage || !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("exit %d (%v), want %d and one line with %q", code, err, exitUsage, tt.want)
			}
		})
	}
	env := func(v string) func(string) string { return func(string) string { return v } }
	if n, ok, err := envNumber(numberRules[0], env("200k")); err != nil || !ok || n != 200000 {
		t.Errorf("relay FLOWER_WINDOW=200k: %d, %v, %v", n, ok, err)
	}
}

// Sizes take K and M, as flower prints them.
func TestParseSize(t *testing.T) {
	for in, want := range map[string]int{"200000": 200000, "200k": 200000, "200K": 200000, "1M": 1000000, "1.5m": 1500000, "-5": -5, "0k": 0} {
		if got, err := parseSize(in); err != nil || got != want {
			t.Errorf("parseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "k", "200x", "1.5", "0.0001K", "1e9M", "NaNk"} {
		if got, err := parseSize(in); err == nil {
			t.Errorf("parseSize(%q) = %d, want an error", in, got)
		}
	}
}

// With no harness anywhere a run is a usage error (the README's "Exit codes":
// no harness found exits 2), and version says so without failing.
func TestNoHarnessFound(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	t.Setenv("FLOWER_HARNESS", "")
	var stdout, stderr strings.Builder
	err := run(context.Background(), []string{"flower", "-C", t.TempDir(), "a task of words"}, strings.NewReader(""), &stdout, &stderr)
	if code := exitCode(err); code != exitUsage || !strings.Contains(err.Error(), "no harness found") {
		t.Errorf("exit %d (%v), want %d and no harness found", code, err, exitUsage)
	}
	stdout.Reset()
	if err := run(context.Background(), []string{"flower", "version"}, strings.NewReader(""), &stdout, &stderr); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stdout.String(), "harness: no harness found") {
		t.Errorf("flower version without a harness:\n%s", stdout.String())
	}
}

// flower help [COMMAND] shows help; flower --version, -V and version print
// flower's build and the real harness's version; status and list are ps,
// resume is continue.
func TestWordsNotTasks(t *testing.T) {
	h := realHarness(t)
	t.Setenv("FLOWER_PS_DIR", t.TempDir())
	out := func(args ...string) string {
		t.Helper()
		var stdout, stderr strings.Builder
		if err := run(context.Background(), append([]string{"flower"}, args...), strings.NewReader(""), &stdout, &stderr); err != nil {
			t.Fatalf("flower %v: %v\n%s", args, err, stderr.String())
		}
		return stdout.String()
	}
	if got := out("help"); !strings.Contains(got, "COMMANDS:") || !strings.Contains(got, "stop") {
		t.Errorf("flower help:\n%s", got)
	}
	if got := out("help", "stop"); !strings.HasPrefix(got, "NAME:\n   flower stop - ") {
		t.Errorf("flower help stop:\n%s", got)
	}
	for _, args := range [][]string{{"--version"}, {"-V"}, {"version"}, {"version", "--harness", h}} {
		got := out(args...)
		if !strings.HasPrefix(got, "flower ") || !strings.Contains(got, "go1.") || !strings.Contains(got, "harness: 2.1.") || !strings.Contains(got, "(Claude Code) "+h) {
			t.Errorf("flower %v:\n%s", args, got)
		}
	}
	if ps, status, list := out("ps", "--json"), out("status", "--json"), out("list", "--json"); status != ps || list != ps {
		t.Errorf("ps %q, status %q, list %q", ps, status, list)
	}
	empty := t.TempDir()
	var e1, e2 strings.Builder
	errC := run(context.Background(), []string{"flower", "continue", "-C", empty}, strings.NewReader(""), &e1, &e1)
	errR := run(context.Background(), []string{"flower", "resume", "-C", empty}, strings.NewReader(""), &e2, &e2)
	if errC == nil || errR == nil || errC.Error() != errR.Error() || exitCode(errR) != exitUsage {
		t.Errorf("continue: %v; resume: %v", errC, errR)
	}
}
