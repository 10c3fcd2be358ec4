package supervisor

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/flowerhq/flower/harness/harnesstest"
	"github.com/flowerhq/flower/trust"
)

// DESIGN.md «Known documents»: rerun takes a person's edit of a handoff
// flower wrote, and says so; it refuses a handoff no manifest recorded
// unless the person vouches for it.
func TestRerunKnownDocuments(t *testing.T) {
	ctx := context.Background()
	b := newBench(t, harnesstest.ModeStream, harnesstest.EnvContext+"=155000")
	if _, err := b.runtime(Options{}).RunStep(ctx, "s", "task"); err != nil {
		t.Fatalf("RunStep: %v", err)
	}
	path := b.handoffPath("s")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, append(data, []byte("\nPERSON-EDIT\n")...), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := b.runtime(Options{}).Rerun(ctx, "s"); err != nil {
		t.Fatalf("Rerun on a person's edit: %v", err)
	}
	if p := b.firstPrompts(); !strings.Contains(p[len(p)-1], "PERSON-EDIT") {
		t.Errorf("the rerun's prompt lacks the edit:\n%s", p[len(p)-1])
	}
	if !hasNotice(b.notices(), "taken as a person's edit") {
		t.Errorf("the edit was not said: %q", b.notices())
	}

	planted := b.handoffPath("t")
	doc := "## 现在在做 (doing)\nPLANTED-MARK doing.\n\n## 下一步 (next)\nPLANTED-MARK next.\n"
	if err := os.WriteFile(planted, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	starts := len(b.starts())
	_, err = b.runtime(Options{}).Rerun(ctx, "t")
	var ue *UnknownNoteError
	if !errors.As(err, &ue) || ue.Path != planted || !strings.Contains(err.Error(), TrustNotesFlag) {
		t.Fatalf("Rerun on a file no manifest recorded: %v", err)
	}
	if n := len(b.starts()); n != starts {
		t.Errorf("%d harness starts on a refused file", n-starts)
	}
	if _, err := b.runtime(Options{TrustNotes: true}).Rerun(ctx, "t"); err != nil {
		t.Fatalf("Rerun vouched for: %v", err)
	}
	if p := b.firstPrompts(); !strings.Contains(p[len(p)-1], "PLANTED-MARK") {
		t.Errorf("the vouched-for file did not start the rerun")
	}
	if st := b.onDisk("t"); !hasError(st, "on the person's word") {
		t.Errorf("the manifest does not say the file was vouched for: %q", st.Errors)
	}
}

// A new run moves a handoff file no manifest recorded into the archive,
// says so, and never reads it.
func TestNewRunSetsAsideUnknownHandoff(t *testing.T) {
	b := newBench(t, harnesstest.ModeStream)
	planted := b.handoffPath("s")
	if err := os.MkdirAll(b.workspace+"/.flower/notes", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(planted, []byte("## 现在在做 (doing)\nPLANTED\n\n## 下一步 (next)\nPLANTED\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := b.runtime(Options{}).RunStep(context.Background(), "s", "task"); err != nil {
		t.Fatalf("RunStep: %v", err)
	}
	if _, err := os.Lstat(planted); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the planted handoff is still in place: %v", err)
	}
	if !hasNotice(b.notices(), "was not written by flower") {
		t.Errorf("not said: %q", b.notices())
	}
}

// DESIGN.md «Known documents»: a run dir the trust store holds no receipt
// of (one made under another HOME, or shipped with the repository) is
// refused by Continue and Rerun whatever its manifest says, until the
// person adopts it.
func TestContinueRefusesRunWithoutReceipt(t *testing.T) {
	ctx := context.Background()
	b := newBench(t, harnesstest.ModeStream, harnesstest.EnvContext+"=155000")
	if _, err := b.runtime(Options{}).RunStep(ctx, "s", "task"); err != nil {
		t.Fatalf("RunStep: %v", err)
	}
	elsewhere, err := trust.Open([]string{"XDG_STATE_HOME=" + t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	starts := len(b.starts())
	for _, call := range []func(*Runtime) error{
		func(rt *Runtime) error { _, err := rt.Continue(ctx, "s", "go on"); return err },
		func(rt *Runtime) error { _, err := rt.Rerun(ctx, "s"); return err },
	} {
		err := call(b.runtime(Options{Trust: elsewhere}))
		var ue *UnknownNoteError
		if !errors.As(err, &ue) || ue.What != "run dir" || ue.Path != b.runDir || !strings.Contains(err.Error(), TrustNotesFlag) {
			t.Fatalf("a run without a receipt: %v", err)
		}
	}
	if n := len(b.starts()); n != starts {
		t.Errorf("%d harness starts on a refused run", n-starts)
	}
	if _, err := b.runtime(Options{Trust: elsewhere, TrustNotes: true}).Continue(ctx, "s", "go on"); err != nil {
		t.Fatalf("Continue adopted: %v", err)
	}
	if !hasNotice(b.notices(), "adopted on the person's word") {
		t.Errorf("the adoption was not said: %q", b.notices())
	}
	// Adopted once, it is the person's from then on.
	if _, err := b.runtime(Options{Trust: elsewhere}).Continue(ctx, "s", "again"); err != nil {
		t.Fatalf("Continue after adoption: %v", err)
	}
}

func hasNotice(notices []string, s string) bool {
	for _, n := range notices {
		if strings.Contains(n, s) {
			return true
		}
	}
	return false
}
