package handoff

import (
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flowerhq/flower/handoffwriter"
	"github.com/flowerhq/flower/manifest"
	"github.com/flowerhq/flower/policy"
	"github.com/flowerhq/flower/workbench"
)

var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

type fixture struct {
	books Books
	gen   *manifest.Generation
	saves int
}

func newFixture(t *testing.T, withBench bool, maxGen int) *fixture {
	t.Helper()
	st := &manifest.StepResult{Name: "干活", Task: "Build the shim. " + strings.Repeat("任务", 700)}
	gen := st.BeginGeneration("sess-1", t0)
	f := &fixture{gen: gen}
	var wb *workbench.Workbench
	if withBench {
		var err error
		if wb, err = workbench.Open(filepath.Join(t.TempDir(), ".flower")); err != nil {
			t.Fatal(err)
		}
	}
	f.books = Books{Step: st, Policy: policy.HandoffPolicy{Enabled: true, Window: 200_000, Headroom: 50_000, MaxGenerations: maxGen},
		WindowSource: manifest.WindowFromHarness, Workbench: wb, Now: func() time.Time { return t0 }, Save: func() { f.saves++ },
		Log: slog.New(slog.DiscardHandler)}
	return f
}

var good = handoffwriter.Handoff{Doing: "Adding the shim header.", Decided: "No source edits.", Deadends: "-D_ANSI_SOURCE breaks other macros.", Next: "Run make on a clean clone.", Scene: "Makefile"}

func TestFreezeComplete(t *testing.T) {
	f := newFixture(t, true, 8)
	fr, err := f.books.Freeze(f.gen, Cut{Handoff: good, Reason: manifest.ReasonThreshold, Context: 155_000, WritingSeconds: 12})
	if err != nil {
		t.Fatal(err)
	}
	st, rec := f.books.Step, fr.Record
	if rec.Degraded || rec.Outcome != manifest.OutcomeWritten || rec.At != 150_000 || rec.Window != 200_000 || rec.WindowSource != manifest.WindowFromHarness || rec.Context != 155_000 || len(rec.Sections) != 5 {
		t.Errorf("record %+v", rec)
	}
	if fr.Path != f.books.Workbench.HandoffPath("干活") || st.HandoffPath != fr.Path || f.gen.Handoff != rec || f.gen.EndedAt == nil {
		t.Errorf("path %q, step path %q", fr.Path, st.HandoffPath)
	}
	b, _ := os.ReadFile(fr.Path)
	if Digest(b) != rec.SHA256Written || !strings.Contains(string(b), "Run make on a clean clone.") {
		t.Errorf("file %q does not match the receipt", b)
	}
	if len(st.Retired) != 1 || st.Retired[0] != "sess-1" || st.SessionID != "" || len(st.Errors) != 0 {
		t.Errorf("retired %q session %q errors %q", st.Retired, st.SessionID, st.Errors)
	}
	prompt := f.books.Launch(fr)
	if !strings.HasPrefix(prompt, "You are taking over") || !strings.Contains(prompt, "Run make on a clean clone.") || rec.SHA256Launched != rec.SHA256Written {
		t.Errorf("launch: %q, hashes %s %s", prompt[:40], rec.SHA256Written, rec.SHA256Launched)
	}
	if f.saves < 2 {
		t.Errorf("manifest saved %d times", f.saves)
	}
}

func TestFreezeDegrades(t *testing.T) {
	for _, tc := range []struct {
		name string
		cut  Cut
		why  string
	}{
		{"missing next", Cut{Handoff: handoffwriter.Handoff{Doing: "x"}, Reason: manifest.ReasonThreshold}, "the handoff is missing next"},
		{"overflow, no writing turn", Cut{Why: "overflow: Prompt is too long", Reason: manifest.ReasonOverflow, Outcome: manifest.OutcomeNoWritingTurn}, "overflow: Prompt is too long"},
		{"complete but failed", Cut{Handoff: good, Why: "the writing turn failed"}, "the writing turn failed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, true, 8)
			fr, err := f.books.Freeze(f.gen, tc.cut)
			if err != nil {
				t.Fatal(err)
			}
			rec := fr.Record
			if !rec.Degraded || rec.Why != tc.why || !fr.Handoff.IsDegraded() {
				t.Fatalf("record %+v", rec)
			}
			want := manifest.OutcomeDegraded
			if tc.cut.Outcome == manifest.OutcomeNoWritingTurn {
				want = manifest.OutcomeNoWritingTurn
			}
			if rec.Outcome != want {
				t.Errorf("outcome %q, want %q", rec.Outcome, want)
			}
			if errs := f.books.Step.Errors; len(errs) != 1 || errs[0] != "交接降级("+tc.why+")" {
				t.Errorf("errors %q", errs)
			}
			b, _ := os.ReadFile(fr.Path)
			if !strings.Contains(string(b), handoffwriter.DegradedMarker) || !strings.Contains(string(b), "Build the shim.") {
				t.Errorf("degraded file lacks the marker or the task")
			}
		})
	}
}

