package checkup

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flowerhq/flower/integration/itest"
)

func geminiResults(t *testing.T, binary string) map[string]Result {
	t.Helper()
	cu := New(Config{Harness: binary})
	out := map[string]Result{}
	for _, r := range cu.Run(context.Background(), GeminiFacts(), 3) {
		t.Logf("%s (%s)", r.Line(), r.Took.Round(1e6))
		out[r.Fact.Name] = r
	}
	return out
}

// TestGeminiFactsHold: every Gemini fact holds on the real Gemini CLI (the
// pinned one under make test, any under make compat).
func TestGeminiFactsHold(t *testing.T) {
	res := geminiResults(t, itest.GeminiPath(t))
	if len(res) != len(GeminiFacts()) {
		t.Fatalf("%d results for %d facts", len(res), len(GeminiFacts()))
	}
	for name, r := range res {
		if !r.OK {
			t.Errorf("%s does not hold: %s", name, r.Detail)
		}
	}
}

// TestGeminiHoldCheckFails: the real CLI behind a wrapper that gives it
// the person's own Gemini home instead of flower's (GEMINI_CLI_HOME
// dropped) compresses at the person's threshold, and the hold's check, and
// only it, says so.
func TestGeminiHoldCheckFails(t *testing.T) {
	real := itest.GeminiPath(t)
	wrapper := filepath.Join(t.TempDir(), "gemini-without-flowers-home")
	if err := os.WriteFile(wrapper, []byte("#!/bin/sh\nunset GEMINI_CLI_HOME\nexec '"+real+"' \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	res := geminiResults(t, wrapper)
	hold := res[FactGeminiHold]
	if hold.OK || !strings.Contains(hold.Detail, "with flower's hold") {
		t.Errorf("the hold's check on a CLI without flower's home: %+v", hold)
	}
	for name, r := range res {
		if name != FactGeminiHold && !r.OK {
			t.Errorf("%s does not hold on the wrapper: %s", name, r.Detail)
		}
	}
}
