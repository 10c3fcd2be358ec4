package harness

import (
	"github.com/flowerhq/flower/envinject"
	"github.com/flowerhq/flower/front"
	"github.com/flowerhq/flower/levers"
)

// Prepare readies the Claude Code CLI for a run (front.Capabilities'
// Prepare of every front that runs it): the person's --settings read once,
// so that a bad one fails before any harness starts; the environment with
// auto-compact and self-update held (package envinject) and the model's
// tools kept from the key where the harness can (levers.ScrubFor); the
// endpoint held where the run started it (levers.Hold, DESIGN.md «Held
// harness»); the window guessed from the model (GuessWindow, the model
// flag counted as ANTHROPIC_MODEL). Each start's arguments carry flower's
// levers when its Hold is set (DESIGN.md «Compaction levers»), and the
// held endpoint always.
func Prepare(r front.Run) (front.Prepared, error) {
	own, err := levers.Read(r.Args, r.Workspace)
	if err != nil {
		return front.Prepared{}, err
	}
	plan := envinject.Child(r.Env, r.Compact, r.Handoff, nil)
	env, _, _ := levers.ScrubFor(plan.Env, r.Args)
	own.Pin = levers.Hold(r.Args, env, r.Workspace, own)
	guess := env
	if r.Model != "" {
		guess = envinject.Set(append([]string(nil), env...), "ANTHROPIC_MODEL", r.Model)
	}
	args := r.Args
	return front.Prepared{Env: env, Notice: plan.Notice, Window: GuessWindow(guess), Args: func(h *front.Hold) []string {
		if h == nil {
			return levers.Pinned(args, own)
		}
		hook := levers.BlockOnly
		if h.Hook != nil {
			hook = levers.Hook(h.Hook...)
		}
		return levers.Args(args, own, hook)
	}}, nil
}
