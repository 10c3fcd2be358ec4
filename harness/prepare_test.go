package harness

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/flowerhq/flower/envinject"
	"github.com/flowerhq/flower/front"
	"github.com/flowerhq/flower/levers"
	"github.com/flowerhq/flower/policy"
)

// TestPrepare: the Claude Code fronts' Prepare holds what the engine only
// asks for. With a Hold, a start's one --settings carries the levers and
// the hook, merged over the person's; without, only the held endpoint. The
// environment holds auto-compact and self-update off; an explicit "auto"
// gives its notice; a bad --settings fails before any start.
func TestPrepare(t *testing.T) {
	ws := t.TempDir()
	env := []string{"PATH=/nonexistent", "ANTHROPIC_BASE_URL=http://127.0.0.1:9", "DISABLE_AUTO_COMPACT=0"}
	own := []string{"--allowedTools", "Read", "--settings", `{"env":{"MINE":"yes"}}`}
	p, err := Prepare(front.Run{Args: own, Env: env, Workspace: ws, Handoff: true})
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := envinject.Lookup(p.Env, envinject.DisableAutoCompact); v != "1" {
		t.Errorf("env DISABLE_AUTO_COMPACT=%q, want 1", v)
	}
	if v, _ := envinject.Lookup(p.Env, "DISABLE_AUTOUPDATER"); v != "1" {
		t.Errorf("env DISABLE_AUTOUPDATER=%q, want 1", v)
	}
	if p.Notice != "" {
		t.Errorf("notice %q for the default mode", p.Notice)
	}
	if p.Window != 1_000_000 {
		t.Errorf("window guess %d with no model, want 1M", p.Window)
	}
	held := p.Args(&front.Hold{Hook: []string{"/bin/flower", "hook", "precompact"}})
	if !slices.Equal(held[:2], own[:2]) {
		t.Errorf("held args %q lost the person's flags", held)
	}
	m := settingsOf(t, held)
	e := m["env"].(map[string]any)
	if e["MINE"] != "yes" || e[levers.EndpointKey] != "http://127.0.0.1:9" || e[envinject.DisableAutoCompact] != "1" || m["autoCompactEnabled"] != false {
		t.Errorf("held settings %v: want the person's env, the endpoint, and the levers", m)
	}
	if hooks, _ := m["hooks"].(map[string]any); hooks == nil || !strings.Contains(settingsText(t, held), "precompact") {
		t.Errorf("held settings %v: no PreCompact hook of flower's", m)
	}
	m = settingsOf(t, p.Args(nil))
	if _, there := m["autoCompactEnabled"]; there {
		t.Errorf("unheld settings %v carry the levers", m)
	}
	if e := m["env"].(map[string]any); e["MINE"] != "yes" || e[levers.EndpointKey] != "http://127.0.0.1:9" {
		t.Errorf("unheld settings %v: want the person's env and the held endpoint", m)
	}

	p, err = Prepare(front.Run{Env: env, Workspace: ws, Model: "claude-haiku-4-5", Compact: policy.CompactAuto, Handoff: true})
	if p.Window != 200_000 {
		t.Errorf("window guess %d for --model claude-haiku-4-5, want 200k", p.Window)
	}
	if err != nil || !strings.Contains(p.Notice, "auto-compact stays on") {
		t.Errorf("compact auto: notice %q, %v", p.Notice, err)
	}
	if _, there := envinject.Lookup(p.Env, envinject.DisableAutoCompact); there {
		t.Errorf("compact auto: an inherited DISABLE_AUTO_COMPACT is left in")
	}

	_, err = Prepare(front.Run{Args: []string{"--settings", "missing.json"}, Env: env, Workspace: ws, Handoff: true})
	if !errors.Is(err, levers.ErrSettings) {
		t.Errorf("a missing --settings: %v, want ErrSettings", err)
	}
}

func settingsOf(t *testing.T, args []string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(settingsText(t, args)), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func settingsText(t *testing.T, args []string) string {
	t.Helper()
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, "--settings="); ok {
			return v
		}
	}
	t.Fatalf("no --settings= in %q", args)
	return ""
}
