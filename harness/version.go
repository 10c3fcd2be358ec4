package harness

import "github.com/flowerhq/flower/front"

// PinnedVersion is the harness version make test installs and every
// integration test runs on.
const PinnedVersion = "2.1.328"

// TestedVersions are the harness versions flower's real-harness suites
// passed on (make compat HARNESS_VERSION=X), oldest first; the pinned one
// is among them. docs/guide.md lists the same (after updating claude).
var TestedVersions = front.Versions{PinnedVersion, "2.1.332"}

// Untested is the one line a run says on a harness newer than any flower
// was tested on, "" for any other (front.Capabilities' Untested).
var Untested = TestedVersions.Untested("harness")
