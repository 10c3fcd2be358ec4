package supervisor

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/flowerhq/flower/handoffwriter"
	"github.com/flowerhq/flower/harness/harnesstest"
	"github.com/flowerhq/flower/manifest"
)

// An interrupted step's session is resumed (--resume, same session id), is
// told to carry on, and finishes in the same generation.
func TestContinueResumesInterruptedSession(t *testing.T) {
	b := newBench(t, harnesstest.ModeHangTurn, harnesstest.EnvFaultyStarts+"=1")
	st, err := b.runUntilHung(b.runtime(Options{}), "s", "TASK-MARK do it", 1)
	if !errors.Is(err, context.Canceled) || st.Status != manifest.StatusInterrupted {
		t.Fatalf("first run: %v, status %s", err, st.Status)
	}
	s1 := st.SessionID
	if s1 == "" {
		t.Fatal("the interrupted step has no session to continue")
	}

	st, err = b.runtime(Options{}).Continue(context.Background(), "s", "")
	if err != nil {
		t.Fatalf("Continue: %v (errors %q)", err, st.Errors)
	}
	starts := b.starts()
	if len(starts) != 2 || resumeOf(starts[1]) != s1 {
		t.Fatalf("starts %+v: the second must resume %s", starts, s1)
	}
	if p := b.firstPrompts()[1]; p != ContinueMessage {
		t.Errorf("the resumed session was told %q", p)
	}
	disk := b.onDisk("s")
	if disk.Status != manifest.StatusSucceeded || len(disk.Generations) != 1 || disk.SessionID != s1 ||
		len(disk.Retired) != 0 || disk.Attempts != 0 || disk.Generations[0].EndedAt == nil {
		t.Errorf("manifest after continue: status %s, %d generations, session %s, retired %q, attempts %d",
			disk.Status, len(disk.Generations), disk.SessionID, disk.Retired, disk.Attempts)
	}
	if !hasError(disk, "interrupted") {
		t.Errorf("the interruption left no trace in errors: %q", disk.Errors)
	}
}

// After a handoff the step's session is the successor's: continue resumes
// it, never the retired one, and keeps supervising it — it hands off again
// at the threshold and the generation count carries on.
func TestContinueResumesSuccessorAndKeepsHandingOff(t *testing.T) {
	// start 1 hands off at 155k; start 2 (the successor) hangs; start 3
	// (the resumed successor) reports 155k again and hands off; start 4
	// finishes.
	b := newBench(t, harnesstest.ModeHangTurn, harnesstest.EnvFaultyStarts+"=2", harnesstest.EnvContext+"=155000")
	st, err := b.runUntilHung(b.runtime(Options{}), "s", "TASK-MARK", 3) // task, writing turn, successor's prompt
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("first run: %v", err)
	}
	if len(st.Generations) != 2 || len(st.Retired) != 1 || st.SessionID == "" || st.SessionID == st.Retired[0] {
		t.Fatalf("after one handoff: %d generations, retired %q, session %q", len(st.Generations), st.Retired, st.SessionID)
	}
	s1, s2 := st.Retired[0], st.SessionID

	// Resumed, the successor's first turn reports 155k: it hands off
	// again, and generation 3 finishes.
	st, err = b.runtime(Options{}).Continue(context.Background(), "s", "PERSON-MESSAGE carry on")
	if err != nil {
		t.Fatalf("Continue: %v (errors %q)", err, st.Errors)
	}
	starts := b.starts()
	if got := resumeOf(starts[2]); got != s2 {
		t.Fatalf("continue resumed %q, want the successor %s (retired %s)", got, s2, s1)
	}
	// The successor hung before it answered its first request: its first
	// prompt may never have reached its conversation, and it is sent again,
	// from the handoff file, with the person's message after it.
	if p := b.firstPrompts()[2]; !strings.Contains(p, harnesstest.HandoffMark+" "+s1) || !strings.HasSuffix(p, "PERSON-MESSAGE carry on") {
		t.Errorf("resumed session told %q: want generation 1's handoff again, then the person's message", p)
	}
	disk := b.onDisk("s")
	if disk.Status != manifest.StatusSucceeded || len(disk.Generations) != 3 {
		t.Fatalf("status %s with %d generations, want succeeded with 3", disk.Status, len(disk.Generations))
	}
	if len(disk.Retired) != 2 || disk.Retired[0] != s1 || disk.Retired[1] != s2 || disk.SessionID == s2 {
		t.Errorf("retired %q session %q", disk.Retired, disk.SessionID)
	}
	if h := disk.Generations[1].Handoff; h == nil || h.Degraded || h.Context < 150_000 {
		t.Errorf("generation 2's handoff after the resume: %+v", h)
	}
	b2, _ := os.ReadFile(b.handoffPath("s"))
	if !strings.Contains(string(b2), harnesstest.HandoffMark+" "+s2) {
		t.Errorf("the handoff file is not the resumed successor's:\n%s", b2)
	}
	if p := b.firstPrompts()[3]; !strings.Contains(p, harnesstest.HandoffMark+" "+s2) || resumeOf(starts[3]) != "" {
		t.Errorf("generation 3 did not start fresh from generation 2's handoff: %q", p)
	}
}

