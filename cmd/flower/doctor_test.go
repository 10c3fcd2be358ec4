package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flowerhq/flower/checkup"
	"github.com/flowerhq/flower/harness/harnesstest"
	"github.com/flowerhq/flower/integration/itest"
)

// leversPending are the facts that hold only once flower starts the harness
// with its compaction levers (a --settings that keeps compaction off and a
// PreCompact hook that blocks it, DESIGN.md «Compaction levers»). While a
// run's launch carries no --settings of flower's they are printed and not
// required; once it does, they are required like every other fact.
func leversPending(t *testing.T) map[string]bool {
	t.Helper()
	on, err := checkup.New(checkup.Config{Harness: "claude"}).HoldsCompactionOff()
	if err != nil {
		t.Fatal(err)
	}
	pending := map[string]bool{}
	for _, f := range checkup.CompactionFacts {
		pending[f] = !on
	}
	return pending
}

// doctor runs flower doctor in-process with env and returns its output and
// error.
func doctor(t *testing.T, env []string, args ...string) (string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	err := runIn(context.Background(), append([]string{"flower", "doctor"}, args...), proc{stdin: strings.NewReader(""), stdout: &out, stderr: &errOut, env: env})
	t.Logf("flower doctor:\n%s%s", out.String(), errOut.String())
	return out.String(), err
}

// factLines maps each fact to its line of the doctor's output.
func factLines(t *testing.T, out string) map[string]string {
	t.Helper()
	return factLinesOf(t, out, checkup.Facts())
}

// factLinesOf maps each of facts to its line of the doctor's output.
func factLinesOf(t *testing.T, out string, facts []checkup.Fact) map[string]string {
	t.Helper()
	lines := map[string]string{}
	for _, f := range facts {
		for _, l := range strings.Split(out, "\n") {
			if strings.HasPrefix(l, "✓ "+f.Name+" (") || strings.HasPrefix(l, "✗ "+f.Name+" (") {
				lines[f.Name] = l
			}
		}
		if !strings.Contains(lines[f.Name], "(DESIGN.md «"+f.Section+"»)") {
			t.Errorf("no line for fact %q with its section: %q", f.Name, lines[f.Name])
		}
	}
	return lines
}

// TestDoctorOnTheRealHarness: every fact holds on the harness make test
// installs, and the doctor says so with exit status 0.
//
// Not parallel: runIn runs urfave/cli, whose help flag is one value shared
// by every app in the process.
func TestDoctorOnTheRealHarness(t *testing.T) {
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "TMPDIR=" + os.TempDir()}
	out, err := doctor(t, env, "--harness", realHarness(t))
	leversPending := leversPending(t)
	pending := 0
	for name, l := range factLines(t, out) {
		switch {
		case strings.HasPrefix(l, "✓ "):
		case leversPending[name]:
			pending++
			t.Logf("pending the compaction levers: %s", l)
		default:
			t.Errorf("a fact does not hold: %s", l)
		}
	}
	if pending == 0 && err != nil {
		t.Errorf("every fact holds, but the doctor returned %v (exit %d)", err, exitCode(err))
	}
	if pending > 0 && exitCode(err) != exitFailed {
		t.Errorf("facts do not hold, but the doctor returned %v (exit %d)", err, exitCode(err))
	}
}

// TestDoctorNamesTheBrokenFact: a stand-in for the harness that breaks one
// fact (the real harness behind the fake, its assistant lines' usage
// missing cache_read_input_tokens) makes the doctor exit non-zero with
// that fact, and no other, not ok. Asked for --json, it says so as one
// object, with every fact's section, detail and time.
func TestDoctorNamesTheBrokenFact(t *testing.T) {
	real := realHarness(t)
	env := append(harnesstest.Env(harnesstest.ModeProxy, harnesstest.EnvReal+"="+real), "HOME="+t.TempDir())
	out, err := doctor(t, env, "--json", "--harness", os.Args[0])
	leversPending := leversPending(t)
	if code := exitCode(err); code != exitFailed {
		t.Fatalf("the doctor exited %d (%v) on a harness that breaks a fact, want %d", code, err, exitFailed)
	}
	rep := doctorJSON(t, out, checkup.Facts())
	if rep.OK || rep.Kind != kindClaude || rep.Harness != os.Args[0] || rep.Why == "" || !strings.Contains(rep.Key, "API key") {
		t.Errorf("the report's head: %+v", rep)
	}
	for _, f := range rep.Facts {
		broken := f.Name == checkup.FactAssistant
		switch {
		case broken && f.OK:
			t.Errorf("the broken fact is not marked: %+v", f)
		case broken && !strings.Contains(f.Detail, "usage"):
			t.Errorf("the broken fact does not say what broke: %+v", f)
		case !broken && !leversPending[f.Name] && !f.OK:
			t.Errorf("a fact the stand-in keeps is marked broken: %+v", f)
		}
	}
}

