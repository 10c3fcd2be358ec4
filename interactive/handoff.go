package interactive

import (
	"github.com/flowerhq/flower/handoff"
	"github.com/flowerhq/flower/manifest"
	"github.com/flowerhq/flower/supervisor"
)

// handOff records the cut through package handoff (degrade, freeze, retire,
// R23–R33), shows the done event, and returns the successor's first prompt
// as read back from disk (R30) — exactly as a headless run does.
func (r *run) handOff(gen *manifest.Generation, c handoff.Cut) (string, error) {
	books := r.books()
	f, err := books.Freeze(gen, c)
	r.show(supervisor.DoneEvent(r.st, gen, f, r.opts.Policy))
	if err != nil {
		return "", err // R27: the handoff is on disk for a rerun
	}
	if r.opts.AfterFreeze != nil && f.Path != "" {
		r.opts.AfterFreeze(f.Path)
	}
	return books.Launch(f), nil
}

// books is what package handoff records this step's handoffs and task in.
func (r *run) books() handoff.Books {
	return handoff.Books{Step: r.st, Policy: r.opts.Policy, WindowSource: r.st.WindowSource,
		Workbench: r.opts.Workbench, Now: r.opts.Now, Save: r.save, Log: r.log,
		TaskCarry: r.opts.TaskCarry, ManifestPath: manifest.Path(r.opts.Manifest.RunDir)}
}