// The harness refuses to resume the session (it does not know it): a
// fresh generation starts from the handoff file, or from the task when the
// step never handed off, and the manifest says so. It is not a failure.
func TestContinueRefusedResume(t *testing.T) {
	for _, tc := range []struct {
		name     string
		extra    []string
		turns    int
		wantFrom string // in the fresh session's first prompt
	}{
		{"from the handoff file", []string{harnesstest.EnvFaultyStarts + "=2", harnesstest.EnvContext + "=155000"}, 3, harnesstest.HandoffMark},
		{"from the task", []string{harnesstest.EnvFaultyStarts + "=1"}, 1, "TASK-MARK"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newBench(t, harnesstest.ModeHangTurn, tc.extra...)
			st, _ := b.runUntilHung(b.runtime(Options{}), "s", "TASK-MARK", tc.turns)
			lost := st.SessionID
			gens := len(st.Generations)
			if err := os.Remove(filepath.Join(b.sessions, lost)); err != nil {
				t.Fatal(err)
			}
			st, err := b.runtime(Options{}).Continue(context.Background(), "s", "")
			if err != nil {
				t.Fatalf("Continue: %v (errors %q)", err, st.Errors)
			}
			starts, prompts := b.starts(), b.firstPrompts()
			n := len(starts)
			if resumeOf(starts[n-2]) != lost || resumeOf(starts[n-1]) != "" {
				t.Fatalf("want a refused resume of %s then a fresh start: %+v", lost, starts)
			}
			if !strings.Contains(prompts[n-1], tc.wantFrom) {
				t.Errorf("fresh session's first prompt lacks %q:\n%s", tc.wantFrom, prompts[n-1])
			}
			disk := b.onDisk("s")
			if disk.Status != manifest.StatusSucceeded || disk.Attempts != 0 || len(disk.Generations) != gens+1 {
				t.Errorf("status %s attempts %d generations %d (was %d)", disk.Status, disk.Attempts, len(disk.Generations), gens)
			}
			if !hasError(disk, "could not be resumed") || !hasError(disk, "No conversation found") {
				t.Errorf("errors do not say the resume was refused: %q", disk.Errors)
			}
			if !slices.Contains(disk.Retired, lost) || disk.SessionID == lost {
				t.Errorf("the lost session %s must be retired: retired %q, session %s", lost, disk.Retired, disk.SessionID)
			}
			if !slices.ContainsFunc(b.notices(), func(s string) bool { return strings.Contains(s, "could not be resumed") }) {
				t.Errorf("no notice said so: %q", b.notices())
			}
		})
	}
}

