package transcript

// Meter keeps what flower tracks of one harness session from its records:
// the main thread's context (DESIGN.md «Context meter»), the session id, and
// the turn results.
// It is not safe for concurrent use; one goroutine feeds it.
type Meter struct {
	// Context is the prompt size of the latest main-thread API response:
	// input + cache creation + cache read tokens. Subagent messages
	// (parent_tool_use_id set) and synthetic error messages never move it.
	Context int
	// SessionID is the latest session id the harness reported.
	SessionID string
	// Model is the model named by the latest init line.
	Model string
	// CostUSD is the harness process's cumulative cost (from its latest result).
	CostUSD float64
	// Turns sums num_turns over the results seen.
	Turns int
	// Results counts result records.
	Results int
	// ContextWindow is the largest window any result reported (0 if none).
	ContextWindow int
	// Responses counts the main-thread API responses that moved Context
	// (or set it again): one per response, duplicate lines counted once.
	Responses int

	lastMessageID string
}

// Observe folds one record into the meter. It reports whether Context changed.
func (m *Meter) Observe(ev *Event) (contextChanged bool) {
	if ev.SessionID != "" {
		m.SessionID = ev.SessionID
	}
	switch ev.Kind {
	case KindInit:
		if ev.Model != "" {
			m.Model = ev.Model
		}
	case KindAssistant:
		if !ev.MainThread() || ev.Synthetic() {
			return false
		}
		// One API response can arrive as several lines with the same id and
		// the same usage; count it once (DESIGN.md «Duplicate lines»).
		if ev.MessageID != "" && ev.MessageID == m.lastMessageID {
			return false
		}
		m.lastMessageID = ev.MessageID
		ctx := ev.Usage.Context()
		if ctx == 0 {
			return false
		}
		changed := ctx != m.Context
		m.Context = ctx
		m.Responses++
		return changed
	case KindResult:
		m.Results++
		m.Turns += ev.NumTurns
		if ev.TotalCostUSD > m.CostUSD {
			m.CostUSD = ev.TotalCostUSD
		}
		if ev.ContextWindow > m.ContextWindow {
			m.ContextWindow = ev.ContextWindow
		}
	}
	return false
}
