package checkup

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flowerhq/flower/integration/itest"
)

// flower is built once, for the hook the Codex checks give Codex.
var flower itest.Flower

func TestMain(m *testing.M) {
	code := m.Run()
	flower.Remove()
	os.Exit(code)
}

// codexResults runs every Codex fact on the codex at binary, with a built
// flower as the hook.
func codexResults(t *testing.T, binary string) map[string]Result {
	t.Helper()
	cu := New(Config{Harness: binary, Flower: flower.Path(t)})
	out := map[string]Result{}
	for _, r := range cu.Run(context.Background(), CodexFacts(), 3) {
		t.Logf("%s (%s)", r.Line(), r.Took.Round(1e6))
		out[r.Fact.Name] = r
	}
	return out
}

// TestCodexFactsHold: every Codex fact holds on the real Codex CLI (the
// pinned one under make test, any under make compat).
func TestCodexFactsHold(t *testing.T) {
	for name, r := range codexResults(t, itest.CodexPath(t)) {
		if !r.OK {
			t.Errorf("%s does not hold: %s", name, r.Detail)
		}
	}
}

// TestCodexHoldCheckFails: the real Codex CLI behind a wrapper that drops
// flower's -c override of the auto-compact limit (the post-turn threshold
// and the hook it keeps) compacts at the person's limit, and the hold's
// check, and only it, says so.
func TestCodexHoldCheckFails(t *testing.T) {
	real := itest.CodexPath(t)
	wrapper := filepath.Join(t.TempDir(), "codex-without-the-limit")
	script := `#!/bin/bash
args=()
while [ $# -gt 0 ]; do
  if [ "$1" = -c ] && [[ "$2" == model_auto_compact_token_limit=* ]]; then shift 2; continue; fi
  args+=("$1"); shift
done
exec '` + real + `' "${args[@]}"
`
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, r := range codexResults(t, wrapper) {
		switch {
		case name == FactCodexHold && r.OK:
			t.Errorf("the hold's check passed without the hold: %s", r.Detail)
		case name == FactCodexHold && !strings.Contains(r.Detail, "compaction requests reached the model"):
			t.Errorf("the hold's check does not say what broke: %s", r.Detail)
		case name != FactCodexHold && !r.OK:
			t.Errorf("%s failed, though the wrapper keeps it: %s", name, r.Detail)
		}
	}
}

// A binary whose --version is not the Codex CLI's fails the version's
// check, naming what it said.
func TestCodexVersionCheckFails(t *testing.T) {
	fake := filepath.Join(t.TempDir(), "codex")
	if err := os.WriteFile(fake, []byte("#!/bin/sh\necho '2.1.328 (Claude Code)'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	var version Fact
	for _, f := range CodexFacts() {
		if f.Name == FactVersion {
			version = f
		}
	}
	r := New(Config{Harness: fake}).One(context.Background(), version)
	if r.OK || !strings.Contains(r.Detail, "2.1.328 (Claude Code)") {
		t.Fatalf("version check on a fake: %s", r.Line())
	}
}

// A hook that answers nothing (/bin/true in flower's place) stops no
// compaction, and the hook's check says the turn was not stopped.
func TestCodexHookCheckFails(t *testing.T) {
	var hook Fact
	for _, f := range CodexFacts() {
		if f.Name == FactCodexHook {
			hook = f
		}
	}
	r := New(Config{Harness: itest.CodexPath(t), Flower: "/bin/true"}).One(context.Background(), hook)
	t.Log(r.Line())
	if r.OK || !strings.Contains(r.Detail, "the turn past the threshold ended") {
		t.Fatalf("hook check with a hook that does not stop: %s", r.Line())
	}
}

// The arguments a run gives app-server come after flower's own: a
// person's -c of the auto-compact limit wins over the hold, and the hold's
// check says Codex compacted.
func TestCodexArgsReachTheChecks(t *testing.T) {
	var hold Fact
	for _, f := range CodexFacts() {
		if f.Name == FactCodexHold {
			hold = f
		}
	}
	cu := New(Config{Harness: itest.CodexPath(t), Args: []string{"-c", "model_auto_compact_token_limit=100000"}})
	if r := cu.One(context.Background(), hold); r.OK || !strings.Contains(r.Detail, "compaction requests reached the model") {
		t.Fatalf("the hold's check with the person's limit given after flower's: %s", r.Line())
	}
}

// Codex's environment keeps nothing that could carry a key, point it
// elsewhere or reach the person's own configuration.
func TestCodexEnv(t *testing.T) {
	got := codexEnv([]string{"OPENAI_API_KEY=sk-real", "https_proxy=http://p", "CODEX_HOME=/mine", "HOME=/root",
		"XDG_CONFIG_HOME=/c", "PATH=/bin", "LANG=C"}, "/tmp/h")
	if want := []string{"PATH=/bin", "LANG=C", "HOME=/tmp/h"}; strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("codexEnv: %q, want %q", got, want)
	}
}
