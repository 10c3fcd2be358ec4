package harness

import (
	"strings"
	"unicode"
)

// Windows that GuessWindow chooses between.
const (
	window1M    = 1_000_000
	windowHaiku = 200_000
)

// modelVars are the only environment variables GuessWindow reads
// (DESIGN.md «Window guess»).
var modelVars = []string{"ANTHROPIC_MODEL", "ANTHROPIC_DEFAULT_OPUS_MODEL"}

// GuessWindow guesses the Claude Code CLI's context window from the model names in env
// (DESIGN.md «Window guess»), a KEY=VALUE list in which the last entry for a
// key wins, as with os/exec. It reads only ANTHROPIC_MODEL and
// ANTHROPIC_DEFAULT_OPUS_MODEL, and applies the rules to both names
// together, rule by rule:
//
//  1. either name has the standalone word "1m" (any case) → 1_000_000;
//     this rule comes first, so "claude-haiku[1m]" is 1M;
//  2. else either name contains "haiku" (any case) → 200_000;
//  3. else, and when both are unset or empty → 1_000_000.
//
// So ANTHROPIC_MODEL=claude-haiku-4-5 with ANTHROPIC_DEFAULT_OPUS_MODEL=
// claude-opus-5[1m] guesses 1M. Over-estimating costs one degraded handoff
// (the overflow path), which is why 1M is also the fallback; --window
// corrects a wrong guess.
func GuessWindow(env []string) int {
	var names []string
	for _, key := range modelVars {
		if v := lookupEnv(env, key); v != "" {
			names = append(names, v)
		}
	}
	for _, n := range names {
		if hasWord1M(n) {
			return window1M
		}
	}
	for _, n := range names {
		if strings.Contains(strings.ToLower(n), "haiku") {
			return windowHaiku
		}
	}
	return window1M
}

// hasWord1M reports whether name contains "1m" (any case) with neither a
// letter nor a digit on either side: "claude-opus-5[1m]" and "model-1m" do,
// "gemma-21m" and "claude-1mx" do not.
func hasWord1M(name string) bool {
	r := []rune(strings.ToLower(name))
	for i := 0; i+1 < len(r); i++ {
		if r[i] != '1' || r[i+1] != 'm' {
			continue
		}
		before := i == 0 || !isWordRune(r[i-1])
		after := i+2 == len(r) || !isWordRune(r[i+2])
		if before && after {
			return true
		}
	}
	return false
}

func isWordRune(r rune) bool {
	return unicode.IsLetter(r) || unicode.IsDigit(r)
}

// lookupEnv returns the value of the last KEY=VALUE entry for key in env, or "".
func lookupEnv(env []string, key string) string {
	for i := len(env) - 1; i >= 0; i-- {
		k, v, ok := strings.Cut(env[i], "=")
		if ok && k == key {
			return v
		}
	}
	return ""
}
