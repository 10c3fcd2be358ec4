package codexrpc

import (
	"encoding/json"
	"regexp"
	"strings"

	"github.com/flowerhq/flower/front"
)

// PinnedVersion is the Codex CLI version make test installs (the
// Makefile's CODEX_VERSION) and every Codex test runs on.
const PinnedVersion = "0.171.0"

// TestedVersions are the Codex CLI versions flower's Codex suites passed
// on (make compat CODEX_VERSION=X), oldest first.
var TestedVersions = front.Versions{PinnedVersion}

// Untested is the line a run says on a Codex CLI newer than any of
// TestedVersions (front.Capabilities' Untested).
var Untested = TestedVersions.Untested("the Codex CLI")

// userAgentVersion finds the version in initialize's userAgent
// ("flower/0.171.0 (Debian 12.0.0; x86_64) …", "codex-tui/0.171.0 …").
var userAgentVersion = regexp.MustCompile(`^[^/\s]+/(\d+\.\d+\.\d+)\b`)

// initialized notes the version an initialize answer says.
func (c *Client) initialized(result json.RawMessage) {
	var r struct {
		UserAgent string `json:"userAgent"`
	}
	if json.Unmarshal(result, &r) != nil {
		return
	}
	if m := userAgentVersion.FindStringSubmatch(r.UserAgent); m != nil {
		c.mu.Lock()
		c.version = m[1]
		c.mu.Unlock()
	}
}

// Version is the Codex CLI's version, as its app-server's answer to
// initialize said (flower's, or a screen's sharing the connection); ""
// when it has not said.
func (c *Client) Version() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.version
}

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