// doctorJSON reads flower doctor --json's output, which must be one JSON
// object and nothing else, with facts in order, each with its section.
func doctorJSON(t *testing.T, out string, facts []checkup.Fact) doctorReport {
	t.Helper()
	var rep doctorReport
	dec := json.NewDecoder(strings.NewReader(out))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&rep); err != nil || dec.More() {
		t.Fatalf("doctor --json is not one object (%v):\n%s", err, out)
	}
	if len(rep.Facts) != len(facts) {
		t.Fatalf("doctor --json has %d facts, want %d", len(rep.Facts), len(facts))
	}
	for i, f := range facts {
		if got := rep.Facts[i]; got.Name != f.Name || got.Section != f.Section || got.Detail == "" || got.TookMS < 0 {
			t.Errorf("fact %d: %+v, want %s «%s»", i, got, f.Name, f.Section)
		}
	}
	return rep
}

// Bad input is a usage error that says what is wrong; a harness that is
// not there is named, and nothing is checked.
func TestDoctorBadInput(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
		code int
	}{
		{[]string{"extra"}, "doctor takes no arguments", exitUsage},
		{[]string{"--parallel", "0"}, "--parallel must be at least 1", exitUsage},
		{[]string{"--harness", "/nonexistent/claude"}, "/nonexistent/claude", exitUsage},
	} {
		out, err := doctor(t, []string{"PATH=/nonexistent"}, tc.args...)
		if exitCode(err) != tc.code || err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("doctor %q: %v (exit %d), want exit %d saying %q", tc.args, err, exitCode(err), tc.code, tc.want)
		}
		if strings.Contains(out, "✓") || strings.Contains(out, "✗") {
			t.Errorf("doctor %q checked something: %s", tc.args, out)
		}
	}
}