// DESIGN.md «No workbench»: no workbench, no file, the handoff still reaches the successor.
func TestNoWorkbench(t *testing.T) {
	f := newFixture(t, false, 8)
	fr, err := f.books.Freeze(f.gen, Cut{Handoff: good})
	if err != nil || fr.Path != "" || fr.Record.Path != "" || len(f.books.Step.Errors) != 0 {
		t.Fatalf("frozen %+v err %v errors %q", fr, err, f.books.Step.Errors)
	}
	if p := f.books.Launch(fr); !strings.Contains(p, "Adding the shim header.") {
		t.Errorf("prompt lacks the handoff")
	}
}

// A workbench that cannot take the file: recorded, and the prompt carries it.
func TestWriteFailureIsRecorded(t *testing.T) {
	f := newFixture(t, true, 8)
	// A directory where the file should go makes the write fail.
	if err := os.MkdirAll(filepath.Join(f.books.Workbench.HandoffPath("干活"), "x"), 0o755); err != nil {
		t.Fatal(err)
	}
	fr, err := f.books.Freeze(f.gen, Cut{Handoff: good})
	if err != nil || fr.Path != "" {
		t.Fatalf("path %q err %v", fr.Path, err)
	}
	if errs := f.books.Step.Errors; len(errs) != 1 || !strings.HasPrefix(errs[0], "write handoff: ") {
		t.Errorf("errors %q", errs)
	}
	if p := f.books.Launch(fr); !strings.Contains(p, "Run make on a clean clone.") {
		t.Errorf("prompt lacks the handoff")
	}
}

// DESIGN.md «Runaway guard»: the last generation's handoff is still written, then the limit error.
func TestGenerationLimit(t *testing.T) {
	f := newFixture(t, true, 1)
	fr, err := f.books.Freeze(f.gen, Cut{Handoff: good})
	var gle *policy.GenerationLimitError
	if !errors.As(err, &gle) || gle.Max != 1 {
		t.Fatalf("err %v", err)
	}
	if _, statErr := os.Stat(fr.Path); statErr != nil {
		t.Errorf("the handoff is not on disk for a rerun: %v", statErr)
	}
	if st := f.books.Step; st.Status != manifest.StatusGenerationLimit || st.EndedAt == nil {
		t.Errorf("status %s", st.Status)
	}
}

// DESIGN.md «Launch from disk»: the successor reads the file as it is at launch.
func TestLaunchReadsTheFileAsEdited(t *testing.T) {
	for _, tc := range []struct {
		name     string
		edit     func(path string) error
		want     string
		errorHas string
	}{
		{"edited", func(p string) error {
			b, _ := os.ReadFile(p)
			return os.WriteFile(p, []byte(strings.Replace(string(b), "Run make on a clean clone.", "PERSON: use the vendored zlib.", 1)), 0o644)
		}, "PERSON: use the vendored zlib.", ""},
		{"next deleted", func(p string) error {
			return os.WriteFile(p, []byte("## 现在在做 (doing)\nonly this\n"), 0o644)
		}, "Run make on a clean clone.", "lacks next on disk"},
		{"removed", os.Remove, "Run make on a clean clone.", "read handoff"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, true, 8)
			fr, err := f.books.Freeze(f.gen, Cut{Handoff: good})
			if err != nil {
				t.Fatal(err)
			}
			if err := tc.edit(fr.Path); err != nil {
				t.Fatal(err)
			}
			p := f.books.Launch(fr)
			if !strings.Contains(p, tc.want) {
				t.Errorf("prompt lacks %q", tc.want)
			}
			errs := strings.Join(f.books.Step.Errors, "\n")
			if tc.errorHas == "" && errs != "" || tc.errorHas != "" && !strings.Contains(errs, tc.errorHas) {
				t.Errorf("errors %q, want %q", errs, tc.errorHas)
			}
			if tc.name == "edited" && fr.Record.SHA256Launched == fr.Record.SHA256Written {
				t.Errorf("the receipt does not show the edit")
			}
		})
	}
}
