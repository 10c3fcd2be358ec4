package fleet

import (
	"slices"
	"time"

	"github.com/flowerhq/flower/event"
	"github.com/flowerhq/flower/manifest"
	"github.com/flowerhq/flower/supervisor"
)

// Status is what the workflow answers QueryStatus with: the step's record
// as manifest.json keeps it for a local run (DESIGN.md «Manifest»), built
// from the generations' results, with what only a remote step has.
type Status struct {
	// Record is the step as manifest.json records it; Record.Status is
	// "running" until the step ends.
	Record    manifest.StepResult
	Workspace string
	// Running is the generation running now (0 when none is).
	Running int `json:",omitempty"`
	// Handoff is the latest handoff as frozen (markdown), Sections its
	// non-empty sections.
	Handoff  string   `json:",omitempty"`
	Sections []string `json:",omitempty"`
	// Started says, per generation number, what it started from;
	// Handoffs holds the document each generation handed off (markdown).
	Started  map[int]string `json:",omitempty"`
	Handoffs map[int]string `json:",omitempty"`
	// Events are the generations' handoff events (near, writing, done), in
	// order: what a local run shows as status lines.
	Events []event.Event `json:",omitempty"`
	// Pending is a handoff a person set for the next generation, not yet
	// started from; PendingFrom names its file.
	Pending     string `json:",omitempty"`
	PendingFrom string `json:",omitempty"`
	// HandoffsAsked counts the SignalHandoffNow signals so far; the running
	// generation's worker reads it (DESIGN.md «Handoff on request»).
	HandoffsAsked int `json:",omitempty"`
}

// Generations is how many generations the step has run (or is running).
func (st *Status) Generations() int { return max(len(st.Record.Generations), st.Running) }

func newStatus(in StepInput, now time.Time) *Status {
	return &Status{Workspace: in.Workspace, Started: map[int]string{}, Handoffs: map[int]string{}, Record: manifest.StepResult{
		Name: in.Step, Task: in.Task, Status: manifest.StatusRunning,
		Retired: []string{}, Errors: []string{}, Generations: []manifest.Generation{}, StartedAt: now,
		BudgetUSD: in.BudgetUSD, Deadline: in.Deadline}} // unattended: flower show --temporal shows spent against budget
}

// apply folds one generation's result into the status.
func (st *Status) apply(r *supervisor.GenerationResult) {
	rec := &st.Record
	rec.Context, rec.Window, rec.WindowSource = r.Context, r.Window, r.WindowSource
	rec.CostUSD += r.CostUSD
	rec.NumTurns += r.NumTurns
	for _, id := range r.Retired {
		rec.Retire(id)
	}
	rec.Errors = append(rec.Errors, r.Errors...)
	for _, g := range r.Generations {
		i := slices.IndexFunc(rec.Generations, func(h manifest.Generation) bool { return h.N == g.N })
		if i < 0 {
			rec.Generations = append(rec.Generations, g)
		} else {
			rec.Generations[i] = g
		}
		if g.Handoff != nil && g.Handoff.Path != "" {
			rec.HandoffPath = g.Handoff.Path
		}
	}
	st.Started[r.N] = r.Started
	rec.SessionID = r.SessionID
	if slices.Contains(rec.Retired, rec.SessionID) {
		rec.SessionID = "" // never a burned session (DESIGN.md «Continuation»)
	}
	if r.Handoff != "" {
		st.Handoff, st.Sections = r.Handoff, r.Sections
		st.Handoffs[r.N] = r.Handoff
	}
	for _, g := range r.Generations {
		if g.N != r.N && g.Handoff != nil && r.Launched != "" && g.Handoff.Reason == manifest.ReasonLost {
			st.Handoffs[g.N] = r.Launched // the degraded handoff a lost generation left
		}
	}
	if r.End != supervisor.EndHandoff {
		rec.Status = r.End
	}
}

// end marks the step ended at now.
func (st *Status) end(now time.Time) {
	st.Running = 0
	st.Record.EndedAt = &now
}
