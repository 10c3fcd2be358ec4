package codexrpc

import "strings"

// PinnedVersion is the Codex CLI version make test installs (the
// Makefile's CODEX_VERSION) and every Codex test runs on.
const PinnedVersion = "0.171.0"

// VersionOf reads `codex --version`'s answer ("codex-cli 0.171.0"): the
// version, and ok false for an answer that is not the Codex CLI's.
func VersionOf(answer string) (version string, ok bool) {
	line, _, _ := strings.Cut(strings.TrimSpace(answer), "\n")
	v, found := strings.CutPrefix(strings.TrimSpace(line), "codex-cli ")
	if !found || v == "" || strings.ContainsAny(v, " \t") {
		return "", false
	}
	return v, true
}
