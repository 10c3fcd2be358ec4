package relay

import (
	"errors"
	"path/filepath"
	"slices"

	"github.com/flowerhq/flower/manifest"
	"github.com/flowerhq/flower/safefile"
	"github.com/flowerhq/flower/workbench"
)

// LiveSuccessor finds the session that carries on a retired one: apps keep
// the first session id they saw and later resume it, but after a handoff
// that session is burned (DESIGN.md «Agent SDK relay»). It looks in the
// manifests of the run dirs under <workbench>/runs and in extra run dirs,
// follows a chain of handoffs across runs, and reports false when id was
// never retired. A manifest that is a link, not a regular file, or over
// its cap is refused (an error naming it, DESIGN.md «Territory»); one that
// is corrupt or names another place than where it lies is passed over: it
// steers nothing.
func LiveSuccessor(wb string, extra []string, id string) (string, bool, error) {
	// Real directories only: a link in runs (latest, or a planted one) is
	// not followed.
	dirs := append(workbench.RunDirs(wb), extra...)
	var steps []*manifest.StepResult
	for _, d := range dirs {
		d, _ = filepath.Abs(d)
		m, err := manifest.LoadBound(d)
		if errors.Is(err, safefile.ErrUnsafe) || errors.Is(err, safefile.ErrTooLarge) {
			return "", false, err
		}
		if err == nil {
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
	return cur, moved, nil
}
