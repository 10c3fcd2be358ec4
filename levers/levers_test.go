package levers

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func settingsOf(t *testing.T, args []string) map[string]any {
	t.Helper()
	var found []string
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, "--settings="); ok {
			found = append(found, v)
		}
		if a == "--settings" {
			t.Fatalf("a bare --settings is left in %q", args)
		}
	}
	if len(found) != 1 {
		t.Fatalf("want one --settings=, got %d in %q", len(found), args)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(found[0]), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestArgsMergesThePersonsSettings(t *testing.T) {
	dir := t.TempDir()
	own := `{"env":{"DISABLE_AUTO_COMPACT":"0","MINE":"yes"},"autoCompactEnabled":true,"model":"m",` +
		`"hooks":{"PreCompact":[{"hooks":[{"type":"command","command":"mine"}]}],"Stop":[{"hooks":[{"type":"command","command":"stop"}]}]}}`
	if err := os.WriteFile(filepath.Join(dir, "s.json"), []byte(own), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"--allowedTools", "Bash", "--settings", "s.json"},
		{"--settings", filepath.Join(dir, "s.json"), "--allowedTools", "Bash"},
		{"--settings=" + own, "--allowedTools", "Bash"},
		{"--settings", `{"model":"old"}`, "--allowedTools", "Bash", "--settings", own}, // the last one counts, as in the harness
	} {
		o, err := Read(args, dir)
		if err != nil {
			t.Fatalf("%q: %v", args, err)
		}
		out := Args(args, o, "HOOK")
		if out[0] != "--allowedTools" || out[1] != "Bash" || !strings.HasPrefix(out[len(out)-1], "--settings=") || len(out) != 3 {
			t.Errorf("%q → %q: want the other flags kept and one --settings= last", args, out)
		}
		m := settingsOf(t, out)
		env := m["env"].(map[string]any)
		if env["DISABLE_AUTO_COMPACT"] != "1" || env["MINE"] != "yes" {
			t.Errorf("env %v: want flower's DISABLE_AUTO_COMPACT and the person's MINE", env)
		}
		if m["autoCompactEnabled"] != false || m["idleCompaction"] != false || m["model"] != "m" {
			t.Errorf("settings %v", m)
		}
		hooks := m["hooks"].(map[string]any)
		pre := hooks["PreCompact"].([]any)
		var cmds []string
		for _, h := range pre {
			for _, c := range h.(map[string]any)["hooks"].([]any) {
				cmds = append(cmds, c.(map[string]any)["command"].(string))
			}
		}
		if !reflect.DeepEqual(cmds, []string{"mine", "HOOK"}) {
			t.Errorf("PreCompact commands %q: want the person's, then flower's", cmds)
		}
		if _, ok := hooks["Stop"]; !ok {
			t.Errorf("the person's Stop hook is gone: %v", hooks)
		}
	}
}

func TestArgsWithoutOwnSettings(t *testing.T) {
	o, err := Read([]string{"--model", "x"}, t.TempDir())
	if err != nil || o.Given {
		t.Fatalf("%+v %v", o, err)
	}
	m := settingsOf(t, Args([]string{"--model", "x"}, o, "H"))
	if !reflect.DeepEqual(m, jsonRound(t, Settings("H"))) {
		t.Errorf("got %v, want flower's own settings", m)
	}
}

func jsonRound(t *testing.T, v any) map[string]any {
	b, _ := json.Marshal(v)
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestReadRefusesBadSettings(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "big.json")
	if err := os.WriteFile(big, []byte(`{"x":"`+strings.Repeat("a", MaxSettingsFile)+`"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte(`[1]`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{"missing.json", big, bad, "[1,2]", "{not json", filepath.Join(dir, "sk-secret", "s.json")} {
		_, err := Read([]string{"--settings", v}, dir)
		if !errors.Is(err, ErrSettings) {
			t.Errorf("--settings %.40q: err %v, want ErrSettings", v, err)
			continue
		}
		// The value is masked as everywhere else: its size, never the path.
		if strings.HasSuffix(v, ".json") && (strings.Contains(err.Error(), filepath.Base(v)) || strings.Contains(err.Error(), dir)) {
			t.Errorf("--settings %s: the error shows the path: %v", v, err)
		}
		if strings.HasSuffix(v, ".json") && !strings.Contains(err.Error(), fmt.Sprintf("<%d bytes>", len(v))) {
			t.Errorf("--settings %s: the error does not give the value's size: %v", v, err)
		}
	}
}

func TestHookQuotes(t *testing.T) {
	got := Hook("/a b/flo'wer", "hook", "precompact")
	want := `'/a b/flo'\''wer' 'hook' 'precompact' || exit 2`
	if got != want {
		t.Errorf("got %s, want %s", got, want)
	}
	if !strings.Contains(BlockDecision(), `"decision":"block"`) || !strings.Contains(BlockDecision(), "flower") {
		t.Errorf("decision %s", BlockDecision())
	}
}

func TestHookReportsAndAnswersAsAsked(t *testing.T) {
	dir := t.TempDir()
	for _, answer := range []string{BlockDecision(), StopDecision()} {
		var out strings.Builder
		in := strings.NewReader(`{"session_id":"s1","trigger":"auto","hook_event_name":"PreCompact"}`)
		if err := RunHookAnswering(in, &out, dir, answer); err != nil {
			t.Fatal(err)
		}
		if got := strings.TrimSpace(out.String()); got != answer {
			t.Errorf("answered %s, want %s", got, answer)
		}
	}
	if !json.Valid([]byte(StopDecision())) || !strings.Contains(StopDecision(), `"continue":false`) {
		t.Errorf("StopDecision %s is not {\"continue\":false}", StopDecision())
	}
	reqs, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(reqs) != 2 {
		t.Errorf("%d requests in the inbox, want one per run of the hook", len(reqs))
	}
}
