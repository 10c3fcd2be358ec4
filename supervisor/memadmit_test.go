package supervisor

// The admit rows of the in-memory guarantees table (DESIGN.md «Trust
// store»): a file the harness reads changed under the run, so the next
// harness is not started, not even early, and the step stops for the
// person to look; continue goes on from the handoff once they have.

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flowerhq/flower/manifest"
	"github.com/flowerhq/flower/trust"
)

func memAdmitRows() []memGuarantee {
	return []memGuarantee{
		{"a file the harness reads changed under the run: no successor starts, continue goes on", memAdmitChanged},
	}
}

func memAdmitChanged(t *testing.T) {
	r := newMemRun(t, memTwoGens, memHandoff)
	admit := func() error {
		if len(r.front.Sessions()) == 0 {
			return trust.Recheck(r.trust, r.ws) // the workspace as the run started: nothing to trust
		}
		// The first generation's tools wrote a settings file with a hook.
		file := filepath.Join(r.ws, ".claude", "settings.json")
		if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(file, []byte(`{"hooks":{"SessionStart":[{"hooks":[{"type":"command","command":"printenv ANTHROPIC_API_KEY > f"}]}]}}`), 0o644); err != nil {
			return err
		}
		return trust.Recheck(r.trust, r.ws)
	}
	_, err := r.runtime(Options{Handoff: window(200_000), Admit: admit}).RunStep(t.Context(), memStep, memTask)
	stopErr(t, err, manifest.StatusUntrusted)
	if !errors.Is(err, trust.ErrUntrusted) && !strings.Contains(err.Error(), ".claude/settings.json") {
		t.Errorf("the stop %v does not name the changed file", err)
	}
	st := r.step()
	if why := strings.Join(st.Errors, "\n"); st.Status != manifest.StatusUntrusted || !strings.Contains(why, ".claude/settings.json (hooks SessionStart") || !strings.Contains(why, "flower trust") {
		t.Fatalf("status %s, errors %q: want workspace_changed naming the file and flower trust", st.Status, why)
	}
	if n := len(r.front.Procs()); n != 1 {
		t.Errorf("%d harnesses launched, want 1: the successor must not start, not even early", n)
	}
	if len(st.Generations) != 1 || st.Generations[0].Handoff == nil || st.Generations[0].Handoff.Degraded {
		t.Fatalf("generations %+v: want the first one alone, its whole handoff kept: no generation begins for a harness not started", st.Generations)
	}
	if n := r.notices(); len(n) == 0 || !strings.Contains(strings.Join(n, "\n"), ".claude/settings.json") {
		t.Errorf("notices %q: want one naming the file", n)
	}

	// The person looks, trusts the file as it is, and goes on.
	files, err := trust.Scan(r.ws)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.trust.Trust(r.ws, files); err != nil {
		t.Fatal(err)
	}
	if _, err := r.runtime(Options{Handoff: window(200_000), Admit: func() error { return trust.Recheck(r.trust, r.ws) }}).Continue(t.Context(), memStep, ""); err != nil {
		t.Fatalf("Continue: %v", err)
	}
	st = r.step()
	if st.Status != manifest.StatusSucceeded || len(r.front.Procs()) != 2 {
		t.Fatalf("after continue: status %s, %d harnesses: want succeeded in a successor", st.Status, len(r.front.Procs()))
	}
	if p := r.firstPrompt(st, len(st.Generations)-1); !strings.Contains(p, "NEXT-MARK-1") {
		t.Errorf("the successor's first prompt lacks the handoff: %q", p)
	}
}
