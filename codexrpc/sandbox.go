package codexrpc

import (
	"context"
	"fmt"
	"slices"
)

// Codex's app-server, asked for a thread whose sandbox can write (given in
// thread/start, or left to the person's workspace-write), marks the
// thread's folder trusted in the person's $CODEX_HOME/config.toml, and
// from then on loads that folder's .codex/ (its MCP servers, hooks and
// skills) at every start: a run granted trust that only the person may
// give (measured on 0.171.0). A thread started read-only is left as it
// is, and the sandbox the person chose is given with each turn instead
// (turn/start's sandboxPolicy), which writes nothing. Where the person's
// own config trusts the project, Codex loads its .codex/ as it always
// did: that is the person's choice (docs/DESIGN.md «Codex facts»).

// ThreadSandbox is the sandbox every thread is opened with.
const ThreadSandbox = "read-only"

// MethodConfigRead reads the effective config.
const MethodConfigRead = "config/read"

// Person is what flower reads of the person's Codex config (its user
// layer and the -c settings: no project's) before it opens a thread.
type Person struct {
	// Sandbox is the sandbox policy it asks for, as turn/start takes it:
	// sandbox_mode, with sandbox_workspace_write's settings;
	// workspace-write where it says nothing, as a thread Codex trusts
	// gets.
	Sandbox map[string]any
	// ToolEnv is the thread's config override that keeps the model's
	// keys out of the model's commands (ToolEnvOverride).
	ToolEnv map[string]any
	// Endpoint is the base_url of the model provider the config chose
	// (model_provider); "" where it names none (the built-in default).
	Endpoint string
}

// KeyVars are the variables Codex itself takes a model key or token
// from, whatever the provider; each provider's env_key (and the variables
// its env_http_headers name) are added to them.
var KeyVars = []string{"OPENAI_API_KEY", "CODEX_API_KEY", "CODEX_ACCESS_TOKEN"}

// ReadPerson reads the person's config (config/read).
func (c *Client) ReadPerson(ctx context.Context) (Person, error) {
	var res struct {
		Config struct {
			Mode  string `json:"sandbox_mode"`
			Write struct {
				WritableRoots       []string `json:"writable_roots"`
				NetworkAccess       bool     `json:"network_access"`
				ExcludeTmpdirEnvVar bool     `json:"exclude_tmpdir_env_var"`
				ExcludeSlashTmp     bool     `json:"exclude_slash_tmp"`
			} `json:"sandbox_workspace_write"`
			ToolEnv struct {
				Exclude []string `json:"exclude"`
			} `json:"shell_environment_policy"`
			Provider  string `json:"model_provider"`
			Providers map[string]struct {
				EnvKey     string            `json:"env_key"`
				EnvHeaders map[string]string `json:"env_http_headers"`
				BaseURL    string            `json:"base_url"`
			} `json:"model_providers"`
		} `json:"config"`
	}
	if err := c.Call(ctx, MethodConfigRead, map[string]any{}, &res); err != nil {
		return Person{}, err
	}
	var p Person
	switch m := res.Config.Mode; m {
	case "read-only":
		p.Sandbox = map[string]any{"type": "readOnly"}
	case "danger-full-access":
		p.Sandbox = map[string]any{"type": "dangerFullAccess"}
	case "workspace-write", "":
		w := res.Config.Write
		roots := w.WritableRoots
		if roots == nil {
			roots = []string{}
		}
		p.Sandbox = map[string]any{"type": "workspaceWrite", "writableRoots": roots, "networkAccess": w.NetworkAccess,
			"excludeTmpdirEnvVar": w.ExcludeTmpdirEnvVar, "excludeSlashTmp": w.ExcludeSlashTmp}
	default:
		return Person{}, fmt.Errorf("codex config: sandbox_mode %q is none flower knows (read-only, workspace-write, danger-full-access)", m)
	}
	var named []string // in a fixed order: the maps' order is random
	for _, pr := range res.Config.Providers {
		named = append(named, pr.EnvKey)
		for _, v := range pr.EnvHeaders {
			named = append(named, v)
		}
	}
	slices.Sort(named)
	p.ToolEnv = ToolEnvOverride(res.Config.ToolEnv.Exclude, append(slices.Clone(KeyVars), named...))
	if pr, ok := res.Config.Providers[res.Config.Provider]; ok {
		p.Endpoint = pr.BaseURL
	}
	return p, nil
}

// ToolEnvOverride is the config override that leaves the variables keys
// out of the environment of the model's commands, on top of the person's
// own exclude list (kept, in its order): Codex's shell environment policy
// passes every variable on by default (it no longer leaves out names with
// KEY, SECRET or TOKEN in them), so any script a repository has the model
// run could read the key. The key still reaches Codex; only its tools go
// without.
func ToolEnvOverride(person, keys []string) map[string]any {
	out := slices.Clone(person)
	for _, k := range keys {
		if k != "" && !slices.Contains(out, k) {
			out = append(out, k)
		}
	}
	if out == nil {
		out = []string{}
	}
	return map[string]any{"shell_environment_policy.exclude": out}
}

// SetTurnSandbox makes every later turn/start carry policy (nil: none).
func (c *Client) SetTurnSandbox(policy map[string]any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.turnSandbox = policy
}
