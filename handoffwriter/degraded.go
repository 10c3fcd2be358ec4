package handoffwriter

import (
	"strings"
)

// taskRunes is how much of the original task a degraded handoff carries in
// scene, counted in characters so a CJK task is not cut mid-rune.
const taskRunes = 1200

// whyRunes bounds the reason quoted in doing; an error message can be long.
const whyRunes = 300

// Degraded assembles a handoff mechanically when the writing turn failed or
// could not run (DESIGN.md «Degraded handoff», «Overflow path»). doing
// carries DegradedMarker and why; next is a mechanical first move; scene
// holds the first 1200 characters of the original task. It is complete
// (doing and next are filled), so it is handed off like any other.
func Degraded(step, task, why string) Handoff {
	doing := DegradedMarker + " The previous session could not write its handoff"
	if why = cutRunes(strings.Join(strings.Fields(why), " "), whyRunes); why != "" {
		doing += " (" + why + ")"
	}
	doing += ". Where the work stands is unknown; scene holds the start of the original task."
	return Handoff{
		Step:  step,
		Doing: doing,
		Next:  "Inspect the workspace and the task below, then continue the task.",
		Scene: strings.TrimSpace(cutRunes(task, taskRunes)),
	}
}

// cutRunes returns the first n runes of s. It counts by decoding, so invalid
// bytes count as one rune each and are kept as they are.
func cutRunes(s string, n int) string {
	count := 0
	for i := range s {
		if count == n {
			return s[:i]
		}
		count++
	}
	return s
}

// overflowPhrases are how APIs and the harness say the prompt does not fit
// (DESIGN.md «Overflow path»; the harness's own text is "Prompt is too long",
// see «Overflow reports»).
var overflowPhrases = []string{
	"prompt is too long",
	"context length exceeded",
	"context_length_exceeded",
	"maximum context length",
	"too many total text bytes",
	"input length and max_tokens exceed",
	"prompt_too_long",
}

// IsOverflow reports whether any of texts says the prompt no longer fits the
// context window, case-insensitively. Backticks are ignored, because the API
// writes "input length and `max_tokens` exceed context limit".
func IsOverflow(texts ...string) bool {
	for _, t := range texts {
		t = strings.ToLower(strings.ReplaceAll(t, "`", ""))
		for _, p := range overflowPhrases {
			if strings.Contains(t, p) {
				return true
			}
		}
	}
	return false
}
