package levers

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// flower's status line goes into the merged --settings; the person's own
// command, from their --settings or else their settings files in the
// harness's order, is handed to flower's command to run.
func TestStatusLineSettings(t *testing.T) {
	dir, conf := t.TempDir(), t.TempDir()
	write := func(path, body string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var gotTheirs string
	command := func(theirs string) string { gotTheirs = theirs; return "FLOWER-CMD" }
	check := func(args []string, wantTheirs string) map[string]any {
		t.Helper()
		out, err := StatusLine(args, dir, conf, command)
		if err != nil {
			t.Fatal(err)
		}
		m := settingsOf(t, out)
		sl, _ := m["statusLine"].(map[string]any)
		if sl["type"] != "command" || sl["command"] != "FLOWER-CMD" || sl["refreshInterval"] != float64(StatusRefresh) {
			t.Errorf("statusLine %v", sl)
		}
		if gotTheirs != wantTheirs {
			t.Errorf("their command %q, want %q", gotTheirs, wantTheirs)
		}
		return m
	}
	check([]string{"--model", "x"}, "")
	write(filepath.Join(conf, "settings.json"), `{"statusLine":{"type":"command","command":"user-line"}}`)
	check(nil, "user-line")
	write(filepath.Join(dir, ".claude", "settings.json"), `{"statusLine":{"type":"command","command":"project-line"}}`)
	check(nil, "project-line")
	write(filepath.Join(dir, ".claude", "settings.local.json"), `{"statusLine":{"type":"command","command":"local-line","padding":2}}`)
	check(nil, "local-line")
	// The merged --settings of the levers, with the person's own line.
	own, err := Read([]string{"--settings", `{"statusLine":{"type":"command","command":"flag-line"},"model":"m"}`}, dir)
	if err != nil {
		t.Fatal(err)
	}
	merged := Args([]string{"--model", "x"}, own, "hook")
	m := check(merged, "flag-line")
	if m["model"] != "m" || m["autoCompactEnabled"] != false {
		t.Errorf("the rest of the settings was lost: %v", m)
	}
	// Broken files are passed over; a broken --settings leaves args as they were.
	write(filepath.Join(dir, ".claude", "settings.local.json"), `{not json`)
	check(nil, "project-line")
	// A FIFO where a settings file belongs is neither read nor waited on.
	os.Remove(filepath.Join(dir, ".claude", "settings.json"))
	if err := syscall.Mkfifo(filepath.Join(dir, ".claude", "settings.json"), 0o644); err != nil {
		t.Fatal(err)
	}
	check(nil, "user-line")
	bad := []string{"--settings", filepath.Join(dir, "missing.json")}
	if out, err := StatusLine(bad, dir, conf, command); err == nil || strings.Join(out, " ") != strings.Join(bad, " ") {
		t.Errorf("a missing --settings file: %q, %v", out, err)
	}
}
