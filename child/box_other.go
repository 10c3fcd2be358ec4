//go:build !linux

package child

import (
	"log/slog"
	"syscall"
)

// newBox: without cgroups, the process group (DESIGN.md «Signals and
// orphans»).
func newBox(log *slog.Logger) (box, error) { return fallbackBox(log), nil }

func fallbackBox(log *slog.Logger) box { return newGroupBox(log) }

// parentDeath: no parent-death signal here; the guard kills the child's
// group when flower's end of its pipe closes.
func parentDeath(*syscall.SysProcAttr) {}

func subreaper() bool { return false }

// strays: no /proc and no subreaper here; what left the child's process
// group is not found.
func strays(string, bool) int { return 0 }
