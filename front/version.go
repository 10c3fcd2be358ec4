package front

import (
	"fmt"
	"strconv"
	"strings"
)

// Versions are the versions of a harness flower's real-harness suites
// passed on, oldest first (the pinned one among them): what a front's
// Capabilities.Untested and flower doctor judge a harness's version by.
type Versions []string

// ParseVersion reads a version as a harness reports it: "2.1.328" in an
// init line, "2.1.328 (Claude Code)" from --version, "0.171.0". ok is
// false for anything else.
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

// Newest is the last of vs.
func (vs Versions) Newest() string { return vs[len(vs)-1] }

// Newer reports whether version is newer than every one of vs. A version
// that does not parse is not called newer.
func (vs Versions) Newer(version string) bool {
	v, ok := ParseVersion(version)
	newest, _ := ParseVersion(vs.Newest())
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

// Has reports whether version is one of vs.
func (vs Versions) Has(version string) bool {
	v, ok := ParseVersion(version)
	for _, t := range vs {
		if tv, _ := ParseVersion(t); ok && tv == v {
			return true
		}
	}
	return false
}

// Untested is the one line a run says on a harness (product, as a person
// names it) newer than any of vs, "" for any other: a Capabilities'
// Untested.
func (vs Versions) Untested(product string) func(version string) string {
	return func(version string) string {
		if !vs.Newer(version) {
			return ""
		}
		return fmt.Sprintf("%s %s is newer than the newest flower was tested on (%s): `flower doctor` checks it in seconds", product, version, vs.Newest())
	}
}
