package policy

import (
	"errors"
	"fmt"
)

// State is what the supervisor knows about the running generation when it
// decides whether to warn or hand off.
type State struct {
	// Policy is the resolved handoff policy.
	Policy HandoffPolicy
	// WritingTurn is true while the session is writing its handoff document.
	WritingTurn bool
	// Context is the main thread's context size in its latest round
	// (DESIGN.md «Context meter»).
	Context int
	// SessionID is the running session's id, "" until the harness reports one.
	SessionID string
	// Warned is true once the near notice was shown in this generation; the
	// caller resets it when a new generation starts.
	Warned bool
}

// HandoffDue is the threshold path's single decision (DESIGN.md
// «Threshold path»): handoff enabled, not the handoff-writing turn,
// Context >= At(), and a session id known.
//
// The writing turn is exempt (DESIGN.md «Writing turn») because it runs
// above the threshold by construction: without the exemption it is cut
// before it writes a word and every generation silently degrades.
func HandoffDue(s State) bool {
	return s.Policy.Enabled &&
		!s.WritingTurn &&
		s.Context >= s.Policy.At() &&
		s.SessionID != ""
}

// NearDue reports whether the near notice should be shown now (DESIGN.md
// «Near notice»): handoff enabled, not the writing turn, not yet warned in
// this generation, and WarnAt() <= Context < At().
//
// A round that jumps straight past At() gets no near notice: the handoff
// announces itself, and a "near" line saying a negative distance remains
// would only add noise. The caller sets Warned after showing the notice, so
// it appears once per generation, not once per message.
func NearDue(s State) bool {
	return s.Policy.Enabled &&
		!s.WritingTurn &&
		!s.Warned &&
		s.Context >= s.Policy.WarnAt() &&
		s.Context < s.Policy.At()
}

// Futile reports whether a fresh session that starts at context start
// (its start-up floor, or its first round) would hand off at once: handoff
// enabled and start at or above At() (DESIGN.md «Futile guard»). It is the
// futile guard's one decision, wherever it is made.
func (p HandoffPolicy) Futile(start int) bool {
	return p.Enabled && start >= p.At()
}

// LastGeneration reports whether generation n is the last the runaway
// guard allows (DESIGN.md «Runaway guard»): its handoff is frozen, and no
// successor follows it. It is the generation limit's one decision.
func (p HandoffPolicy) LastGeneration(n int) bool {
	return n >= p.MaxGenerations
}

// ErrGenerationLimit is matched (with errors.Is) by every
// *GenerationLimitError.
var ErrGenerationLimit = errors.New("handoff generation limit reached")

// GenerationLimitError is the error of the runaway guard and of the futile
// guard (DESIGN.md «Runaway guard», «Futile guard»): a step handed off Max
// times, or a fresh session started at or above the threshold. In practice
// that means the threshold sits below what the role needs just to start, so
// every fresh session crosses it at once.
type GenerationLimitError struct {
	// Futile: stopped early because a fresh session's start-up floor is
	// already at or above the threshold (Floor says how far).
	Futile bool
	// Max is the policy's MaxGenerations.
	Max int
	// Window is the policy's window.
	Window int
	// At is the handoff threshold.
	At int
	// Floor is the measured start-up floor (context before any work), 0 if
	// unknown.
	Floor int
	// Knobs name the settings the advice is about.
	Knobs Knobs
}

// Error says what was hit and what to turn: the window, or handoff itself.
func (e *GenerationLimitError) Error() string {
	advice := "the threshold is very likely below this role's start-up floor " +
		"(the coordinator role measured ~34k of system prompt + index before doing anything): " +
		"raise the window (" + e.Knobs.WindowKnob() + ") or use " + e.Knobs.OffKnob()
	if e.Futile {
		return fmt.Sprintf("%s: a fresh session starts at %s, already at or above the handoff threshold %s (window %s), "+
			"so every successor would hand off at once; stopped instead of burning the remaining generations; %s",
			ErrGenerationLimit, FormatUsed(e.Floor), FormatRound(e.At), FormatRound(e.Window), advice)
	}
	floor := ""
	if e.Floor > 0 {
		floor = fmt.Sprintf(", start-up floor measured at %s", FormatUsed(e.Floor))
	}
	return fmt.Sprintf("%s: %d handoffs in one step (window %s, handoff at %s%s); %s",
		ErrGenerationLimit, e.Max, FormatRound(e.Window), FormatRound(e.At), floor, advice)
}

// Is makes errors.Is(err, ErrGenerationLimit) true.
func (e *GenerationLimitError) Is(target error) bool {
	return target == ErrGenerationLimit
}
