package handoff

import (
	"os"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/flowerhq/flower/handoffwriter"
	"github.com/flowerhq/flower/manifest"
)

func TestCarryLimit(t *testing.T) {
	for setting, want := range map[int]int{0: DefaultTaskCarry, -1: 0, -8000: 0, 1: 1, 20000: 20000} {
		if got := CarryLimit(setting); got != want {
			t.Errorf("CarryLimit(%d) = %d, want %d", setting, got, want)
		}
	}
}

func TestFreezeTaskRecordsPathAndDigest(t *testing.T) {
	f := newFixture(t, true, 8)
	st := f.books.Step
	path := f.books.FreezeTask()
	if path == "" || path != f.books.Workbench.TaskPath(st.Name) || st.TaskPath != path {
		t.Fatalf("path %q, step's %q", path, st.TaskPath)
	}
	b, err := os.ReadFile(path)
	if err != nil || string(b) != st.Task {
		t.Fatalf("file holds %q, %v", b, err)
	}
	if st.TaskSHA256 != Digest([]byte(st.Task)) || f.saves == 0 {
		t.Errorf("sha %q, saves %d", st.TaskSHA256, f.saves)
	}

	// Without a workbench the manifest keeps it: no path, still a digest.
	nf := newFixture(t, false, 8)
	if p := nf.books.FreezeTask(); p != "" || nf.books.Step.TaskPath != "" || nf.books.Step.TaskSHA256 == "" {
		t.Errorf("no workbench: path %q, step %+v", p, nf.books.Step)
	}
	// No task yet (an interactive step before the person typed it).
	ef := newFixture(t, true, 8)
	ef.books.Step.Task = ""
	if p := ef.books.FreezeTask(); p != "" {
		t.Errorf("an empty task was frozen to %q", p)
	}
}

// The successor's first prompt is the handoff, then the task verbatim under
// its marker; the receipt records the task's sha256 as read.
func TestLaunchCarriesTheTask(t *testing.T) {
	f := newFixture(t, true, 8)
	st := f.books.Step
	st.Task = "Port the parser.\nPOSIX sh only.\n"
	path := f.books.FreezeTask()
	fr, err := f.books.Freeze(f.gen, Cut{Handoff: good})
	if err != nil {
		t.Fatal(err)
	}
	p := f.books.Launch(fr)
	if !strings.HasPrefix(p, withStep(good, "干活").PromptBlock()) {
		t.Errorf("the prompt does not open with the handoff's block:\n%s", p)
	}
	if !strings.Contains(p, handoffwriter.TaskHeading) || !strings.Contains(p, handoffwriter.TaskBegin+"\n"+st.Task+handoffwriter.TaskEnd) {
		t.Errorf("the task is not carried verbatim:\n%s", p)
	}
	rec := fr.Record
	if rec.TaskSHA256 != st.TaskSHA256 || rec.TaskPath != path || rec.TaskCarried != manifest.TaskCarriedWhole {
		t.Errorf("receipt %+v", rec)
	}
}

// A person's edit of the task file wins over the task as given: the
// successor gets the edit, the degraded handoff's scene starts with it, and
// the receipt's sha256 is the edit's.
func TestTaskEditWins(t *testing.T) {
	f := newFixture(t, true, 8)
	st := f.books.Step
	path := f.books.FreezeTask()
	edited := "PERSON-EDIT: use the vendored zlib.\n" + st.Task
	if err := os.WriteFile(path, []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}
	fr, err := f.books.Freeze(f.gen, Cut{Why: "overflow", Reason: manifest.ReasonOverflow})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(fr.Handoff.Scene, "PERSON-EDIT") {
		t.Errorf("the degraded scene does not hold the edited task: %.60q", fr.Handoff.Scene)
	}
	p := f.books.Launch(fr)
	if !strings.Contains(p, handoffwriter.TaskBegin+"\n"+edited) {
		t.Errorf("the prompt does not carry the edited task")
	}
	if fr.Record.TaskSHA256 != Digest([]byte(edited)) || fr.Record.TaskSHA256 == st.TaskSHA256 {
		t.Errorf("receipt sha %s, edit's %s, as given %s", fr.Record.TaskSHA256, Digest([]byte(edited)), st.TaskSHA256)
	}
	if st.Task == edited {
		t.Errorf("the manifest's task as given was overwritten by the edit")
	}
}

