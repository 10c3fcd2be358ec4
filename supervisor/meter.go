package supervisor

import "github.com/flowerhq/flower/front"

// meter keeps what the engine tracks of one harness session from its facts:
// the main thread's context (DESIGN.md «Context meter»), the session, and
// the cost and turns its results report. One goroutine feeds it.
type meter struct {
	// Context is the prompt size of the latest main-thread API response.
	// Subagents' rounds, repeats of a response and the harness's made-up
	// replies never move it.
	Context int
	// SessionID is the latest session the harness named.
	SessionID string
	// CostUSD is the harness process's cumulative cost (its latest
	// result's); Turns sums the API round trips of its turns.
	CostUSD float64
	Turns   int
	// Responses counts the main-thread API responses that set Context.
	Responses int
}

// observe folds one fact in; responded reports a main-thread response that
// set Context.
func (m *meter) observe(f front.Fact) (responded bool) {
	switch f := f.(type) {
	case front.Init:
		m.session(f.SessionID)
	case front.Round:
		m.session(f.SessionID)
		if !f.MainThread || f.Synthetic || f.Repeat || f.Context == 0 {
			return false
		}
		m.Context = f.Context
		m.Responses++
		return true
	case front.TurnEnded:
		m.session(f.SessionID)
		m.Turns += f.Turns
		m.CostUSD = max(m.CostUSD, f.CostUSD)
	case front.SessionSwitched:
		m.session(f.To)
	}
	return false
}

func (m *meter) session(id string) {
	if id != "" {
		m.SessionID = id
	}
}