// Stopped in the middle of a handoff: continue does not resume the cut
// session; the successor starts from the handoff file if the generation
// wrote it before it stopped, else from a degraded handoff of the task.
func TestContinueFinishesInterruptedHandoff(t *testing.T) {
	for _, tc := range []struct {
		name     string
		written  bool // the handoff reached the file before the stop
		wantText string
		degraded bool
	}{
		{"nothing written", false, handoffwriter.DegradedMarker, true},
		{"file written", true, "WRITTEN-BEFORE-THE-STOP", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newBench(t, harnesstest.ModeHangWriting, harnesstest.EnvFaultyStarts+"=1", harnesstest.EnvContext+"=155000")
			st, _ := b.runUntilHung(b.runtime(Options{}), "s", "TASK-MARK", 2) // the task, the writing turn
			if st.Status != manifest.StatusInterrupted || st.Context < 150_000 || st.Generations[0].Handoff != nil {
				t.Fatalf("premise: interrupted in the writing turn: status %s context %d", st.Status, st.Context)
			}
			cut := st.SessionID
			if tc.written {
				// Flower froze the file, then died before the manifest said so.
				doc := handoffwriter.Handoff{Doing: "WRITTEN-BEFORE-THE-STOP", Next: "go on"}.Markdown()
				if err := os.WriteFile(b.handoffPath("s"), []byte(doc), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			st, err := b.runtime(Options{}).Continue(context.Background(), "s", "")
			if err != nil {
				t.Fatalf("Continue: %v (errors %q)", err, st.Errors)
			}
			starts, prompts := b.prompted()
			last := len(starts) - 1
			if len(starts) != 2 || resumeOf(starts[last]) != "" {
				t.Fatalf("want one fresh successor, got starts %+v", starts)
			}
			if !strings.Contains(prompts[last], tc.wantText) || !strings.Contains(prompts[last], "taking over") {
				t.Errorf("successor's prompt lacks %q:\n%s", tc.wantText, prompts[last])
			}
			if tc.degraded && !strings.Contains(prompts[last], "TASK-MARK") {
				t.Errorf("the degraded handoff lacks the task")
			}
			disk := b.onDisk("s")
			h := disk.Generations[0].Handoff
			if disk.Status != manifest.StatusSucceeded || len(disk.Generations) != 2 || h == nil || h.Degraded != tc.degraded {
				t.Fatalf("status %s, %d generations, handoff %+v", disk.Status, len(disk.Generations), h)
			}
			if h.Path != b.handoffPath("s") || h.SHA256Written == "" || h.SHA256Launched == "" {
				t.Errorf("handoff record %+v", h)
			}
			if !slices.Contains(disk.Retired, cut) || disk.SessionID == cut {
				t.Errorf("the cut session %s must be retired: %q", cut, disk.Retired)
			}
			if tc.degraded && !hasError(disk, "交接降级(flower stopped during generation 1") {
				t.Errorf("no 交接降级 entry: %q", disk.Errors)
			}
			if f, _ := os.ReadFile(b.handoffPath("s")); !strings.Contains(string(f), tc.wantText) {
				t.Errorf("the handoff file lacks %q:\n%s", tc.wantText, f)
			}
		})
	}
}

// Stopped after the handoff was recorded, with or without the successor's
// generation begun: the successor starts from the file as it is on disk
// now (edited here), and no generation is skipped.
func TestContinueAfterRecordedHandoff(t *testing.T) {
	for _, begun := range []bool{false, true} {
		name := "successor not begun"
		if begun {
			name = "successor begun, no session"
		}
		t.Run(name, func(t *testing.T) {
			b := newBench(t, harnesstest.ModeStream, harnesstest.EnvContext+"=155000")
			ctx, cancel := context.WithCancel(context.Background())
			rt := b.runtime(Options{AfterFreeze: func(string) { cancel() }})
			st, err := rt.RunStep(ctx, "s", "TASK-MARK")
			if !errors.Is(err, context.Canceled) || len(st.Generations) != 2 || st.Generations[1].SessionID != "" {
				t.Fatalf("premise: stopped before the successor started: %v, %d generations", err, len(st.Generations))
			}
			if !begun {
				// As if killed in the pause after the freeze: drop the
				// successor's generation from the file.
				m, _ := manifest.Load(manifest.Path(b.runDir))
				s := m.Step("s")
				s.Generations = s.Generations[:1]
				s.Status = manifest.StatusRunning
				if err := m.Save(); err != nil {
					t.Fatal(err)
				}
			}
			f, _ := os.ReadFile(b.handoffPath("s"))
			edited := strings.Replace(string(f), "Echo the next turn.", "Echo the next turn. PERSON-EDIT", 1)
			if err := os.WriteFile(b.handoffPath("s"), []byte(edited), 0o644); err != nil {
				t.Fatal(err)
			}
			st, err = b.runtime(Options{}).Continue(context.Background(), "s", "")
			if err != nil {
				t.Fatalf("Continue: %v (errors %q)", err, st.Errors)
			}
			prompts := b.firstPrompts()
			if p := prompts[len(prompts)-1]; !strings.Contains(p, "PERSON-EDIT") || resumeOf(b.starts()[len(prompts)-1]) != "" {
				t.Errorf("the successor did not start fresh from the edited file:\n%s", p)
			}
			disk := b.onDisk("s")
			if disk.Status != manifest.StatusSucceeded || len(disk.Generations) != 2 || disk.Generations[1].SessionID == "" {
				t.Errorf("status %s, %d generations", disk.Status, len(disk.Generations))
			}
		})
	}
}

// A succeeded step is continued only with something to say; an unknown
// step is named with the steps there are.
func TestContinueRefusals(t *testing.T) {
	b := newBench(t, harnesstest.ModeStream)
	if _, err := b.runtime(Options{}).RunStep(context.Background(), "s", "task"); err != nil {
		t.Fatal(err)
	}
	if _, err := b.runtime(Options{}).Continue(context.Background(), "s", ""); !errors.Is(err, ErrNothingToContinue) {
		t.Errorf("continue a succeeded step without a message: %v", err)
	}
	_, err := b.runtime(Options{}).Continue(context.Background(), "other", "")
	if !errors.Is(err, ErrNoStep) || !strings.Contains(err.Error(), `"other"`) || !strings.Contains(err.Error(), "s") {
		t.Errorf("unknown step: %v", err)
	}
	if n := len(b.starts()); n != 1 {
		t.Errorf("%d harness starts, want only the run's", n)
	}
	st, err := b.runtime(Options{}).Continue(context.Background(), "s", "one more thing")
	if err != nil || st.Status != manifest.StatusSucceeded || resumeOf(b.starts()[1]) != st.SessionID {
		t.Errorf("continue with a message: %v, status %s", err, st.Status)
	}
}

// Rerun starts a fresh generation from the file as a person left it.
func TestRerunFromEditedHandoff(t *testing.T) {
	b := newBench(t, harnesstest.ModeStream, harnesstest.EnvContext+"=155000")
	st, err := b.runtime(Options{}).RunStep(context.Background(), "s", "TASK-MARK")
	if err != nil || len(st.Generations) != 2 {
		t.Fatalf("premise: a handoff then done: %v, %d generations", err, len(st.Generations))
	}
	live := st.SessionID
	f, _ := os.ReadFile(b.handoffPath("s"))
	edited := strings.Replace(string(f), "Echo the next turn.", "PERSON-EDIT: do it the other way.", 1)
	if err := os.WriteFile(b.handoffPath("s"), []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}
	st, err = b.runtime(Options{}).Rerun(context.Background(), "s")
	if err != nil {
		t.Fatalf("Rerun: %v (errors %q)", err, st.Errors)
	}
	starts, prompts := b.starts(), b.firstPrompts()
	if len(starts) != 3 || resumeOf(starts[2]) != "" || !strings.Contains(prompts[2], "PERSON-EDIT: do it the other way.") {
		t.Fatalf("the rerun did not start fresh from the edited file: starts %+v\n%s", starts, prompts[len(prompts)-1])
	}
	disk := b.onDisk("s")
	if disk.Status != manifest.StatusSucceeded || len(disk.Generations) != 3 || !slices.Contains(disk.Retired, live) {
		t.Errorf("status %s, %d generations, retired %q (live was %s)", disk.Status, len(disk.Generations), disk.Retired, live)
	}
	if !slices.ContainsFunc(b.notices(), func(s string) bool { return strings.Contains(s, "rerun: generation 3 starts from") }) {
		t.Errorf("notices %q", b.notices())
	}
}

// A handoff file a person broke is refused with a message naming the file
// and the problem; nothing runs and the manifest is untouched.
func TestRerunRefusesBrokenHandoff(t *testing.T) {
	good := handoffwriter.Handoff{Doing: "doing", Next: "next"}.Markdown()
	for _, tc := range []struct {
		name    string
		content []byte // nil: no file
		problem string
	}{
		{"missing", nil, "does not exist"},
		{"empty", []byte(""), "is empty"},
		{"blank", []byte("\n  \n"), "is empty"},
		{"not utf-8", []byte(strings.Replace(good, "doing", "do\xffing", 1)), "is not UTF-8 text (byte 0xff at offset"},
		{"next deleted", []byte(strings.Split(good, "## 下一步")[0]), `lacks the required section(s) next: put back "## 下一步 (next)"`},
		{"everything but a title", []byte("# 交接 · s\n\nsome words\n"), "lacks the required section(s) doing, next"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newBench(t, harnesstest.ModeStream)
			if _, err := b.runtime(Options{}).RunStep(context.Background(), "s", "task"); err != nil {
				t.Fatal(err)
			}
			path := b.handoffPath("s")
			if tc.content != nil {
				if err := os.WriteFile(path, tc.content, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			before, _ := os.ReadFile(manifest.Path(b.runDir))
			_, err := b.runtime(Options{}).Rerun(context.Background(), "s")
			var hfe *HandoffFileError
			if !errors.As(err, &hfe) || hfe.Path != path || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), tc.problem) {
				t.Fatalf("Rerun: %v\nwant a HandoffFileError naming %s and %q", err, path, tc.problem)
			}
			if tc.content == nil && !errors.Is(err, fs.ErrNotExist) || tc.content != nil && !errors.Is(err, ErrBrokenHandoff) {
				t.Errorf("error %v wraps the wrong sentinel", err)
			}
			if n := len(b.starts()); n != 1 {
				t.Errorf("%d harness starts: something ran on a broken handoff", n)
			}
			after, _ := os.ReadFile(manifest.Path(b.runDir))
			if !equalIgnoringUpdate(before, after) {
				t.Errorf("the refused rerun changed the manifest")
			}
		})
	}
}

