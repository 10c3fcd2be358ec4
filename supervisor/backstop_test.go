package supervisor

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/flowerhq/flower/harness"
	"github.com/flowerhq/flower/harness/harnesstest"
	"github.com/flowerhq/flower/manifest"
	"github.com/flowerhq/flower/policy"
)

// The compaction backstop (DESIGN.md «Compaction backstop»): while handoff is on, auto-compact must
// never run. The real harness with DISABLE_AUTO_COMPACT=1 does not compact
// on its own (measured: not even with a settings.json that re-enables it, in
// -p mode), so the fake prints the records a compaction leaves.
func TestBackstopHandsOffAfterCompaction(t *testing.T) {
	for _, tc := range []struct {
		name, line, sign string
	}{
		{"compact_boundary", `{"type":"system","subtype":"compact_boundary","session_id":"x","compact_metadata":{"trigger":"auto","pre_tokens":167000}}`, "a compact_boundary line"},
		{"thrashing", `{"type":"system","subtype":"status","session_id":"x","status":"Autocompact is thrashing: the context refilled right after compacting"}`, `"Autocompact is thrashing"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newBench(t, harnesstest.ModeStream, harnesstest.EnvContext+"=100000", harnesstest.EnvExtraLine+"="+tc.line)
			rt := b.runtime(Options{})
			st, err := rt.RunStep(context.Background(), "s", "a task")
			if err != nil {
				t.Fatalf("RunStep: %v (errors %q)", err, st.Errors)
			}
			want := "the harness compacted its context although handoff switched that off (" + tc.sign + ")"
			found := false
			for _, e := range st.Errors {
				found = found || strings.Contains(e, want)
			}
			if !found {
				t.Errorf("errors %q lack %q", st.Errors, want)
			}
			if len(st.Generations) != 2 || st.Generations[0].Handoff == nil || st.Generations[0].Handoff.Reason != manifest.ReasonCompaction {
				t.Fatalf("want a handoff for the compaction, got %d generations", len(st.Generations))
			}
			if h := st.Generations[0].Handoff; h.Context >= 150_000 {
				t.Errorf("the cut came from the threshold (%d), not the backstop", h.Context)
			}
			loud := 0
			for _, ev := range b.events {
				if ev.Kind == KindNotice && ev.IsError && strings.Contains(ev.Text, want) {
					loud++
				}
			}
			if loud != 1 {
				t.Errorf("%d loud notices, want 1", loud)
			}
		})
	}
}

// With compact mode auto asked for explicitly (DESIGN.md «Auto-compact off»), a compaction is what the
// agent wanted: no backstop.
func TestBackstopQuietWithCompactAuto(t *testing.T) {
	line := `{"type":"system","subtype":"compact_boundary","session_id":"x"}`
	b := newBench(t, harnesstest.ModeStream, harnesstest.EnvContext+"=100000", harnesstest.EnvExtraLine+"="+line)
	rt := b.runtime(Options{Compact: policy.CompactAuto})
	st, err := rt.RunStep(context.Background(), "s", "a task")
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Generations) != 1 || len(st.Errors) != 0 {
		t.Errorf("%d generations, errors %q: the backstop fired although compact mode auto was asked for", len(st.Generations), st.Errors)
	}
}

// DESIGN.md «Compaction asked for»: every compaction the hook blocked is
// recorded; one automatic attempt is only recorded, a second one in the
// same session hands off (the harness's threshold is passed), before
// flower's own threshold. The fake runs its --settings' PreCompact hooks as
// the real harness does, and the hook is flower's (the test binary plays
// it, through levers.RunHook).
func TestBlockedAutoCompaction(t *testing.T) {
	for _, tc := range []struct {
		tries   string
		handoff bool
	}{{"auto", false}, {"auto,auto", true}} {
		t.Run(tc.tries, func(t *testing.T) {
			b := newBench(t, harnesstest.ModeStream, harnesstest.EnvContext+"=100000", harnesstest.EnvPreCompact+"="+tc.tries)
			rt := b.runtime(Options{HookBinary: os.Args[0]})
			st, err := rt.RunStep(context.Background(), "s", "a task")
			if err != nil {
				t.Fatalf("RunStep: %v (errors %q)", err, st.Errors)
			}
			bc := st.Generations[0].BlockedCompactions
			if n := strings.Count(tc.tries, "auto"); len(bc) != n {
				t.Fatalf("blocked compactions %+v: want %d", bc, n)
			}
			for _, c := range bc {
				if c.Trigger != "auto" || c.SessionID == "" || c.Context != 1000 {
					t.Errorf("blocked compaction %+v: want auto, its session, at the first round's 1000", c)
				}
			}
			for _, e := range harnesstest.ReadLog(b.log) {
				if e.Event == "precompact" && !strings.Contains(e.Text, `"decision":"block"`) {
					t.Errorf("the hook did not block: %s", e.Text)
				}
			}
			handedOff := len(st.Generations) == 2 && st.Generations[0].Handoff != nil && st.Generations[0].Handoff.Reason == manifest.ReasonCompactBlocked
			if handedOff != tc.handoff {
				t.Errorf("%d generations, handoff %+v: want a handoff for the blocked compactions %v", len(st.Generations), st.Generations[0].Handoff, tc.handoff)
			}
		})
	}
}

// A harness newer than any flower was tested on is named in one notice per
// run, with the doctor command; a tested one is not (DESIGN.md «Doctor»).
func TestNewerHarnessSaysSoOnce(t *testing.T) {
	for _, tc := range []struct {
		version string
		notices int
	}{{"99.0.1", 1}, {harness.PinnedVersion, 0}, {"", 0}} {
		t.Run("version "+tc.version, func(t *testing.T) {
			// Two generations, so two sessions and several init lines.
			b := newBench(t, harnesstest.ModeStream, harnesstest.EnvContext+"=160000", harnesstest.EnvVersion+"="+tc.version)
			rt := b.runtime(Options{})
			st, err := rt.RunStep(context.Background(), "s", "a task")
			if err != nil {
				t.Fatalf("RunStep: %v (errors %q)", err, st.Errors)
			}
			if len(st.Generations) < 2 {
				t.Fatalf("%d generations, want a handoff", len(st.Generations))
			}
			n := 0
			for _, ev := range b.events {
				if ev.Kind == KindNotice && strings.Contains(ev.Text, "newer than the newest flower was tested on") {
					n++
					if !strings.Contains(ev.Text, "harness "+tc.version+" ") || !strings.Contains(ev.Text, "flower doctor") || strings.Contains(ev.Text, "\n") {
						t.Errorf("notice %q: want one line naming %s and flower doctor", ev.Text, tc.version)
					}
				}
			}
			if n != tc.notices {
				t.Errorf("%d notices of a newer harness, want %d", n, tc.notices)
			}
		})
	}
}

// A harness that reports auto-compact on although handoff switched it off
// (something beat the levers, DESIGN.md «Compaction backstop») is said
// loudly once, in the step's errors and as an error notice. The real
// harness can no longer be made to do this from a workspace or HOME
// (integration: TestHostileWorkspaceCompactionHeldOff), so the fake says it.
func TestBackstopSeesAutoCompactOn(t *testing.T) {
	b := newBench(t, harnesstest.ModeStream, harnesstest.EnvContext+"=20000", harnesstest.EnvAutoCompactOn+"=1")
	rt := b.runtime(Options{})
	st, err := rt.RunStep(context.Background(), "s", "a task")
	if err != nil {
		t.Fatalf("RunStep: %v (errors %q)", err, st.Errors)
	}
	if g := st.Generations[0]; g.AutoCompactEnabled == nil || !*g.AutoCompactEnabled {
		t.Fatalf("premise: the fake should report auto-compact on, got %v", g.AutoCompactEnabled)
	}
	n := 0
	for _, e := range st.Errors {
		if strings.Contains(e, "auto-compact ON although handoff switched it off") {
			n++
		}
	}
	if n != 1 {
		t.Errorf("errors %q: want one backstop entry", st.Errors)
	}
	loud := 0
	for _, ev := range b.events {
		if ev.Kind == KindNotice && ev.IsError && strings.Contains(ev.Text, "auto-compact ON") {
			loud++
		}
	}
	if loud != 1 {
		t.Errorf("%d loud notices, want 1", loud)
	}
}
