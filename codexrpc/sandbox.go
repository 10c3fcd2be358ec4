package codexrpc

import (
	"context"
	"fmt"
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

// PersonSandbox is the sandbox policy the person's config asks for (its
// user layer and the -c settings: no project's), as turn/start takes it:
// sandbox_mode, with sandbox_workspace_write's settings; workspace-write
// where it says nothing, as a thread Codex trusts gets.
func (c *Client) PersonSandbox(ctx context.Context) (map[string]any, error) {
	var res struct {
		Config struct {
			Mode  string `json:"sandbox_mode"`
			Write struct {
				WritableRoots       []string `json:"writable_roots"`
				NetworkAccess       bool     `json:"network_access"`
				ExcludeTmpdirEnvVar bool     `json:"exclude_tmpdir_env_var"`
				ExcludeSlashTmp     bool     `json:"exclude_slash_tmp"`
			} `json:"sandbox_workspace_write"`
		} `json:"config"`
	}
	if err := c.Call(ctx, MethodConfigRead, map[string]any{}, &res); err != nil {
		return nil, err
	}
	switch m := res.Config.Mode; m {
	case "read-only":
		return map[string]any{"type": "readOnly"}, nil
	case "danger-full-access":
		return map[string]any{"type": "dangerFullAccess"}, nil
	case "workspace-write", "":
		w := res.Config.Write
		roots := w.WritableRoots
		if roots == nil {
			roots = []string{}
		}
		return map[string]any{"type": "workspaceWrite", "writableRoots": roots, "networkAccess": w.NetworkAccess,
			"excludeTmpdirEnvVar": w.ExcludeTmpdirEnvVar, "excludeSlashTmp": w.ExcludeSlashTmp}, nil
	default:
		return nil, fmt.Errorf("codex config: sandbox_mode %q is none flower knows (read-only, workspace-write, danger-full-access)", m)
	}
}

// SetTurnSandbox makes every later turn/start carry policy (nil: none).
func (c *Client) SetTurnSandbox(policy map[string]any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.turnSandbox = policy
}