// equalIgnoringUpdate compares two manifest files but for updated_at,
// which New's initial save refreshes.
func equalIgnoringUpdate(a, b []byte) bool {
	strip := func(x []byte) string {
		var lines []string
		for _, l := range strings.Split(string(x), "\n") {
			if !strings.Contains(l, `"updated_at"`) {
				lines = append(lines, l)
			}
		}
		return strings.Join(lines, "\n")
	}
	return strip(a) == strip(b)
}

// A broken handoff file is refused by continue too when it is what the
// successor would start from.
func TestContinueRefusesBrokenHandoff(t *testing.T) {
	b := newBench(t, harnesstest.ModeStream, harnesstest.EnvContext+"=155000")
	ctx, cancel := context.WithCancel(context.Background())
	if _, err := b.runtime(Options{AfterFreeze: func(string) { cancel() }}).RunStep(ctx, "s", "task"); !errors.Is(err, context.Canceled) {
		t.Fatalf("premise: %v", err)
	}
	if err := os.WriteFile(b.handoffPath("s"), []byte("\x00\x01"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := b.runtime(Options{}).Continue(context.Background(), "s", "")
	var hfe *HandoffFileError
	// A successor started early with the writing turn got no prompt and was stopped
	// when the run was cancelled; continue starts nothing.
	if starts, _ := b.prompted(); !errors.As(err, &hfe) || len(starts) != 1 {
		t.Errorf("Continue on a broken file: %v, %d prompted starts", err, len(starts))
	}
}