// The degraded handoff keeps its own rule (scene: the first 1200
// characters); the carried task comes in addition, in full.
func TestDegradedHandoffAlsoCarriesTheTask(t *testing.T) {
	f := newFixture(t, true, 8)
	st := f.books.Step // the fixture's task is 1,416 runes
	f.books.FreezeTask()
	fr, _ := f.books.Freeze(f.gen, Cut{Why: "overflow"})
	if n := utf8.RuneCountInString(fr.Handoff.Scene); n != 1200 {
		t.Errorf("scene holds %d characters, want 1200", n)
	}
	p := f.books.Launch(fr)
	if !strings.Contains(p, handoffwriter.TaskBegin+"\n"+st.Task+"\n"+handoffwriter.TaskEnd) || fr.Record.TaskCarried != manifest.TaskCarriedWhole {
		t.Errorf("the degraded handoff's prompt lacks the whole task (%q)", fr.Record.TaskCarried)
	}
}

// A task over the limit goes in as its first part plus the path of the file
// that holds all of it.
func TestLongTaskCarriesFirstPartAndPath(t *testing.T) {
	f := newFixture(t, true, 8)
	st := f.books.Step
	st.Task = strings.Repeat("长任务。", 5000) // 20,000 characters
	path := f.books.FreezeTask()
	fr, _ := f.books.Freeze(f.gen, Cut{Handoff: good})
	p := f.books.Launch(fr)
	first := string([]rune(st.Task)[:DefaultTaskCarry])
	if !strings.Contains(p, handoffwriter.TaskBegin+"\n"+first+"\n"+handoffwriter.TaskEnd) {
		t.Errorf("the prompt does not carry exactly the first %d characters", DefaultTaskCarry)
	}
	if strings.Contains(p, string([]rune(st.Task)[:DefaultTaskCarry+1])) {
		t.Errorf("the prompt carries more than the limit")
	}
	if !strings.Contains(p, "Read the whole task in "+path) {
		t.Errorf("the prompt does not send the successor to %s", path)
	}
	if b, err := os.ReadFile(path); err != nil || string(b) != st.Task {
		t.Errorf("%s does not hold the whole task: %v", path, err)
	}
	if fr.Record.TaskCarried != manifest.TaskCarriedPart {
		t.Errorf("receipt says %q", fr.Record.TaskCarried)
	}

	// Without a workbench the rest is in the manifest, and it says so.
	nf := newFixture(t, false, 8)
	nf.books.Step.Task, nf.books.ManifestPath = st.Task, "/runs/x/manifest.json"
	nf.books.FreezeTask()
	nfr, _ := nf.books.Freeze(nf.gen, Cut{Handoff: good})
	if p := nf.books.Launch(nfr); !strings.Contains(p, `Read the whole task in the "task" field of step "干活" in /runs/x/manifest.json`) {
		t.Errorf("no workbench: the prompt does not point at the manifest")
	}
}

// Carrying off: the prompt is the handoff's block alone, as before, and
// nothing about the task is read or recorded.
func TestCarryOff(t *testing.T) {
	f := newFixture(t, true, 8)
	f.books.TaskCarry = -1
	f.books.FreezeTask()
	fr, _ := f.books.Freeze(f.gen, Cut{Handoff: good})
	if p := f.books.Launch(fr); p != withStep(good, "干活").PromptBlock() {
		t.Errorf("with carrying off the prompt is not the handoff's block alone:\n%s", p)
	}
	if r := fr.Record; r.TaskSHA256 != "" || r.TaskPath != "" || r.TaskCarried != "" {
		t.Errorf("receipt %+v", r)
	}
}

// A frozen task file that went missing: the manifest's copy is carried and
// the step's errors say so, once.
func TestMissingTaskFileFallsBackToManifest(t *testing.T) {
	f := newFixture(t, true, 8)
	st := f.books.Step
	path := f.books.FreezeTask()
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		task, from := f.books.Task()
		if task != st.Task || from != "" {
			t.Errorf("Task() = %.20q, %q", task, from)
		}
	}
	if len(st.Errors) != 1 || !strings.Contains(st.Errors[0], "read task "+path) {
		t.Errorf("errors %q", st.Errors)
	}
}

func TestWritingPrompt(t *testing.T) {
	plain := handoffwriter.HandoffPrompt(152_000, 200_000)
	if got := WritingPrompt(152_000, 200_000, "a task", 0); got != handoffwriter.HandoffPromptCarryingTask(152_000, 200_000) {
		t.Errorf("default carry: the writing turn is not told the task is carried")
	}
	for _, tc := range []struct {
		task  string
		carry int
	}{{"a task", -1}, {"", 0}} {
		if got := WritingPrompt(152_000, 200_000, tc.task, tc.carry); got != plain {
			t.Errorf("WritingPrompt(task %q, carry %d) is not the plain prompt", tc.task, tc.carry)
		}
	}
}

func withStep(h handoffwriter.Handoff, step string) handoffwriter.Handoff {
	h.Step = step
	return h
}
