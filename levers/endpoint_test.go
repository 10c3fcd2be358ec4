package levers

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestEndpointLayers: the endpoint held is the one the harness would
// start with: the environment, then ~/.claude.json, the user's settings,
// the project's and the local ones (unless the arguments leave them out),
// then the person's --settings; a FIFO in a settings file's place is not
// waited on; an endpoint with credentials in it is not held.
func TestEndpointLayers(t *testing.T) {
	home, ws := t.TempDir(), t.TempDir()
	env := []string{"HOME=" + home}
	put := func(path, url string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(`{"env":{"ANTHROPIC_BASE_URL":"`+url+`"}}`), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	check := func(args []string, own Own, want string) {
		t.Helper()
		if got := Endpoint(args, env, ws, own); got != want {
			t.Errorf("Endpoint(%q) = %q, want %q", args, got, want)
		}
	}
	check(nil, Own{}, DefaultEndpoint)
	env = append(env, "ANTHROPIC_BASE_URL=http://env")
	check(nil, Own{}, "http://env")
	put(filepath.Join(home, ".claude.json"), "http://global")
	check(nil, Own{}, "http://global")
	put(filepath.Join(home, ".claude", "settings.json"), "http://user")
	check(nil, Own{}, "http://user")
	put(filepath.Join(ws, ".claude", "settings.json"), "http://project")
	check(nil, Own{}, "http://project")
	put(filepath.Join(ws, ".claude", "settings.local.json"), "http://local")
	check(nil, Own{}, "http://local")
	check([]string{"--setting-sources", "user", "--strict-mcp-config"}, Own{}, "http://user")
	check([]string{"--setting-sources=user,project"}, Own{}, "http://project")
	own, err := Read([]string{"--settings", `{"env":{"ANTHROPIC_BASE_URL":"http://flag"}}`}, ws)
	if err != nil {
		t.Fatal(err)
	}
	check(nil, own, "http://flag")

	// CLAUDE_CONFIG_DIR moves the user's files.
	cfg := t.TempDir()
	put(filepath.Join(cfg, "settings.json"), "http://config-dir")
	env2 := append(env, "CLAUDE_CONFIG_DIR="+cfg)
	if got := Endpoint([]string{"--setting-sources", "user"}, env2, ws, Own{}); got != "http://config-dir" {
		t.Errorf("with CLAUDE_CONFIG_DIR: %q", got)
	}

	// A FIFO where the local settings are: read as nothing, at once.
	local := filepath.Join(ws, ".claude", "settings.local.json")
	if err := os.Remove(local); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(local, 0o644); err != nil {
		t.Fatal(err)
	}
	check(nil, Own{}, "http://project")

	if h := Hold(nil, []string{"HOME=" + t.TempDir(), "ANTHROPIC_BASE_URL=https://u:secret@proxy"}, t.TempDir(), Own{}); h != nil {
		t.Errorf("an endpoint with credentials was held: %v", h)
	}
	if h := Hold(nil, env, ws, Own{}); h[EndpointKey] != "http://project" {
		t.Errorf("Hold = %v", h)
	}
}

// TestPinnedAlone: with compaction not held off, the person's settings
// get only the held endpoint; with nothing held, the arguments are left as
// they are.
func TestPinnedAlone(t *testing.T) {
	args := []string{"--allowedTools", "Bash", "--settings", `{"model":"m"}`}
	own, err := Read(args, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if got := Pinned(args, own); len(got) != len(args) || got[3] != args[3] {
		t.Errorf("nothing held: %q, want the arguments as they were", got)
	}
	own.Pin = map[string]string{EndpointKey: "http://x"}
	m := settingsOf(t, Pinned(args, own))
	if m["model"] != "m" || m["env"].(map[string]any)[EndpointKey] != "http://x" || m["autoCompactEnabled"] != nil {
		t.Errorf("held alone: %v", m)
	}
	m = settingsOf(t, Args(args, own, "HOOK"))
	if m["env"].(map[string]any)[EndpointKey] != "http://x" || m["autoCompactEnabled"] != false {
		t.Errorf("held with the levers: %v", m)
	}
}
