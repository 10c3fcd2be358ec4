package relay

import (
	"path/filepath"
	"slices"

	"github.com/flowerhq/flower/manifest"
)

// LiveSuccessor finds the session that carries on a retired one: apps keep
// the first session id they saw and later resume it, but after a handoff
// that session is burned (DESIGN.md «Agent SDK relay»). It looks in the
// manifests of the run dirs under <workbench>/runs and in extra run dirs,
// follows a chain of handoffs across runs, and reports false when id was
// never retired.
func LiveSuccessor(workbench string, extra []string, id string) (string, bool) {
	dirs, _ := filepath.Glob(filepath.Join(workbench, "runs", "*"))
	dirs = append(dirs, extra...)
	var steps []*manifest.StepResult
	for _, d := range dirs {
		if m, err := manifest.Load(manifest.Path(d)); err == nil {
			steps = append(steps, m.Steps...)
		}
	}
	cur, moved := id, false
	for range len(steps) + 1 { // a chain visits each step once at most
		next := ""
		for _, st := range steps {
			if st.SessionID != "" && st.SessionID != cur && slices.Contains(st.Retired, cur) {
				next = st.SessionID
				break
			}
		}
		if next == "" {
			break
		}
		cur, moved = next, true
	}
	return cur, moved
}
