package gemini

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/flowerhq/flower/envinject"
)

// HoldThreshold is the compression threshold flower pins while it holds
// the CLI's own compression off: the CLI compresses once the last prompt
// passes threshold × the model's limit, so past 1 it never does («Gemini
// facts»).
const HoldThreshold = 2

// home is flower's Gemini home for one session: a private folder that is
// the CLI's GEMINI_CLI_HOME. Its .gemini/ holds the person's user
// settings with flower's holds merged over them (the one settings layer
// flower can own: the CLI reads system settings only from a root-owned
// file), and a link to every other entry of the person's .gemini/ (their
// login, their sessions under tmp/, their commands and extensions), so
// that the CLI keeps and finds its state where it always does. The
// person's files are never written.
type home struct {
	// Dir is GEMINI_CLI_HOME; its .gemini/tmp is the person's.
	Dir string
}

// personHome is the folder whose .gemini/ the CLI reads for env: its
// GEMINI_CLI_HOME, else HOME, else the user's home.
func personHome(env []string) string {
	for _, k := range []string{"GEMINI_CLI_HOME", "HOME"} {
		if v := envLookup(env, k); v != "" {
			return v
		}
	}
	h, _ := os.UserHomeDir()
	return h
}

// envLookup is the last value of key in env ("" for none).
func envLookup(env []string, key string) string {
	v, _ := envinject.Lookup(env, key)
	return v
}

// personSettings reads the person's user settings (nil when there are
// none), as the CLI does: JSON with comments.
func personSettings(person string) (map[string]any, error) {
	p := filepath.Join(person, ".gemini", "settings.json")
	b, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read your Gemini settings: %w", err)
	}
	var m map[string]any
	if len(bytes.TrimSpace(b)) == 0 {
		return nil, nil
	}
	if err := json.Unmarshal(stripComments(b), &m); err != nil {
		return nil, fmt.Errorf("your Gemini settings %s are not a JSON object: %w", p, err)
	}
	return m, nil
}

// KeyVars are the variables that carry the Gemini API's key.
var KeyVars = []string{"GEMINI_API_KEY", "GOOGLE_API_KEY"}

// holdSettings are flower's settings over the person's: the CLI never
// updates itself under flower, the model's commands run without the keys
// (the CLI's environment variable redaction on, the keys blocked and
// never allowed), and with hold the CLI never compresses.
func holdSettings(m map[string]any, hold bool) map[string]any {
	if m == nil {
		m = map[string]any{}
	}
	section := func(parent map[string]any, name string) map[string]any {
		s, _ := parent[name].(map[string]any)
		if s == nil {
			s = map[string]any{}
			parent[name] = s
		}
		return s
	}
	general := section(m, "general")
	general["enableAutoUpdate"], general["enableAutoUpdateNotification"] = false, false
	redact := section(section(m, "security"), "environmentVariableRedaction")
	redact["enabled"] = true
	if list, ok := redact["allowed"].([]any); ok {
		var allowed []any
		for _, v := range list {
			if name, _ := v.(string); !slices.Contains(KeyVars, strings.ToUpper(name)) {
				allowed = append(allowed, v)
			}
		}
		redact["allowed"] = allowed
	}
	blocked, _ := redact["blocked"].([]any)
	for _, k := range KeyVars {
		blocked = append(blocked, k)
	}
	redact["blocked"] = blocked
	if hold {
		section(m, "model")["compressionThreshold"] = HoldThreshold
	}
	return m
}

// newHome makes flower's Gemini home for a session under env, with the
// compression held off when hold. The person's .gemini/tmp is made if it
// is missing (the CLI makes it on any run), so that the session's record
// is theirs.
func newHome(env []string, hold bool) (*home, error) {
	person := personHome(env)
	if person == "" {
		return nil, errors.New("no home folder for the Gemini CLI: set HOME")
	}
	settings, err := personSettings(person)
	if err != nil {
		return nil, err
	}
	b, err := json.MarshalIndent(holdSettings(settings, hold), "", "  ")
	if err != nil {
		return nil, err
	}
	theirs := filepath.Join(person, ".gemini")
	if err := os.MkdirAll(filepath.Join(theirs, "tmp"), 0o700); err != nil {
		return nil, fmt.Errorf("gemini home: %w", err)
	}
	dir, err := os.MkdirTemp("", "flower-gemini-")
	if err != nil {
		return nil, fmt.Errorf("gemini home: %w", err)
	}
	h := &home{Dir: dir}
	ours := filepath.Join(dir, ".gemini")
	if err := os.Mkdir(ours, 0o700); err != nil {
		h.remove()
		return nil, fmt.Errorf("gemini home: %w", err)
	}
	entries, err := os.ReadDir(theirs)
	if err != nil {
		h.remove()
		return nil, fmt.Errorf("gemini home: %w", err)
	}
	for _, e := range entries {
		if e.Name() == "settings.json" {
			continue
		}
		if err := os.Symlink(filepath.Join(theirs, e.Name()), filepath.Join(ours, e.Name())); err != nil {
			h.remove()
			return nil, fmt.Errorf("gemini home: %w", err)
		}
	}
	if err := os.WriteFile(filepath.Join(ours, "settings.json"), b, 0o600); err != nil {
		h.remove()
		return nil, fmt.Errorf("gemini home: %w", err)
	}
	return h, nil
}

// remove deletes flower's home; the links go, not what they name.
func (h *home) remove() { _ = os.RemoveAll(h.Dir) }

// stripComments blanks // and /* */ comments outside strings, as the
// CLI's settings allow them.
func stripComments(b []byte) []byte {
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); i++ {
		switch c := b[i]; {
		case c == '"':
			j := i + 1
			for ; j < len(b) && b[j] != '"'; j++ {
				if b[j] == '\\' {
					j++
				}
			}
			if j >= len(b) {
				j = len(b) - 1
			}
			out = append(out, b[i:j+1]...)
			i = j
		case c == '/' && i+1 < len(b) && b[i+1] == '/':
			for i < len(b) && b[i] != '\n' {
				i++
			}
			if i < len(b) {
				out = append(out, '\n')
			}
		case c == '/' && i+1 < len(b) && b[i+1] == '*':
			end := bytes.Index(b[i+2:], []byte("*/"))
			if end < 0 {
				return out
			}
			i += end + 3
		default:
			out = append(out, c)
		}
	}
	return out
}
