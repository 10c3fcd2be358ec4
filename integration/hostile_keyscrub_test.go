package integration_test

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/flowerhq/flower/scriptedapi"
)

// The model's tools do not see the API key (DESIGN.md «Held harness»): a
// command the model runs prints the environment, and what it printed, as
// the next request carries it back, holds no key; control: the command
// ran and printed the environment.
func TestToolsCannotReadTheKey(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	if err := os.Mkdir(filepath.Join(ws, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var printed []string
	srv := startServer(t, func(r *scriptedapi.Request) scriptedapi.Reply {
		if r.Kind != scriptedapi.KindMain {
			return scriptedapi.Harmless(r)
		}
		if len(r.LastToolResults) == 0 {
			return scriptedapi.Reply{ToolUses: []scriptedapi.ToolUse{{Name: "Bash", Input: map[string]any{"command": "env", "description": "Show the environment"}}}, Usage: usage(20_000)}
		}
		mu.Lock()
		for _, tr := range r.LastToolResults {
			printed = append(printed, tr.Content)
		}
		mu.Unlock()
		return done(30_000)
	})
	env := stateEnv(t, harnessEnv(t, srv, "FLOWER_HARNESS="+harnessPath(t), "CLAUDE_CODE_SUBPROCESS_ENV_SCRUB=1"))
	code, out := flowerCmd(t, env, ws, "-C", ws, "--window", "200000", hostileTask, "--", "--allowedTools", "Bash")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, out)
	}
	mu.Lock()
	all := strings.Join(printed, "\n")
	mu.Unlock()
	if !strings.Contains(all, "PATH=") {
		t.Fatalf("the command printed no environment (%q): it proves nothing", all)
	}
	if strings.Contains(all, scriptedapi.APIKey) {
		t.Errorf("a command the model ran read the API key")
	}
}
