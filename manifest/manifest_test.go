package manifest

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/flowerhq/flower/atomicfile"
)

var t0 = time.Date(2026, 11, 30, 11, 28, 53, 0, time.UTC)

// fullManifest fills every field, so a round trip that drops or renames
// one shows up.
func fullManifest(runDir string) *Manifest {
	m := New(runDir, "/ws", t0)
	s := m.EnsureStep("干活", "build the thing", t0)
	s.Attempts = 1
	s.Window = 200000
	s.WindowSource = WindowFromFlag
	s.Model = "claude-opus-4"
	s.HandoffPath = "/ws/.flower/notes/交接-干活.md"
	s.BeginGeneration("sess-1", t0)
	s.AddUsage(0.5, 12)
	s.SetContext(150000)
	g := s.Current()
	g.Handoff = &HandoffRecord{
		Reason: ReasonThreshold, Context: 150000, At: 140000, Window: 200000,
		Path: s.HandoffPath, Sections: []string{"doing", "decided", "deadends", "next", "scene"},
		WritingSeconds: 12.5, WritingCostUSD: 0.125,
		SHA256Written: strings.Repeat("a", 64), SHA256Launched: strings.Repeat("b", 64),
	}
	s.Retire("sess-1")
	s.BeginGeneration("sess-2", t0.Add(time.Minute))
	s.AddUsage(0.25, 3)
	s.Current().Handoff = &HandoffRecord{Reason: ReasonOverflow, Context: 210000, Window: 200000, Degraded: true, Why: "prompt is too long"}
	s.DegradedError("prompt is too long")
	s.Retire("sess-2")
	s.BeginGeneration("sess-3", t0.Add(2*time.Minute))
	s.AddUsage(0.125, 1)
	s.AddError("exit status 1")
	s.Finish(StatusSucceeded, t0.Add(3*time.Minute))
	m.EnsureStep("second", "", t0.Add(4*time.Minute))
	return m
}

