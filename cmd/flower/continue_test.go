package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flowerhq/flower/harness/harnesstest"
	"github.com/flowerhq/flower/manifest"
)

// flowerIn runs flower in-process on the fake harness (stream mode) in
// workspace ws and returns its exit code and stderr.
func flowerIn(t *testing.T, ws, fakeLog string, args ...string) (int, string) {
	t.Helper()
	t.Setenv(harnesstest.EnvMode, harnesstest.ModeStream)
	t.Setenv(harnesstest.EnvLog, fakeLog)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var stdout, stderr strings.Builder
	argv := append([]string{"flower"}, args...)
	argv = append(argv[:2:2], append([]string{"--harness", os.Args[0], "-C", ws}, argv[2:]...)...)
	err := run(ctx, argv, strings.NewReader(""), &stdout, &stderr)
	if err != nil {
		stderr.WriteString("flower: " + err.Error() + "\n")
	}
	return exitCode(err), stderr.String()
}

func fakeStarts(path string) []harnesstest.LogEntry {
	var out []harnesstest.LogEntry
	for _, e := range harnesstest.ReadLog(path) {
		if e.Event == "start" {
			out = append(out, e)
		}
	}
	return out
}

// rerun starts from the handoff file a person edited; a broken file is
// refused with its path and problem, exit 1, and nothing runs. continue
// finds the latest run and its only step by itself.
func TestRerunAndContinueCommands(t *testing.T) {
	ws := t.TempDir()
	fakeLog := filepath.Join(t.TempDir(), "fake.log")
	if code, out := flowerIn(t, ws, fakeLog, "run", "TASK-MARK"); code != 0 {
		t.Fatalf("run: exit %d\n%s", code, out)
	}
	notes := filepath.Join(ws, ".flower", "notes", "交接-main.md")

	// No handoff yet.
	code, out := flowerIn(t, ws, fakeLog, "rerun")
	if code != exitFailed || !strings.Contains(out, notes) || !strings.Contains(out, "does not exist") {
		t.Errorf("rerun without a file: exit %d\n%s", code, out)
	}
	// A person deleted the next section.
	if err := os.MkdirAll(filepath.Dir(notes), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(notes, []byte("## 现在在做 (doing)\nHalf done.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out = flowerIn(t, ws, fakeLog, "rerun")
	if code != exitFailed || !strings.Contains(out, notes) || !strings.Contains(out, "lacks the required section(s) next") {
		t.Errorf("rerun on a broken file: exit %d\n%s", code, out)
	}
	if n := len(fakeStarts(fakeLog)); n != 1 {
		t.Fatalf("%d harness starts: something ran on a broken handoff", n)
	}
	// Mended.
	if err := os.WriteFile(notes, []byte("## 现在在做 (doing)\nHalf done.\n\n## 下一步 (next)\nPERSON-EDIT finish it.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// flower never wrote this file: no manifest records its path or its
	// contents, so it is refused until the person vouches for it
	// (DESIGN.md «Known documents»).
	code, out = flowerIn(t, ws, fakeLog, "rerun")
	if code != exitFailed || !strings.Contains(out, notes) || !strings.Contains(out, "--trust-notes") {
		t.Errorf("rerun on a file no manifest records: exit %d\n%s", code, out)
	}
	if n := len(fakeStarts(fakeLog)); n != 1 {
		t.Fatalf("%d harness starts: something ran on an unknown handoff", n)
	}
	if code, out = flowerIn(t, ws, fakeLog, "rerun", "--trust-notes"); code != 0 {
		t.Fatalf("rerun: exit %d\n%s", code, out)
	}
	starts := fakeStarts(fakeLog)
	var firstText string
	for _, e := range harnesstest.ReadLog(fakeLog) {
		if e.Event == "user" && e.PID == starts[len(starts)-1].PID {
			firstText = e.Text
			break
		}
	}
	if len(starts) != 2 || !strings.Contains(firstText, "PERSON-EDIT finish it.") {
		t.Errorf("the rerun's session was not started from the file: %q", firstText)
	}

	// continue: a succeeded step needs a message (a usage error); with one
	// it resumes the latest session.
	if code, out = flowerIn(t, ws, fakeLog, "continue"); code != exitUsage || !strings.Contains(out, "give a message") {
		t.Errorf("continue without a message: exit %d\n%s", code, out)
	}
	if code, out = flowerIn(t, ws, fakeLog, "continue", "one more thing"); code != 0 {
		t.Fatalf("continue: exit %d\n%s", code, out)
	}
	runDir, _ := filepath.EvalSymlinks(filepath.Join(ws, ".flower", "runs", "latest"))
	m, err := manifest.Load(manifest.Path(runDir))
	if err != nil {
		t.Fatal(err)
	}
	st := m.Step("main")
	last := fakeStarts(fakeLog)
	if st == nil || len(last) != 3 || !strings.Contains(strings.Join(last[2].Args, " "), "--resume "+st.SessionID) {
		t.Errorf("continue did not resume the step's session: %+v", last)
	}
	if code, out = flowerIn(t, ws, fakeLog, "continue", "--step", "nope", "x"); code != exitUsage || !strings.Contains(out, `no step "nope"`) {
		t.Errorf("continue of an unknown step: exit %d\n%s", code, out)
	}
}
