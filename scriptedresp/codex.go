package scriptedresp

import (
	"fmt"
	"os"
	"path/filepath"
)

// KeyVar is the variable the provider WriteCodexHome writes reads its key
// from; Env sets it.
const KeyVar = "SCRIPTED_API_KEY"

// WriteCodexHome writes dir/config.toml pointing Codex at this server as
// model provider "scripted", with no retries and no WebSocket (Codex tries
// one first, five times, unless told otherwise), and with plugins off:
// with them on, Codex 0.171.0 looks up api.github.com and chatgpt.com at
// every start (strace showed the DNS queries), and with them off nothing
// leaves 127.0.0.1. extra is more TOML (e.g. a person's own settings); it
// must not repeat a key or table written here.
// Run Codex with CODEX_HOME=dir and Env.
func (s *Server) WriteCodexHome(dir, extra string) error { return WriteCodexHome(dir, s.URL, extra) }

// WriteCodexHome is Server.WriteCodexHome for any scripted Responses API
// at baseURL (http://127.0.0.1:PORT/v1), one of another project's too; its
// key is KeyEnv's.
func WriteCodexHome(dir, baseURL, extra string) error {
	conf := fmt.Sprintf(`model = "gpt-5"
model_provider = "scripted"
approval_policy = "never"
sandbox_mode = "workspace-write"
check_for_update_on_startup = false
%s
[model_providers.scripted]
name = "scripted"
base_url = %q
wire_api = "responses"
env_key = %q
supports_websockets = false
request_max_retries = 0
stream_max_retries = 0

[features]
plugins = false
`, extra, baseURL, KeyVar)
	if err := os.WriteFile(filepath.Join(dir, "config.toml"), []byte(conf), 0o600); err != nil {
		return fmt.Errorf("write codex config: %w", err)
	}
	return nil
}

// Env is the environment that hands Codex the fake key. Append it after
// the parent's environment so it wins.
func (s *Server) Env() []string { return KeyEnv() }

// KeyEnv is the environment that hands Codex the fake key.
func KeyEnv() []string { return []string{KeyVar + "=" + APIKey} }