func TestSaveLoadRoundTrip(t *testing.T) {
	runDir := filepath.Join(t.TempDir(), "runs", "r1") // Save creates it
	m := fullManifest(runDir)
	before := time.Now().UTC()
	if err := m.Save(); err != nil {
		t.Fatal(err)
	}
	if m.UpdatedAt.Before(before.Add(-time.Second)) || m.UpdatedAt.After(time.Now().Add(time.Second)) {
		t.Errorf("UpdatedAt = %v, want about now", m.UpdatedAt)
	}
	got, err := Load(Path(runDir))
	if err != nil {
		t.Fatal(err)
	}
	if !sameManifest(got, m) {
		a, _ := json.MarshalIndent(m, "", " ")
		b, _ := json.MarshalIndent(got, "", " ")
		t.Fatalf("round trip differs:\nsaved  %s\nloaded %s", a, b)
	}
	entries, err := os.ReadDir(runDir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[0].Name() != FileName {
		t.Errorf("run dir holds %v, want only %s", entries, FileName)
	}
}

// SaveIn writes through the run dir held open, the same file Save
// writes; a held folder of another path is passed over, and one removed
// since it was opened gives way to a save by path that makes the run dir
// again.
func TestSaveIn(t *testing.T) {
	runDir := filepath.Join(t.TempDir(), "r1")
	if err := os.Mkdir(runDir, 0o755); err != nil {
		t.Fatal(err)
	}
	dir, err := atomicfile.OpenDir(runDir)
	if err != nil {
		t.Fatal(err)
	}
	defer dir.Close()
	m := fullManifest(runDir)
	loaded := func(what string) {
		t.Helper()
		got, err := Load(Path(runDir))
		if err != nil || !sameManifest(got, m) {
			t.Fatalf("%s: the manifest on disk is not the one saved (%v)", what, err)
		}
	}
	if err := m.SaveIn(dir); err != nil {
		t.Fatal(err)
	}
	loaded("through the folder held")

	other := t.TempDir()
	od, err := atomicfile.OpenDir(other)
	if err != nil {
		t.Fatal(err)
	}
	defer od.Close()
	m.EnsureStep("second", "t", t0)
	if err := m.SaveIn(od); err != nil {
		t.Fatal(err)
	}
	loaded("with a folder of another path")
	if _, err := os.Stat(filepath.Join(other, FileName)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a save went to the folder of another path: %v", err)
	}

	if err := os.RemoveAll(runDir); err != nil {
		t.Fatal(err)
	}
	m.EnsureStep("third", "t", t0)
	if err := m.SaveIn(dir); err != nil {
		t.Fatalf("save after the run dir was removed: %v", err)
	}
	loaded("after the run dir held was removed")
}

func TestSaveEmptyRunDir(t *testing.T) {
	if err := (&Manifest{}).Save(); err == nil {
		t.Error("Save with empty RunDir succeeded")
	}
}

// The JSON keys are the interface other tools and people read; they must be
// snake_case and the list fields must be [] for a fresh step.
func TestJSONShape(t *testing.T) {
	runDir := t.TempDir()
	m := fullManifest(runDir)
	m.EnsureStep("fresh", "t", t0)
	// A step built by hand, without EnsureStep, must look the same.
	m.Steps = append(m.Steps, &StepResult{Name: "literal"})
	if err := m.Save(); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(Path(runDir))
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"version", "run_dir", "workspace", "created_at", "updated_at", "steps"} {
		if _, ok := doc[k]; !ok {
			t.Errorf("manifest lacks key %q", k)
		}
	}
	steps := doc["steps"].([]any)
	full := steps[0].(map[string]any)
	for _, k := range []string{"name", "task", "status", "attempts", "retired", "session_id", "context",
		"window", "window_source", "cost_usd", "num_turns", "errors", "generations", "handoff_path",
		"started_at", "ended_at", "model"} {
		if _, ok := full[k]; !ok {
			t.Errorf("step lacks key %q", k)
		}
	}
	gen := full["generations"].([]any)[0].(map[string]any)
	for _, k := range []string{"n", "session_id", "started_at", "ended_at", "cost_usd", "num_turns", "context", "handoff"} {
		if _, ok := gen[k]; !ok {
			t.Errorf("generation lacks key %q", k)
		}
	}
	ho := gen["handoff"].(map[string]any)
	for _, k := range []string{"reason", "context", "at", "window", "degraded", "path", "sections",
		"writing_seconds", "writing_cost_usd", "sha256_written", "sha256_launched"} {
		if _, ok := ho[k]; !ok {
			t.Errorf("handoff lacks key %q", k)
		}
	}
	if last := full["generations"].([]any)[2].(map[string]any); last["handoff"] != nil {
		t.Errorf("last generation has handoff %v, want none", last["handoff"])
	}

	for _, name := range []string{"fresh", "literal"} {
		var step map[string]any
		for _, s := range steps {
			if s.(map[string]any)["name"] == name {
				step = s.(map[string]any)
			}
		}
		for _, k := range []string{"retired", "errors", "generations"} {
			if v, ok := step[k].([]any); !ok || len(v) != 0 {
				t.Errorf("step %q: %s = %#v, want []", name, k, step[k])
			}
		}
		if _, ok := step["ended_at"]; ok {
			t.Errorf("step %q: unfinished step has ended_at", name)
		}
	}
}

func TestLoadMissing(t *testing.T) {
	_, err := Load(filepath.Join(t.TempDir(), FileName))
	if !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("error = %v, want fs.ErrNotExist", err)
	}
	var ce *CorruptError
	if errors.As(err, &ce) {
		t.Error("a missing file is reported as corrupt")
	}
}

