package scriptedgen

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
)

// Model is the model the settings WriteHome writes pin: with "auto" (the
// CLI's default) every turn first asks a router on the side.
const Model = "gemini-2.5-pro"

// Settings is the settings layer that points the CLI at a scripted API:
// the API key auth type (see the package comment), the model pinned, and
// nothing sent but model requests (no usage statistics, no update check).
func Settings() map[string]any {
	return map[string]any{
		"security": map[string]any{"auth": map[string]any{"selectedType": "gemini-api-key"}},
		"privacy":  map[string]any{"usageStatisticsEnabled": false},
		"general":  map[string]any{"enableAutoUpdate": false, "enableAutoUpdateNotification": false},
		"model":    map[string]any{"name": Model},
	}
}

// WriteHome writes home/.gemini/settings.json with Settings, the user
// settings of a CLI started with HOME=home.
func WriteHome(home string) error {
	dir := filepath.Join(home, ".gemini")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("write gemini home: %w", err)
	}
	b, err := json.MarshalIndent(Settings(), "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "settings.json"), b, 0o600); err != nil {
		return fmt.Errorf("write gemini home: %w", err)
	}
	return nil
}

// Env is the environment that points the CLI at this server with the fake
// key. Append it after the parent's environment so it wins.
func (s *Server) Env() []string { return EnvFor(s.URL) }

// EnvFor is Server.Env for any scripted Gemini API at baseURL.
func EnvFor(baseURL string) []string {
	return []string{"GOOGLE_GEMINI_BASE_URL=" + baseURL, "GEMINI_API_KEY=" + APIKey}
}
