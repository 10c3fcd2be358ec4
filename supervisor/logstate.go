package supervisor

import (
	"context"
	"log/slog"
	"sync"
)

// logState is what a step run knows that changes as it runs: the
// generation, the session id and the phase. stateHandler stamps them on
// every record logged under the step (the harness package's included), so
// each line of flower.log says where in the run it was written.
type logState struct {
	mu      sync.Mutex
	gen     int
	session string
	phase   string
}

func (s *logState) set(gen int, session, phase string) {
	s.mu.Lock()
	s.gen, s.session, s.phase = gen, session, phase
	s.mu.Unlock()
}

func (s *logState) setSession(session string) {
	s.mu.Lock()
	s.session = session
	s.mu.Unlock()
}

func (s *logState) setPhase(phase string) {
	s.mu.Lock()
	s.phase = phase
	s.mu.Unlock()
}

type stateHandler struct {
	slog.Handler
	st *logState
}

// newStepLogger wraps base so that every record carries the step's live
// generation, session and phase.
func newStepLogger(base *slog.Logger, st *logState, step string) *slog.Logger {
	return slog.New(stateHandler{base.Handler(), st}).With("step", step)
}

func (h stateHandler) Handle(ctx context.Context, r slog.Record) error {
	h.st.mu.Lock()
	gen, session, p := h.st.gen, h.st.session, h.st.phase
	h.st.mu.Unlock()
	r = r.Clone()
	r.AddAttrs(slog.Int("gen", gen), slog.String("session", session), slog.String("phase", p))
	return h.Handler.Handle(ctx, r)
}

func (h stateHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return stateHandler{h.Handler.WithAttrs(as), h.st}
}

func (h stateHandler) WithGroup(name string) slog.Handler {
	return stateHandler{h.Handler.WithGroup(name), h.st}
}

// The phase a log record carries outside a turn (inside one: phase.String).
const (
	logPhaseStarting = "starting" // between generations, or before the first turn
)

func (p phase) String() string {
	switch p {
	case phaseCutting:
		return "cutting"
	case phaseWriting:
		return "writing"
	}
	return "working"
}
