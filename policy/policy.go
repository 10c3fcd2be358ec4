// Package policy owns the generational-handoff policy: its defaults, the
// thresholds derived from it (when to warn, when to hand off), the compact
// mode, the decisions "is a handoff due" and "is the near notice due", the
// runaway guard's error, and the way token counts are shown to a person.
// It knows no harness: the window a front guesses for its model comes in as
// a number.
//
// Everything here is a pure function of its inputs, so every decision can
// be tested offline.
package policy

import (
	"fmt"
)

// DefaultHeadroom is how far below the window a handoff fires. The harness's
// own auto-compact fires at window-33k, and the handoff-writing turn needs a
// round of its own; 50k pays for both (and for subagents lost at the cut).
const DefaultHeadroom = 50_000

// DefaultMaxGenerations is the runaway guard: handoffs consume no retries, so
// this is the only brake on a window set below a role's start-up floor.
const DefaultMaxGenerations = 8

// minAt is the lowest handoff threshold: below it not even the handoff
// document can be written.
const minAt = 10_000

// minWarnAt is the lowest near-notice threshold.
const minWarnAt = 1_000

// warnLead is how far before the handoff threshold the near notice comes.
const warnLead = 20_000

// HandoffPolicy says whether and when the main thread hands off to a fresh
// session.
//
// Unlike the keyword defaults of the original (Python) design, Go's zero
// value of Enabled is false: a literal HandoffPolicy{Window: 200_000} is a
// disabled policy. Start from Default and change fields, or set Enabled
// explicitly (DESIGN.md «Policy»).
type HandoffPolicy struct {
	// Enabled turns generational handoff on; it also forces the harness's
	// auto-compact off (see package envinject).
	Enabled bool
	// Window is the model's context window in tokens.
	Window int
	// Headroom is how many tokens below Window the handoff fires.
	Headroom int
	// MaxGenerations is how many handoffs one step may make before failing
	// with a *GenerationLimitError.
	MaxGenerations int
	// Knobs name the settings in the messages that advise turning them;
	// zero names the command-line flags.
	Knobs Knobs
}

// Knobs are how a person sets the window and turns handoff off where
// flower runs: flags on the command line, environment variables when an
// application starts flower as its harness (DESIGN.md «Agent SDK relay»).
type Knobs struct {
	Window string // "--window" when empty
	Off    string // "--no-handoff" when empty
}

// WindowKnob names the window's setting.
func (k Knobs) WindowKnob() string {
	if k.Window == "" {
		return "--window"
	}
	return k.Window
}

// OffKnob names the setting that turns handoff off.
func (k Knobs) OffKnob() string {
	if k.Off == "" {
		return "--no-handoff"
	}
	return k.Off
}

// FallbackWindow is the window of a run whose front guesses none and that
// is given no --window, until the harness says its own: the large one, as
// over-estimating costs one degraded handoff (DESIGN.md «Window guess»).
const FallbackWindow = 1_000_000

// Default is the policy used when nothing is configured (DESIGN.md
// «Policy»): enabled, the window the front guessed (FallbackWindow for 0),
// DefaultHeadroom and DefaultMaxGenerations.
func Default(window int) HandoffPolicy {
	if window <= 0 {
		window = FallbackWindow
	}
	return HandoffPolicy{
		Enabled:        true,
		Window:         window,
		Headroom:       DefaultHeadroom,
		MaxGenerations: DefaultMaxGenerations,
	}
}

// Switch is the handoff setting of a plain on or off: the default policy
// (DESIGN.md «Policy») with Enabled = on.
func Switch(on bool) *HandoffPolicy { return &HandoffPolicy{Enabled: on} }

// Resolve turns what a library caller passed as its handoff setting into a
// complete policy (DESIGN.md «Policy»):
//   - nil gives Default(window);
//   - a policy is taken as given, with a zero Window, Headroom or
//     MaxGenerations filled from the defaults. Enabled is taken as given,
//     so a policy literal must set it (Switch gives the plain on or off).
//
// A negative number is an error. The caller's policy is not changed.
func Resolve(setting *HandoffPolicy, window int) (HandoffPolicy, error) {
	if setting == nil {
		return Default(window), nil
	}
	return fill(*setting, window)
}

// fill validates p and fills its zero numbers from the defaults.
func fill(p HandoffPolicy, window int) (HandoffPolicy, error) {
	for _, f := range []struct {
		name string
		v    int
	}{{"window", p.Window}, {"headroom", p.Headroom}, {"max generations", p.MaxGenerations}} {
		if f.v < 0 {
			return HandoffPolicy{}, fmt.Errorf("resolve handoff setting: %s is negative (%d)", f.name, f.v)
		}
	}
	if p.Window == 0 {
		p.Window = Default(window).Window
	}
	if p.Headroom == 0 {
		p.Headroom = DefaultHeadroom
	}
	if p.MaxGenerations == 0 {
		p.MaxGenerations = DefaultMaxGenerations
	}
	return p, nil
}

// At is the context size at which the main thread hands off (DESIGN.md
// «Thresholds»):
// max(10_000, Window-Headroom). The floor exists because below it the
// handoff document itself could not be written.
func (p HandoffPolicy) At() int {
	return max(minAt, p.Window-p.Headroom)
}

// WarnAt is the context size at which the near notice is shown (DESIGN.md
// «Thresholds»):
// max(1_000, At()-20_000).
func (p HandoffPolicy) WarnAt() int {
	return max(minWarnAt, p.At()-warnLead)
}
