package policy

import "fmt"

// CompactMode is an agent spec's say over the harness's own compaction.
type CompactMode string

// Compact modes an agent spec may ask for.
const (
	// CompactUnset: the spec says nothing; handoff decides.
	CompactUnset CompactMode = ""
	// CompactNoSummary: the harness's own compaction is held off.
	CompactNoSummary CompactMode = "no_summary"
	// CompactAuto: the harness's own compaction stays on, even with handoff.
	CompactAuto CompactMode = "auto"
)

// ParseCompactMode accepts "", "no_summary" and "auto".
func ParseCompactMode(s string) (CompactMode, error) {
	switch m := CompactMode(s); m {
	case CompactUnset, CompactNoSummary, CompactAuto:
		return m, nil
	}
	return CompactUnset, fmt.Errorf("parse compact mode %q: want %q, %q or empty", s, CompactNoSummary, CompactAuto)
}

// Effective is the compact mode an attempt runs with (DESIGN.md
// «Auto-compact off»). With handoff on, an unset mode becomes no_summary so a
// lost context has one explanation; an explicit mode, "auto" included, is
// respected. With handoff off the spec's mode is used as given.
func (m CompactMode) Effective(handoff bool) CompactMode {
	if handoff && m == CompactUnset {
		return CompactNoSummary
	}
	return m
}