// fakeHarness is a script at dir/name that answers --version with answer
// and fails everything else.
func fakeHarness(t *testing.T, dir, name, answer string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	body := "#!/bin/sh\nif [ \"$1\" = --version ]; then echo '" + answer + "'; exit 0; fi\nexit 1\n"
	if err := os.WriteFile(p, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestDoctorPicksTheCodexFacts: --harness-kind codex, FLOWER_HARNESS_KIND
// and a --harness whose --version says codex-cli each make the doctor
// check the Codex facts, and only those; on a stand-in that runs no
// app-server they fail, and the doctor says so.
func TestDoctorPicksTheCodexFacts(t *testing.T) {
	dir := t.TempDir()
	standIn := fakeHarness(t, dir, "h", "agent 1.0")
	codexLike := fakeHarness(t, dir, "some-agent", "codex-cli 0.171.0")
	for _, tc := range []struct {
		name, kindEnv string
		args          []string
	}{
		{"flag", "", []string{"--harness-kind", "codex", "--harness", standIn}},
		{"environment", "codex", []string{"--harness", standIn}},
		{"detected", "", []string{"--harness", codexLike}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(envHarnessKind, tc.kindEnv)
			out, err := doctor(t, []string{"PATH=/nonexistent"}, tc.args...)
			if exitCode(err) != exitFailed {
				t.Errorf("doctor on a stand-in: %v (exit %d), want exit %d", err, exitCode(err), exitFailed)
			}
			for name, l := range factLinesOf(t, out, checkup.CodexFacts()) {
				if name == checkup.FactSchema && !strings.HasPrefix(l, "✗ ") {
					t.Errorf("a stand-in with no schema passed: %s", l)
				}
			}
			if !strings.Contains(out, "(the Codex CLI, ") || strings.Contains(out, checkup.FactInit) {
				t.Errorf("not the Codex CLI's checks alone:\n%s", out)
			}
		})
	}
	out, err := doctor(t, []string{"PATH=/nonexistent"}, "--json", "--harness-kind", "codex", "--harness", standIn)
	if exitCode(err) != exitFailed {
		t.Errorf("doctor --json on a stand-in: %v (exit %d), want exit %d", err, exitCode(err), exitFailed)
	}
	if rep := doctorJSON(t, out, checkup.CodexFacts()); rep.OK || rep.Kind != kindCodex || rep.Key != codexKeyLine {
		t.Errorf("doctor --json on a stand-in: %+v", rep)
	}
}

// A kind given over a binary of the other kind is refused in one line
// before anything starts, by doctor and version as by a run, and a kind given before
// the command counts as one given after it.
func TestKindAndBinaryThatDisagreeAreRefused(t *testing.T) {
	dir := t.TempDir()
	claudeLike := fakeHarness(t, dir, "h", "2.1.328 (Claude Code)")
	codexLike := fakeHarness(t, dir, "c", "codex-cli 0.171.0")
	t.Setenv(envHarnessKind, "")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"doctor", "--harness-kind", "codex", "--harness", claudeLike}, "--harness-kind codex, but " + claudeLike + " is the Claude Code CLI (its --version says \"2.1.328 (Claude Code)\"): name the Codex CLI with --harness"},
		{[]string{"--harness-kind", "codex", "--harness", claudeLike, "doctor"}, "--harness-kind codex, but " + claudeLike + " is the Claude Code CLI"},
		{[]string{"--harness-kind", "claude", "--harness", codexLike, "a task"}, "--harness-kind claude, but " + codexLike + " is the Codex CLI (its --version says \"codex-cli 0.171.0\")"},
		{[]string{"--harness-kind", "codex", "--harness", claudeLike, "version", "--json"}, "--harness-kind codex, but " + claudeLike + " is the Claude Code CLI"},
	} {
		var out bytes.Buffer
		start := time.Now()
		err := runIn(context.Background(), append([]string{"flower"}, tc.args...), proc{stdin: strings.NewReader(""), stdout: &out, stderr: &out,
			env: []string{"PATH=/nonexistent", "HOME=" + t.TempDir()}})
		if exitCode(err) != exitUsage || err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("flower %q: %v (exit %d), want exit %d and %q\n%s", tc.args, err, exitCode(err), exitUsage, tc.want, out.String())
		}
		if strings.Contains(out.String(), "✓") || strings.Contains(out.String(), "✗") {
			t.Errorf("flower %q checked something before refusing:\n%s", tc.args, out.String())
		}
		t.Logf("refused in %v", time.Since(start))
	}
}

// TestDoctorOnTheRealCodex: every Codex fact holds on the Codex CLI make
// test installs, checked by a built flower (its own hook), which exits 0.
func TestDoctorOnTheRealCodex(t *testing.T) {
	codex := itest.CodexPath(t)
	cmd := exec.Command(flowerBinary(t), "doctor", "--harness-kind", "codex", "--harness", codex)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "TMPDIR=" + os.TempDir()}
	out, err := cmd.CombinedOutput()
	t.Logf("flower doctor:\n%s", out)
	if err != nil {
		t.Errorf("flower doctor --harness-kind codex: %v", err)
	}
	for name, l := range factLinesOf(t, string(out), checkup.CodexFacts()) {
		if !strings.HasPrefix(l, "✓ ") {
			t.Errorf("%s does not hold: %s", name, l)
		}
	}
}

// TestDoctorOnTheRealGemini: every Gemini fact holds on the Gemini CLI
// make test installs, checked by a built flower, which exits 0.
func TestDoctorOnTheRealGemini(t *testing.T) {
	bin := itest.GeminiPath(t)
	cmd := exec.Command(flowerBinary(t), "doctor", "--harness-kind", "gemini", "--harness", bin)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "TMPDIR=" + os.TempDir()}
	out, err := cmd.CombinedOutput()
	t.Logf("flower doctor:\n%s", out)
	if err != nil {
		t.Errorf("flower doctor --harness-kind gemini: %v", err)
	}
	for name, l := range factLinesOf(t, string(out), checkup.GeminiFacts()) {
		if !strings.HasPrefix(l, "✓ ") {
			t.Errorf("%s does not hold: %s", name, l)
		}
	}
}
