package relay

import (
	"testing"

	"github.com/tidwall/gjson"
)

// TestPatchResult: the harness's result line reaches the application as it
// was written, but for the step's cost and flower's summary; a line that is
// not a JSON object passes untouched.
func TestPatchResult(t *testing.T) {
	raw := []byte(`{"type":"result","subtype":"success","total_cost_usd":0.25,"session_id":"s-1","usage":{"input_tokens":3},"result":"ok \u00e9"}`)
	got := patchResult(raw, 1.5, map[string]any{"generations": 2, "retired": []string{"s-0"}, "handoff_path": "h.md"})
	want := `{"type":"result","subtype":"success","total_cost_usd":1.5,"session_id":"s-1","usage":{"input_tokens":3},"result":"ok \u00e9","flower":{"generations":2,"handoff_path":"h.md","retired":["s-0"]}}`
	if string(got) != want {
		t.Errorf("patched\n%s\nwant\n%s", got, want)
	}
	if string(raw) != `{"type":"result","subtype":"success","total_cost_usd":0.25,"session_id":"s-1","usage":{"input_tokens":3},"result":"ok \u00e9"}` {
		t.Errorf("the harness's line was changed under it: %s", raw)
	}
	// A result that had no cost gets one.
	if got := patchResult([]byte(`{"type":"result"}`), 2, nil); gjson.GetBytes(got, "total_cost_usd").Float() != 2 || !gjson.GetBytes(got, "flower").Exists() {
		t.Errorf("patched %s", got)
	}
	for _, bad := range []string{`not json`, `[1,2]`, `{"type":"result"`, `"s"`} {
		if got := patchResult([]byte(bad), 1, nil); string(got) != bad {
			t.Errorf("%q became %q", bad, got)
		}
	}
}
