package relay

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/flowerhq/flower/manifest"
)

// saveRun writes a manifest with one step that retired the given sessions
// and lives on in live.
func saveRun(t *testing.T, dir, live string, retired ...string) {
	t.Helper()
	m := manifest.New(dir, filepath.Dir(dir), time.Now())
	st := m.EnsureStep("main", "task", time.Now())
	for _, id := range retired {
		st.Retire(id)
	}
	st.SetSessionID(live)
	if err := m.Save(); err != nil {
		t.Fatal(err)
	}
}

func TestLiveSuccessor(t *testing.T) {
	wb := t.TempDir()
	saveRun(t, filepath.Join(wb, "runs", "1"), "B", "A")
	// A later run resumed B and handed off to C.
	saveRun(t, filepath.Join(wb, "runs", "2"), "C", "B")
	if got, ok, _ := LiveSuccessor(wb, nil, "A"); !ok || got != "C" {
		t.Errorf("LiveSuccessor(A) = %s %v, want C through B", got, ok)
	}
	if got, ok, _ := LiveSuccessor(wb, nil, "C"); ok || got != "C" {
		t.Errorf("LiveSuccessor of a live session = %s %v, want itself, false", got, ok)
	}
	other := t.TempDir()
	saveRun(t, other, "E", "D")
	if _, ok, _ := LiveSuccessor(wb, nil, "D"); ok {
		t.Error("found a session of a run dir it was not given")
	}
	if got, ok, _ := LiveSuccessor(wb, []string{other}, "D"); !ok || got != "E" {
		t.Errorf("LiveSuccessor(D) with the extra run dir = %s %v, want E", got, ok)
	}
}