func TestLoadCorrupt(t *testing.T) {
	good, err := json.Marshal(fullManifest("/r"))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct{ name, content, wantInMsg string }{
		{"empty", "", "empty file"},
		{"whitespace", " \n\t", "empty file"},
		{"truncated at half", string(good[:len(good)/2]), "unexpected end of JSON input"},
		{"garbage", "\x00\xffnot json at all", "invalid character"},
		{"null", "null", "null"},
		{"array", `[{"version":1}]`, "cannot unmarshal array"},
		{"string", `"manifest"`, "cannot unmarshal string"},
		{"trailing garbage", string(good) + "}", "invalid character"},
		{"two documents", string(good) + string(good), "invalid character"},
		{"no version", `{"steps":[]}`, "version"},
		{"negative version", `{"version":-1}`, "version"},
		{"null step", `{"version":1,"steps":[null]}`, "steps[0] is null"},
		{"wrong field type", `{"version":1,"steps":[{"name":7}]}`, "cannot unmarshal number"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), FileName)
			if err := os.WriteFile(path, []byte(tt.content), 0o644); err != nil {
				t.Fatal(err)
			}
			m, err := Load(path)
			if m != nil {
				t.Errorf("Load returned a manifest: %+v", m)
			}
			var ce *CorruptError
			if !errors.As(err, &ce) {
				t.Fatalf("error = %v (%T), want *CorruptError", err, err)
			}
			if ce.Path != path {
				t.Errorf("Path = %q, want %q", ce.Path, path)
			}
			wantPrefix := "manifest " + path + " is corrupt: "
			if !strings.HasPrefix(err.Error(), wantPrefix) || !strings.Contains(err.Error(), tt.wantInMsg) {
				t.Errorf("message %q, want prefix %q and %q", err, wantPrefix, tt.wantInMsg)
			}
		})
	}
}

func TestLoadFutureVersion(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	if err := os.WriteFile(path, []byte(`{"version":2,"steps":[],"new_field":true}`), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Load(path)
	if !errors.Is(err, ErrUnsupportedVersion) {
		t.Fatalf("error = %v, want ErrUnsupportedVersion", err)
	}
	for _, want := range []string{path, "version 2"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("message %q lacks %q", err, want)
		}
	}
}

// Nulls written by hand or by an older writer come back as empty lists.
func TestLoadNormalizesNullLists(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	content := `{"version":1,"steps":[{"name":"s","retired":null,"errors":null,"generations":null}]}`
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	m, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	s := m.Step("s")
	if s == nil || s.Retired == nil || s.Errors == nil || s.Generations == nil {
		t.Fatalf("step = %+v, want non-nil lists", s)
	}
}

func TestStepAndEnsureStep(t *testing.T) {
	m := New("/r", "/ws", t0)
	if m.Step("a") != nil {
		t.Error("Step on empty manifest is not nil")
	}
	a := m.EnsureStep("a", "task a", t0)
	if a.Status != StatusRunning || a.Task != "task a" || !a.StartedAt.Equal(t0) {
		t.Errorf("new step = %+v", a)
	}
	a.Attempts = 2
	again := m.EnsureStep("a", "other task", t0.Add(time.Hour))
	if again != a || again.Task != "task a" || again.Attempts != 2 {
		t.Errorf("EnsureStep on existing step = %+v, want the same step unchanged", again)
	}
	b := m.EnsureStep("b", "task b", t0)
	if m.Step("b") != b || m.Step("a") != a || len(m.Steps) != 2 {
		t.Errorf("steps = %v", m.Steps)
	}
}

func TestDegradedError(t *testing.T) {
	s := &StepResult{}
	s.AddError("first")
	got := s.DegradedError("network down")
	if got != "交接降级(network down)" {
		t.Errorf("DegradedError = %q", got)
	}
	if want := []string{"first", "交接降级(network down)"}; !reflect.DeepEqual(s.Errors, want) {
		t.Errorf("Errors = %q, want %q", s.Errors, want)
	}
}

func TestRetire(t *testing.T) {
	s := &StepResult{}
	for _, id := range []string{"a", "", "a", "b", "b", "a"} {
		s.Retire(id)
	}
	if want := []string{"a", "b", "a"}; !reflect.DeepEqual(s.Retired, want) {
		t.Errorf("Retired = %q, want %q", s.Retired, want)
	}
}

