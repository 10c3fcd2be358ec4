package harness

import (
	"fmt"
	"strconv"
	"strings"
)

// PinnedVersion is the harness version make test installs and every
// integration test runs on.
const PinnedVersion = "2.1.328"

// TestedVersions are the harness versions flower's real-harness suites
// passed on (make compat HARNESS_VERSION=X), oldest first; the pinned one
// is among them. docs/guide.md lists the same (after updating claude).
var TestedVersions = []string{PinnedVersion, "2.1.332"}

// NewestTested is the last of TestedVersions.
func NewestTested() string { return TestedVersions[len(TestedVersions)-1] }

// ParseVersion reads a version as the harness reports it: "2.1.328" in the
// init line, "2.1.328 (Claude Code)" from --version. ok is false for
// anything else.
func ParseVersion(s string) (v [3]int, ok bool) {
	s, _, _ = strings.Cut(strings.TrimSpace(s), " ")
	parts := strings.Split(s, ".")
	if len(parts) != 3 {
		return v, false
	}
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 {
			return v, false
		}
		v[i] = n
	}
	return v, true
}

// NewerThanTested reports whether version (as the harness reports it) is
// newer than every tested version. A version that does not parse is not
// called newer.
func NewerThanTested(version string) bool {
	v, ok := ParseVersion(version)
	newest, _ := ParseVersion(NewestTested())
	if !ok {
		return false
	}
	for i := range v {
		if v[i] != newest[i] {
			return v[i] > newest[i]
		}
	}
	return false
}

// Tested reports whether version is one of TestedVersions.
func Tested(version string) bool {
	v, ok := ParseVersion(version)
	for _, t := range TestedVersions {
		if tv, _ := ParseVersion(t); ok && tv == v {
			return true
		}
	}
	return false
}

// Untested is the one line a run says on a harness newer than any flower
// was tested on, "" for any other (front.Capabilities' Untested).
func Untested(version string) string {
	if !NewerThanTested(version) {
		return ""
	}
	return fmt.Sprintf("harness %s is newer than the newest flower was tested on (%s): `flower doctor` checks it in seconds", version, NewestTested())
}
