// Package runlog owns what every record of a run's structured log says
// about where in the run it was written: the step, the generation, the
// session id and the phase. A State holds the live values; a logger made
// with New stamps them on every record, including the records of packages
// the logger is handed to (the harness's, say).
package runlog

import (
	"context"
	"log/slog"
	"slices"
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
//
// Each key appears once in a record: a key the call gives itself (a
// "handoff written" record names the generation that handed off) wins over
// the same key stamped from st or given by With, so no reader has to pick
// between two values. Inside a group (WithGroup) records are passed on as
// slog makes them.
func New(base *slog.Logger, st *State, step string) *slog.Logger {
	return slog.New(handler{base: base.Handler(), st: st}).With("step", step)
}

type handler struct {
	base slog.Handler
	st   *State
	// with are the attributes given by With before any group, kept here
	// rather than in base so that Handle can drop the ones a record
	// repeats; grouped says WithGroup was called (base then holds them).
	with    []slog.Attr
	grouped bool
}

func (h handler) Enabled(ctx context.Context, l slog.Level) bool { return h.base.Enabled(ctx, l) }

func (h handler) Handle(ctx context.Context, r slog.Record) error {
	gen, session, phase := h.st.get()
	stamped := []slog.Attr{slog.Int("gen", gen), slog.String("session", session), slog.String("phase", phase)}
	if h.grouped {
		r = r.Clone()
		r.AddAttrs(stamped...)
		return h.base.Handle(ctx, r)
	}
	own := map[string]bool{}
	var attrs []slog.Attr
	r.Attrs(func(a slog.Attr) bool {
		if !own[a.Key] {
			own[a.Key] = true
			attrs = append(attrs, a)
		}
		return true
	})
	out := slog.NewRecord(r.Time, r.Level, r.Message, r.PC)
	for _, a := range h.with {
		if !own[a.Key] {
			own[a.Key] = true
			out.AddAttrs(a)
		}
	}
	out.AddAttrs(attrs...)
	for _, a := range stamped {
		if !own[a.Key] {
			out.AddAttrs(a)
		}
	}
	return h.base.Handle(ctx, out)
}

func (h handler) WithAttrs(as []slog.Attr) slog.Handler {
	if h.grouped {
		return handler{base: h.base.WithAttrs(as), st: h.st, grouped: true}
	}
	with := slices.Clone(h.with)
	for _, a := range as {
		// A later With of the same key replaces the earlier one.
		with = slices.DeleteFunc(with, func(b slog.Attr) bool { return b.Key == a.Key })
		with = append(with, a)
	}
	return handler{base: h.base, st: h.st, with: with}
}

func (h handler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	base := h.base
	if !h.grouped && len(h.with) > 0 {
		base = base.WithAttrs(h.with)
	}
	return handler{base: base.WithGroup(name), st: h.st, grouped: true}
}