func TestGenerations(t *testing.T) {
	s := (&Manifest{}).EnsureStep("s", "t", t0)
	if s.Current() != nil {
		t.Fatal("Current before any generation is not nil")
	}
	s.AddUsage(0.5, 1) // before a generation: step only
	g1 := s.BeginGeneration("", t0)
	if g1.N != 1 || s.SessionID != "" {
		t.Errorf("gen 1 = %+v, session %q", g1, s.SessionID)
	}
	s.SetSessionID("sess-1")
	if s.SessionID != "sess-1" || s.Current().SessionID != "sess-1" {
		t.Errorf("SetSessionID: step %q, gen %q", s.SessionID, s.Current().SessionID)
	}
	s.SetContext(1000)
	g2 := s.BeginGeneration("sess-2", t0.Add(time.Minute))
	if g2.N != 2 || s.SessionID != "sess-2" || s.Context != 1000 {
		t.Errorf("gen 2 = %+v, step session %q context %d", g2, s.SessionID, s.Context)
	}
	first := s.Generations[0]
	if first.EndedAt == nil || !first.EndedAt.Equal(t0.Add(time.Minute)) || first.Context != 1000 {
		t.Errorf("gen 1 after BeginGeneration = %+v, want ended at the new start", first)
	}
	s.Finish(StatusFailed, t0.Add(2*time.Minute))
	if s.Status != StatusFailed || s.EndedAt == nil || s.Current().EndedAt == nil ||
		!s.Current().EndedAt.Equal(t0.Add(2*time.Minute)) {
		t.Errorf("after Finish: %+v, current %+v", s, s.Current())
	}
	// An already-ended generation keeps its end time.
	s.Finish(StatusSucceeded, t0.Add(time.Hour))
	if !s.Current().EndedAt.Equal(t0.Add(2 * time.Minute)) {
		t.Errorf("second Finish moved the generation's end to %v", s.Current().EndedAt)
	}
}

// From manifest.json alone, one can tell how many generations a step burned
// and what each cost (DESIGN.md «Manifest»). Built through the helpers,
// saved, reloaded.
func TestReconstructGenerationsFromFile(t *testing.T) {
	runDir := t.TempDir()
	m := New(runDir, "/ws", t0)
	s := m.EnsureStep("coder", "task", t0)
	usage := [][]struct {
		cost  float64
		turns int
	}{
		{{0.25, 3}, {0.5, 4}},
		{{1.0, 10}},
		{{0.125, 1}, {0.125, 1}, {2.0, 7}},
	}
	wantCost := make([]float64, len(usage))
	wantTurns := make([]int, len(usage))
	for i, rounds := range usage {
		id := "sess-" + string(rune('1'+i))
		s.BeginGeneration(id, t0.Add(time.Duration(i)*time.Minute))
		for _, u := range rounds {
			s.AddUsage(u.cost, u.turns)
			wantCost[i] += u.cost
			wantTurns[i] += u.turns
		}
		if i < len(usage)-1 {
			s.Current().Handoff = &HandoffRecord{Reason: ReasonThreshold}
			s.Retire(id)
		}
	}
	if err := m.Save(); err != nil {
		t.Fatal(err)
	}

	loaded, err := Load(Path(runDir))
	if err != nil {
		t.Fatal(err)
	}
	ls := loaded.Step("coder")
	if len(ls.Generations) != len(usage) {
		t.Fatalf("%d generations, want %d", len(ls.Generations), len(usage))
	}
	if len(ls.Retired) != len(ls.Generations)-1 || ls.SessionID != "sess-3" {
		t.Errorf("retired %q, session %q: want the first two burned and sess-3 live", ls.Retired, ls.SessionID)
	}
	var sumCost float64
	var sumTurns int
	for i, g := range ls.Generations {
		if g.N != i+1 || g.CostUSD != wantCost[i] || g.NumTurns != wantTurns[i] {
			t.Errorf("gen %d = n %d cost %v turns %d, want cost %v turns %d",
				i+1, g.N, g.CostUSD, g.NumTurns, wantCost[i], wantTurns[i])
		}
		if (g.Handoff != nil) != (i < len(usage)-1) {
			t.Errorf("gen %d handoff = %+v", i+1, g.Handoff)
		}
		if i < len(ls.Retired) && ls.Retired[i] != g.SessionID {
			t.Errorf("retired[%d] = %q, gen session %q", i, ls.Retired[i], g.SessionID)
		}
		sumCost += g.CostUSD
		sumTurns += g.NumTurns
	}
	// Binary-exact amounts, so equality is fair.
	if sumCost != ls.CostUSD || sumTurns != ls.NumTurns {
		t.Errorf("sum over generations = %v/%d, step = %v/%d", sumCost, sumTurns, ls.CostUSD, ls.NumTurns)
	}
}

