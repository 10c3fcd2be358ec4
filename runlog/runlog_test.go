package runlog

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
)

func TestRecordsCarryTheLiveState(t *testing.T) {
	var buf bytes.Buffer
	st := NewState()
	log := New(slog.New(slog.NewJSONHandler(&buf, nil)), st, "干活")
	sub := log.With("pid", 42) // derived loggers stamp too
	log.Info("one")
	st.Set(1, "", PhaseStarting)
	st.SetSession("s-1")
	st.SetPhase("working")
	sub.Info("two")
	st.Set(2, "s-2", "writing")
	log.WithGroup("g").Info("three", "k", "v")

	want := []struct {
		msg, session, phase string
		gen                 float64
	}{{"one", "", PhaseStarting, 0}, {"two", "s-1", "working", 1}, {"three", "s-2", "writing", 2}}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != len(want) {
		t.Fatalf("%d records", len(lines))
	}
	for i, line := range lines {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatal(err)
		}
		if g, ok := rec["g"].(map[string]any); ok { // WithGroup puts later attrs in the group
			for k, v := range g {
				rec[k] = v
			}
		}
		w := want[i]
		if rec["msg"] != w.msg || rec["step"] != "干活" || rec["session"] != w.session || rec["phase"] != w.phase || rec["gen"] != w.gen {
			t.Errorf("record %d: %v, want %+v", i, rec, w)
		}
	}
	if !strings.Contains(lines[1], `"pid":42`) {
		t.Errorf("derived attributes lost: %s", lines[1])
	}
}
