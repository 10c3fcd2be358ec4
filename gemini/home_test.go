package gemini

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// flower's Gemini home holds the person's settings with flower's holds
// over them, links every other entry of theirs, and leaves their files
// as they were.
func TestHomeMergesAndLinks(t *testing.T) {
	person := t.TempDir()
	theirs := filepath.Join(person, ".gemini")
	if err := os.MkdirAll(filepath.Join(theirs, "commands"), 0o700); err != nil {
		t.Fatal(err)
	}
	settings := "{\n  // the person's own\n  \"model\": {\"name\": \"gemini-2.5-pro\", \"compressionThreshold\": 0.3},\n  /* a block */ \"ui\": {\"theme\": \"a//b\"},\n  \"security\": {\"environmentVariableRedaction\": {\"allowed\": [\"gemini_api_key\", \"MY_VAR\"]}}\n}\n"
	for name, body := range map[string]string{"settings.json": settings, "oauth_creds.json": `{"token":"x"}`} {
		if err := os.WriteFile(filepath.Join(theirs, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, hold := range []bool{true, false} {
		h, err := newHome([]string{"HOME=" + person}, hold)
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(h.Dir, ".gemini", "settings.json"))
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]map[string]any
		var redact struct {
			Security struct {
				Redaction struct {
					Enabled          bool
					Allowed, Blocked []string
				} `json:"environmentVariableRedaction"`
			}
		}
		if err := json.Unmarshal(b, &redact); err != nil {
			t.Fatal(err)
		}
		if r := redact.Security.Redaction; !r.Enabled || strings.Join(r.Allowed, ",") != "MY_VAR" || strings.Join(r.Blocked, ",") != "GEMINI_API_KEY,GOOGLE_API_KEY" {
			t.Errorf("redaction %+v: want it on, the keys blocked and not allowed", r)
		}
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		want := 0.3
		if hold {
			want = HoldThreshold
		}
		if m["model"]["compressionThreshold"] != want || m["model"]["name"] != "gemini-2.5-pro" || m["ui"]["theme"] != "a//b" ||
			m["general"]["enableAutoUpdate"] != false || m["general"]["enableAutoUpdateNotification"] != false {
			t.Errorf("hold %v: settings %s", hold, b)
		}
		for _, name := range []string{"oauth_creds.json", "commands", "tmp"} {
			if target, err := os.Readlink(filepath.Join(h.Dir, ".gemini", name)); err != nil || target != filepath.Join(theirs, name) {
				t.Errorf("%s: link to %q, %v", name, target, err)
			}
		}
		h.remove()
		if _, err := os.Stat(h.Dir); !os.IsNotExist(err) {
			t.Errorf("the home is left: %v", err)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(theirs, "settings.json")); string(b) != settings {
		t.Errorf("the person's settings changed: %s", b)
	}
	if b, _ := os.ReadFile(filepath.Join(theirs, "oauth_creds.json")); string(b) != `{"token":"x"}` {
		t.Errorf("the person's login went with the links: %s", b)
	}
	if err := os.WriteFile(filepath.Join(theirs, "settings.json"), []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := newHome([]string{"HOME=" + person}, true); err == nil || !strings.Contains(err.Error(), "not a JSON object") {
		t.Errorf("broken settings: %v", err)
	}
}

func TestStartMinute(t *testing.T) {
	got, ok := startMinute("/x/chats/session-2026-12-07T15-17-63821ef3.jsonl")
	if !ok || !got.Equal(time.Date(2026, 12, 7, 15, 17, 0, 0, time.UTC)) {
		t.Errorf("start minute %v %v", got, ok)
	}
	if _, ok := startMinute("/x/other.jsonl"); ok {
		t.Error("a name with no minute gave one")
	}
	if modelOf("", []string{"--approval-mode", "yolo", "-m", "gemma-4-31b-it"}, nil) != "gemma-4-31b-it" || Window("gemma-4-31b-it") != 256000 {
		t.Error("the model of -m, or Gemma's window")
	}
	if modelOf("", nil, map[string]any{"model": map[string]any{"name": "gemini-2.5-flash"}}) != "gemini-2.5-flash" {
		t.Error("the model of the settings")
	}
}