// Save over an existing manifest replaces it whole; a reader never sees a
// mix.
func TestSaveReplaces(t *testing.T) {
	runDir := t.TempDir()
	m := New(runDir, "/ws", t0)
	m.EnsureStep("a", strings.Repeat("long task ", 1000), t0)
	if err := m.Save(); err != nil {
		t.Fatal(err)
	}
	m.Steps = m.Steps[:0]
	m.EnsureStep("b", "short", t0)
	if err := m.Save(); err != nil {
		t.Fatal(err)
	}
	got, err := Load(Path(runDir))
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Steps) != 1 || got.Step("b") == nil {
		t.Errorf("steps = %+v", got.Steps)
	}
}

// Load must never panic, whatever the file holds, and what it accepts must
// survive a Save/Load cycle.
func FuzzLoad(f *testing.F) {
	good, err := json.Marshal(fullManifest("/r"))
	if err != nil {
		f.Fatal(err)
	}
	for _, seed := range []string{"", "null", "[]", "{}", `{"version":1}`, `{"version":1,"steps":[null]}`,
		`{"version":1,"steps":[{"generations":[{"handoff":null}]}]}`, string(good), string(good[:len(good)/2])} {
		f.Add([]byte(seed))
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, content []byte) {
		path := filepath.Join(dir, FileName)
		if err := os.WriteFile(path, content, 0o644); err != nil {
			t.Fatal(err)
		}
		m, err := Load(path)
		if (m == nil) == (err == nil) {
			t.Fatalf("Load = %v, %v: want exactly one non-nil", m, err)
		}
		if err != nil {
			return
		}
		for _, s := range m.Steps {
			if s.Retired == nil || s.Errors == nil || s.Generations == nil {
				t.Fatalf("step %q has a nil list", s.Name)
			}
		}
		m.RunDir = dir
		if err := m.Save(); err != nil {
			t.Fatal(err)
		}
		if _, err := Load(path); err != nil {
			t.Fatalf("reload of a saved manifest: %v", err)
		}
	})
}

// Save's encoding is the manifest's own JSON: every field, by the same
// names, and the steps as StepResult.MarshalJSON writes them.
func TestSavedManifestIsManifest(t *testing.T) {
	dir := t.TempDir()
	m := New(dir, dir, time.Now())
	m.HarnessKind = "codex"
	m.Probe = &Probe{Model: "m", Window: 200000}
	st := m.EnsureStep("main", "a task", time.Now())
	st.BeginGeneration("s1", time.Now())
	m.EnsureStep("other", "", time.Now()) // nil lists: written as []
	want, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	got, err := m.enc.encode(m)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want)+"\n" {
		t.Fatalf("Save writes\n%s\nthe manifest's JSON is\n%s", got, want)
	}
	if err := m.Save(); err != nil {
		t.Fatal(err)
	}
	back, err := Load(Path(dir))
	if err != nil || back.HarnessKind != "codex" || len(back.Steps) != 2 {
		t.Fatalf("loaded %+v, %v", back, err)
	}
}

// A run dir removed after the first save is made again by the next one.
func TestSaveMakesAMissingRunDirAgain(t *testing.T) {
	runDir := filepath.Join(t.TempDir(), "runs", "r1")
	m := fullManifest(runDir)
	if err := m.Save(); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Dir(runDir)); err != nil {
		t.Fatal(err)
	}
	if err := m.Save(); err != nil {
		t.Fatalf("save after the run dir went: %v", err)
	}
	if back, err := Load(Path(runDir)); err != nil || len(back.Steps) != len(m.Steps) {
		t.Fatalf("loaded %+v, %v", back, err)
	}
}

// sameManifest: a and b hold the same manifest, whatever their saves kept.
func sameManifest(a, b *Manifest) bool {
	x, y := *a, *b
	x.enc, y.enc = encoder{}, encoder{}
	return reflect.DeepEqual(&x, &y)
}
