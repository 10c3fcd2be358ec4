package fleet

import (
	"slices"
	"time"

	"github.com/flowerhq/flower/supervisor"
)

// Status is what the workflow answers QueryStatus with: a step's record as
// manifest.json keeps it for a local run (DESIGN.md «Manifest»), built from
// the generations' results.
type Status struct {
	Step      string
	Task      string
	Workspace string
	// Status is "running", or how the step ended (a manifest status).
	Status string
	// Generation is the latest generation that ran to its end; Running is
	// the one running now (0 when none is).
	Generation int
	Running    int `json:",omitempty"`
	SessionID  string
	Context    int
	Window     int
	// WindowSource says where the window came from (flag, harness, model name).
	WindowSource string
	CostUSD      float64
	NumTurns     int
	Retired      []string
	Errors       []string
	// Handoff is the latest handoff (markdown), HandoffPath its file and
	// Sections its non-empty sections.
	Handoff     string   `json:",omitempty"`
	HandoffPath string   `json:",omitempty"`
	Sections    []string `json:",omitempty"`
	// Pending is a handoff a person set for the next generation, not yet
	// started from; PendingFrom names its file.
	Pending     string `json:",omitempty"`
	PendingFrom string `json:",omitempty"`
	Generations []GenerationStatus
	StartedAt   time.Time
	EndedAt     *time.Time `json:",omitempty"`
}

// GenerationStatus is one generation's share, as its result gave it.
type GenerationStatus struct {
	N         int
	SessionID string
	End       string
	Started   string // what it started from
	Context   int
	CostUSD   float64
	NumTurns  int
	// The handoff it froze, if it handed off.
	Reason   string   `json:",omitempty"`
	Degraded bool     `json:",omitempty"`
	Why      string   `json:",omitempty"`
	Path     string   `json:",omitempty"`
	Sections []string `json:",omitempty"`
	Window   int
	At       int `json:",omitempty"`
}

func newStatus(in StepInput, now time.Time) *Status {
	return &Status{Step: in.Step, Task: in.Task, Workspace: in.Workspace, Status: "running",
		Retired: []string{}, Errors: []string{}, Generations: []GenerationStatus{}, StartedAt: now}
}

// apply folds one generation's result into the status.
func (st *Status) apply(r *supervisor.GenerationResult) {
	st.Generation = max(st.Generation, r.N)
	st.Context, st.Window, st.WindowSource = r.Context, r.Window, r.WindowSource
	st.CostUSD += r.CostUSD
	st.NumTurns += r.NumTurns
	for _, id := range r.Retired {
		if !slices.Contains(st.Retired, id) {
			st.Retired = append(st.Retired, id)
		}
	}
	st.Errors = append(st.Errors, r.Errors...)
	st.SessionID = r.SessionID
	if slices.Contains(st.Retired, st.SessionID) {
		st.SessionID = "" // never point at a burned session (DESIGN.md «Continuation»)
	}
	g := GenerationStatus{N: r.N, SessionID: r.SessionID, End: r.End, Started: r.Started, Context: r.Context,
		CostUSD: r.CostUSD, NumTurns: r.NumTurns, Window: r.Window}
	if r.Handoff != "" {
		st.Handoff, st.HandoffPath, st.Sections = r.Handoff, r.Path, r.Sections
		g.Reason, g.Degraded, g.Why, g.Path, g.Sections = r.Reason, r.Degraded, r.Why, r.Path, r.Sections
		if h := r.Generation.Handoff; h != nil {
			g.Context, g.At = h.Context, h.At
		}
	}
	st.Generations = append(st.Generations, g)
	if r.End != supervisor.EndHandoff {
		st.Status = r.End
	}
}

// End marks the step ended at now.
func (st *Status) End(now time.Time) {
	st.Running = 0
	st.EndedAt = &now
}
