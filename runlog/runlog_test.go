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

// No record repeats a key: the call's own attributes win over the stamped
// generation, session and phase and over With's, a later With over an
// earlier one; in a group slog's own rules hold.
func TestEveryKeyOnce(t *testing.T) {
	var buf bytes.Buffer
	st := NewState()
	st.Set(3, "s-live", "writing")
	log := New(slog.New(slog.NewJSONHandler(&buf, nil)), st, "main")
	log.Info("handoff written", "gen", 2, "reason", "threshold")
	log.Info("again", "step", "other", "session", "s-asked", "session", "s-dup")
	log.With("pid", 1).With("pid", 2).Info("with twice", "phase", "cut")
	log.With("k", "v").WithGroup("g").Info("grouped", "k", "inner")

	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	want := []map[string]any{
		{"msg": "handoff written", "gen": 2.0, "step": "main", "session": "s-live", "phase": "writing"},
		{"msg": "again", "gen": 3.0, "step": "other", "session": "s-asked", "phase": "writing"},
		{"msg": "with twice", "pid": 2.0, "phase": "cut", "gen": 3.0},
		{"msg": "grouped", "k": "v", "step": "main"},
	}
	for i, line := range lines {
		if dup := DuplicateKeys([]byte(line)); len(dup) > 0 {
			t.Errorf("record %d repeats %v: %s", i, dup, line)
		}
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatal(err)
		}
		for k, v := range want[i] {
			if rec[k] != v {
				t.Errorf("record %d: %s = %v, want %v: %s", i, k, rec[k], v, line)
			}
		}
	}
	if !strings.Contains(lines[3], `"g":{"k":"inner","gen":3`) {
		t.Errorf("grouped record: %s", lines[3])
	}
}

func TestDuplicateKeys(t *testing.T) {
	for in, want := range map[string]string{
		`{"a":1,"b":{"c":1,"c":2},"a":[{"d":1,"d":1}]}`: "b.c a a.d",
		`{"a":1,"b":{"a":1}}`:                           "",
		`not json`:                                      "",
	} {
		if got := strings.Join(DuplicateKeys([]byte(in)), " "); got != want {
			t.Errorf("DuplicateKeys(%s) = %q, want %q", in, got, want)
		}
	}
}
