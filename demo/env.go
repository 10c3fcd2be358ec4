package demo

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
)

// HarnessEnv is the environment of the demo's harness: parent (os.Environ(),
// usually) without anything that could carry a credential, point the
// harness at another endpoint or reach the person's own configuration, then
// HOME=home, the scripted server's variables and ANTHROPIC_MODEL=ModelName.
// A real key in parent is therefore never used or sent.
func HarnessEnv(parent []string, home string, server []string) []string {
	env := make([]string, 0, len(parent)+len(server)+1)
	for _, kv := range parent {
		k, _, ok := strings.Cut(kv, "=")
		if !ok || dropped(k) {
			continue
		}
		env = append(env, kv)
	}
	env = append(env, "HOME="+home)
	env = append(env, server...)
	return append(env, "ANTHROPIC_MODEL="+ModelName)
}

// dropped reports whether a parent variable stays out of the demo's harness.
func dropped(key string) bool {
	up := strings.ToUpper(key)
	switch {
	case strings.HasPrefix(up, "ANTHROPIC_"), strings.HasPrefix(up, "CLAUDE"),
		strings.HasPrefix(up, "OPENAI_"), strings.HasPrefix(up, "CODEX"),
		strings.HasPrefix(up, "GEMINI_"), strings.HasPrefix(up, "GOOGLE_"), up == "CLOUD_SHELL":
		return true // keys, tokens, endpoints, model and config dir (Claude Code's, Codex's and the Gemini CLI's)
	case strings.HasSuffix(up, "_PROXY"):
		return true // the server is on 127.0.0.1; nothing goes through a proxy
	case up == "HOME", strings.HasPrefix(up, "XDG_"):
		return true // the person's own ~/.claude and config stay untouched
	case up == "DISABLE_AUTO_COMPACT":
		return true // flower sets it for the harness itself
	}
	return false
}

// InteractiveArgs are the harness flags of the demo in the harness's own
// screen: its default permission mode there stops every tool call on a
// dialog when its safety check cannot be reached, which it cannot from a
// scripted server on 127.0.0.1.
var InteractiveArgs = append([]string{"--permission-mode", "dontAsk"}, HarnessArgs...)

// SeedScreen writes the $HOME/.claude.json of the demo's own HOME that
// lets the harness's screen open straight on its prompt: onboarding done,
// the workspace trusted, the scripted server's fake key approved (the
// harness keeps its last 20 characters). These are the person's screens
// in a real run; the demo's HOME is its own, made for the demo.
func SeedScreen(home, workspace, apiKey string) error {
	key := apiKey[max(len(apiKey)-20, 0):]
	b, err := json.Marshal(map[string]any{
		"hasCompletedOnboarding": true,
		"customApiKeyResponses":  map[string]any{"approved": []string{key}, "rejected": []string{}},
		"projects":               map[string]any{workspace: map[string]any{"hasTrustDialogAccepted": true}},
	})
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(home, ".claude.json"), b, 0o600)
}
