package levers

import (
	"github.com/flowerhq/flower/envinject"
	"github.com/flowerhq/flower/front"
)

// Prepare readies the Claude Code CLI for a run (front.Capabilities'
// Prepare of every front that runs it): the person's --settings read once,
// so that a bad one fails before any harness starts; the environment with
// auto-compact and self-update held (package envinject) and the model's
// tools kept from the key where the harness can (ScrubFor); the endpoint
// held where the run started it (Hold, DESIGN.md «Held harness»). Each
// start's arguments carry flower's levers when its Hold is set (DESIGN.md
// «Compaction levers»), and the held endpoint always.
func Prepare(r front.Run) (front.Prepared, error) {
	own, err := Read(r.Args, r.Workspace)
	if err != nil {
		return front.Prepared{}, err
	}
	plan := envinject.Child(r.Env, r.Compact, r.Handoff, nil)
	env, _, _ := ScrubFor(plan.Env, r.Args)
	own.Pin = Hold(r.Args, env, r.Workspace, own)
	args := r.Args
	return front.Prepared{Env: env, Notice: plan.Notice, Args: func(h *front.Hold) []string {
		if h == nil {
			return Pinned(args, own)
		}
		hook := BlockOnly
		if h.Hook != nil {
			hook = Hook(h.Hook...)
		}
		return Args(args, own, hook)
	}}, nil
}
