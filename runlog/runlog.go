// Package runlog owns what every record of a run's structured log says
// about where in the run it was written: the step, the generation, the
// session id and the phase. A State holds the live values; a logger made
// with New stamps them on every record, including the records of packages
// the logger is handed to (the harness's, say).
package runlog

import (
	"context"
	"log/slog"
	"sync"
)

// PhaseStarting is the phase outside a turn: before a generation's first
// turn, and between generations.
const PhaseStarting = "starting"

// State is the live generation, session id and phase of a step run. It is
// safe for concurrent use.
type State struct {
	mu      sync.Mutex
	gen     int
	session string
	phase   string
}

// NewState starts at generation 0, no session, PhaseStarting.
func NewState() *State { return &State{phase: PhaseStarting} }

// Set sets all three.
func (s *State) Set(gen int, session, phase string) {
	s.mu.Lock()
	s.gen, s.session, s.phase = gen, session, phase
	s.mu.Unlock()
}

// SetSession sets the session id, once the harness has reported it.
func (s *State) SetSession(session string) {
	s.mu.Lock()
	s.session = session
	s.mu.Unlock()
}

// SetPhase sets the phase.
func (s *State) SetPhase(phase string) {
	s.mu.Lock()
	s.phase = phase
	s.mu.Unlock()
}

func (s *State) get() (int, string, string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.gen, s.session, s.phase
}

// New returns a logger writing through base whose every record carries the
// step and st's generation, session and phase as they are when it is logged.
func New(base *slog.Logger, st *State, step string) *slog.Logger {
	return slog.New(handler{base.Handler(), st}).With("step", step)
}

type handler struct {
	slog.Handler
	st *State
}

func (h handler) Handle(ctx context.Context, r slog.Record) error {
	gen, session, phase := h.st.get()
	r = r.Clone()
	r.AddAttrs(slog.Int("gen", gen), slog.String("session", session), slog.String("phase", phase))
	return h.Handler.Handle(ctx, r)
}

func (h handler) WithAttrs(as []slog.Attr) slog.Handler {
	return handler{h.Handler.WithAttrs(as), h.st}
}

func (h handler) WithGroup(name string) slog.Handler { return handler{h.Handler.WithGroup(name), h.st} }
