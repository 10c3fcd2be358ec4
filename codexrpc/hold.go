package codexrpc

import (
	"context"
	"fmt"
	"strconv"
)

// Far beyond any window.
const farTokens = 1_000_000_000

// HoldOverrides are the -c settings that hold Codex's own compaction off
// whatever the person's config.toml says, as far as settings can: the
// auto-compact limit lifted, the post-turn compaction threshold at its
// highest (100 %; more is refused). The window is left as the person set
// it: it is the model's real one, and Codex compacts at 90 % of it
// whatever the limit, so that point is where a thread ends; past it the
// hook is the hold (docs/DESIGN.md «Codex facts»). The hook runs
// hookCommand, which must answer {"continue":false} (the one answer that
// stops a compaction; it ends the turn "interrupted"). Codex runs the hook
// only once it is trusted: start threads with SessionHookTrust's config.
// An empty hookCommand leaves the hook out; it is quoted with Go's %q,
// which TOML reads alike for printable UTF-8.
func HoldOverrides(hookCommand string) []string {
	out := []string{
		"model_auto_compact_token_limit=" + strconv.Itoa(farTokens),
		"model_post_turn_compact_threshold_percent=100",
	}
	if hookCommand != "" {
		out = append(out, fmt.Sprintf(`hooks.PreCompact=[{hooks=[{type="command",command=%q}]}]`, hookCommand))
	}
	return out
}

// SessionHookTrust is the thread/start config that trusts the hooks given
// with -c (source "sessionFlags"), as hooks/list reports them now: Codex
// skips an untrusted hook silently. Nil when there is none.
func (c *Client) SessionHookTrust(ctx context.Context) (map[string]any, error) {
	var res struct {
		Data []struct {
			Hooks []struct {
				Key         string `json:"key"`
				Source      string `json:"source"`
				CurrentHash string `json:"currentHash"`
			} `json:"hooks"`
		} `json:"data"`
	}
	if err := c.Call(ctx, MethodHooksList, map[string]any{}, &res); err != nil {
		return nil, err
	}
	state := map[string]any{}
	for _, d := range res.Data {
		for _, h := range d.Hooks {
			if h.Source == "sessionFlags" {
				state[h.Key] = map[string]string{"trusted_hash": h.CurrentHash}
			}
		}
	}
	if len(state) == 0 {
		return nil, nil
	}
	return map[string]any{"hooks.state": state}, nil
}
