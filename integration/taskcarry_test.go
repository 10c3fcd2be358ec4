package integration_test

// The task in the person's own words reaches every generation: frozen to
// notes/任务-<step>.md at the step's start, read back from disk (a person's
// edit wins) and carried verbatim, up to --task-carry characters, in every
// successor's first prompt next to the handoff. These tests drive the real
// harness against the scripted API and look at what each successor's first
// request really carried.

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/flowerhq/flower/handoff"
	"github.com/flowerhq/flower/handoffwriter"
	"github.com/flowerhq/flower/manifest"
	"github.com/flowerhq/flower/scriptedapi"
	"github.com/flowerhq/flower/supervisor"
)

func sha(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// carriedNote is a phrase of the writing turn's note that the task will be
// carried; the writing turn hears it only when carrying is on.
const carriedNote = "exactly as the person gave it"

// requestsBySeq indexes the server's requests.
func requestsBySeq(srv *scriptedapi.Server) map[int]scriptedapi.Request {
	out := map[int]scriptedapi.Request{}
	for _, r := range srv.Requests() {
		out[r.Seq] = r
	}
	return out
}

// Generation 3's first request carries the task verbatim, including the
// edit a person made to the task file before generation 2 started; the
// receipts record the sha256 of the edited file as read.
func TestTaskReachesEveryGeneration(t *testing.T) {
	t.Parallel()
	const task = "Build the macOS shim. TASK-MARK-7f3\n" +
		"Constraints: do not touch the business code; POSIX sh only.\n" +
		"Done when: make passes on a clean clone.\n"
	const edit = "PERSON-EDIT-MARK: FreeBSD must build too.\n"
	work := []scriptedapi.Reply{bash(100_000, "echo one >> work.txt"), bash(155_000, "echo two >> work.txt")}
	j := &job{plans: [][]scriptedapi.Reply{work, work, {done(30_000)}}, handoff: goodHandoff}
	var taskFile string
	edits := 0
	f, st, err := runFlower(t, j, supervisor.Options{Handoff: window200k(0), Workbench: true,
		AfterFreeze: func(handoffPath string) {
			if edits > 0 {
				return
			}
			edits++
			// A person edits the task beside the handoff before generation 2.
			taskFile = filepath.Join(filepath.Dir(handoffPath), "任务-干活.md")
			b, err := os.ReadFile(taskFile)
			if err != nil {
				t.Errorf("the task file is not beside the handoff: %v", err)
				return
			}
			if err := os.WriteFile(taskFile, append(b, edit...), 0o644); err != nil {
				t.Error(err)
			}
		}}, task)
	if err != nil {
		t.Fatalf("RunStep: %v\nerrors: %q", err, st.Errors)
	}
	if len(st.Generations) != 3 || len(j.firstSeq) != 3 || len(j.writingSeq) != 2 {
		t.Fatalf("%d generations, first requests %v, writing turns %v", len(st.Generations), j.firstSeq, j.writingSeq)
	}
	edited := task + edit
	reqs := requestsBySeq(f.srv)
	for g := 2; g <= 3; g++ {
		first := reqs[j.firstSeq[g-1]]
		for _, want := range []string{
			"You are taking over",
			fmt.Sprintf("DOING-MARK-%d", g-1), // the handoff, as before
			handoffwriter.TaskHeading,         // clearly marked
			handoffwriter.TaskBegin + "\n" + edited + handoffwriter.TaskEnd,
		} {
			if !strings.Contains(first.LastUserText, want) {
				t.Errorf("generation %d's first request lacks %q", g, want)
			}
		}
		if strings.Contains(first.AllText, "running echo one") {
			t.Errorf("generation %d is not a fresh session", g)
		}
	}
	for _, seq := range j.writingSeq {
		if !strings.Contains(reqs[seq].LastUserText, carriedNote) {
			t.Errorf("writing turn %d was not told the task is carried verbatim", seq)
		}
	}
	// The task file holds the edit; the manifest keeps the task as given
	// and each receipt the sha256 of what the successor read.
	if st.TaskPath != taskFile || st.Task != task || st.TaskSHA256 != sha(task) {
		t.Errorf("step: task path %q (want %q), task %q, sha %s", st.TaskPath, taskFile, st.Task, st.TaskSHA256)
	}
	for _, g := range st.Generations[:2] {
		h := g.Handoff
		if h.TaskSHA256 != sha(edited) || h.TaskPath != taskFile || h.TaskCarried != manifest.TaskCarriedWhole {
			t.Errorf("generation %d receipt: task sha %s path %q carried %q; want the edit's %s", g.N, h.TaskSHA256, h.TaskPath, h.TaskCarried, sha(edited))
		}
	}
}

// A 20,000-character task goes in as its first 8,000 characters plus the
// path of a file that exists and holds the whole task.
func TestLongTaskCarriesFirstPartAndPath(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	for i := 0; utf8.RuneCountInString(b.String()) < 20_000; i++ {
		fmt.Fprintf(&b, "%05d 第%d条: 只用 POSIX sh, keep the business code untouched.\n", i, i)
	}
	task := string([]rune(b.String())[:20_000-len("TAIL-MARK\n")]) + "TAIL-MARK\n"
	if n := utf8.RuneCountInString(task); n != 20_000 {
		t.Fatalf("the task has %d characters", n)
	}
	j := &job{plans: [][]scriptedapi.Reply{{bash(100_000, "echo a"), bash(155_000, "echo b")}, {done(20_000)}}, handoff: goodHandoff}
	f, st, err := runFlower(t, j, supervisor.Options{Handoff: window200k(0), Workbench: true}, task)
	if err != nil || len(j.firstSeq) != 2 {
		t.Fatalf("RunStep: %v, first requests %v; errors %q", err, j.firstSeq, st.Errors)
	}
	first := requestsBySeq(f.srv)[j.firstSeq[1]]
	head := string([]rune(task)[:handoff.DefaultTaskCarry])
	path := filepath.Join(f.workspace, ".flower", "notes", "任务-干活.md")
	for _, want := range []string{
		"DOING-MARK-1",
		handoffwriter.TaskBegin + "\n" + head + "\n" + handoffwriter.TaskEnd,
		"Read the whole task in " + path + " before you act",
	} {
		if !strings.Contains(first.LastUserText, want) {
			t.Errorf("generation 2's first request lacks %.120q", want)
		}
	}
	if strings.Contains(first.AllText, "TAIL-MARK") {
		t.Errorf("generation 2's first request carries the task's end: more than the limit went in")
	}
	if disk, err := os.ReadFile(path); err != nil || string(disk) != task {
		t.Errorf("%s does not hold the whole task (%d bytes, %v)", path, len(disk), err)
	}
	if h := st.Generations[0].Handoff; h.TaskCarried != manifest.TaskCarriedPart || h.TaskSHA256 != sha(task) {
		t.Errorf("receipt: carried %q, sha %s", h.TaskCarried, h.TaskSHA256)
	}
}

// `flower --task-carry 0` carries nothing: the successor's first prompt is
// the handoff's block alone and the writing turn hears nothing of the task,
// as before there was carrying. The task is still frozen to its file.
func TestTaskCarryZeroCarriesNothing(t *testing.T) {
	t.Parallel()
	j := &job{plans: [][]scriptedapi.Reply{{bash(100_000, "echo a"), bash(155_000, "echo b")}, {done(20_000)}}, handoff: goodHandoff}
	srv := startServer(t, j.script)
	ws := t.TempDir()
	runDir := filepath.Join(ws, ".flower", "runs", "off")
	env := harnessEnv(t, srv, "FLOWER_HARNESS="+harnessPath(t))
	code, out := runFlowerCLI(t, env, "-C", ws, "--run-dir", runDir, "--window", "200000", "--task-carry", "0",
		"TASK-MARK-off: keep working", "--", "--allowedTools", "Bash")
	if code != 0 {
		t.Fatalf("flower exited %d:\n%s", code, out)
	}
	if len(j.firstSeq) != 2 || len(j.writingSeq) != 1 {
		t.Fatalf("first requests %v, writing turns %v", j.firstSeq, j.writingSeq)
	}
	reqs := requestsBySeq(srv)
	first := reqs[j.firstSeq[1]]
	notes, err := os.ReadFile(filepath.Join(ws, ".flower", "notes", "交接-main.md"))
	if err != nil {
		t.Fatal(err)
	}
	h := handoffwriter.Parse(string(notes))
	h.Step = "main"
	// The harness puts a system reminder of its own before the prompt;
	// after it comes the handoff's block, and nothing follows.
	if !strings.HasSuffix(strings.TrimSpace(first.LastUserText), strings.TrimSpace(h.PromptBlock())) {
		t.Errorf("generation 2's first prompt does not end with the handoff's block:\n%s", first.LastUserText)
	}
	if strings.Contains(first.AllText, "TASK-MARK-off") || strings.Contains(first.AllText, handoffwriter.TaskHeading) {
		t.Errorf("generation 2's first request carries the task")
	}
	if strings.Contains(reqs[j.writingSeq[0]].LastUserText, carriedNote) {
		t.Errorf("the writing turn was told the task is carried")
	}
	st := loadStep(t, runDir, "main")
	if hr := st.Generations[0].Handoff; hr.TaskSHA256 != "" || hr.TaskCarried != "" {
		t.Errorf("receipt records a carried task: %+v", hr)
	}
	if b, err := os.ReadFile(filepath.Join(ws, ".flower", "notes", "任务-main.md")); err != nil || string(b) != "TASK-MARK-off: keep working" {
		t.Errorf("the task file: %q, %v", b, err)
	}
}

// `flower rerun` starts its fresh generation the same way: the handoff file
// and the task file, each as a person left it on disk.
func TestRerunCarriesTheEditedTask(t *testing.T) {
	t.Parallel()
	j := &job{plans: [][]scriptedapi.Reply{{bash(100_000, "echo a"), bash(155_000, "echo b")}, {done(20_000)}}, handoff: goodHandoff}
	srv := startServer(t, j.script)
	ws := t.TempDir()
	runDir := filepath.Join(ws, ".flower", "runs", "rerun")
	env := harnessEnv(t, srv, "FLOWER_HARNESS="+harnessPath(t))
	args := []string{"-C", ws, "--run-dir", runDir, "--window", "200000"}
	code, out := runFlowerCLI(t, env, append(args, "TASK-MARK-rerun: port the parser", "--", "--allowedTools", "Bash")...)
	if code != 0 {
		t.Fatalf("flower exited %d:\n%s", code, out)
	}
	taskFile := filepath.Join(ws, ".flower", "notes", "任务-main.md")
	edited := "TASK-MARK-rerun: port the parser\nRERUN-EDIT-MARK: and the lexer.\n"
	if err := os.WriteFile(taskFile, []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}
	seq := len(srv.Requests())
	code, out = runFlowerCLI(t, env, append([]string{"rerun"}, append(args, "--", "--allowedTools", "Bash")...)...)
	if code != 0 {
		t.Fatalf("flower rerun exited %d:\n%s", code, out)
	}
	first := firstMainAfter(srv, seq)
	for _, want := range []string{"You are taking over", "DOING-MARK-1", handoffwriter.TaskBegin + "\n" + edited + handoffwriter.TaskEnd} {
		if !strings.Contains(first.LastUserText, want) {
			t.Errorf("the rerun's first request lacks %q", want)
		}
	}
	st := loadStep(t, runDir, "main")
	if st.Task != "TASK-MARK-rerun: port the parser" {
		t.Errorf("the manifest's task as given changed: %q", st.Task)
	}
}
