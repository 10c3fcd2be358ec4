//go:build !temporal

package main

import (
	"github.com/urfave/cli/v2"
)

// Without the temporal build tag, the commands that talk to a Temporal
// server run flower-temporal, the flower built with it (DESIGN.md «Two
// binaries»).

func workerAction(c *cli.Context, p proc) error       { return runTemporalBinary(p) }
func submitAction(c *cli.Context, p proc) error       { return runTemporalBinary(p) }
func handoffSetAction(c *cli.Context, p proc) error   { return runTemporalBinary(p) }
func showTemporal(c *cli.Context, p proc) error       { return runTemporalBinary(p) }
func handoffNowTemporal(c *cli.Context, p proc) error { return runTemporalBinary(p) }

// memoryLimit is flower's soft ceiling on Go's memory (GOMEMLIMIT
// overrides it): a supervisor holds a few lines of the stream at a time,
// about 3 MiB. Not lower: at 8 MiB the runtime's own memory left the heap
// about 1 MiB, and the collector ran all through a job; at 10 MiB it did
// in a step of a hundred generations, whose manifest grows with each, and
// at 12 MiB in one of three hundred (DESIGN.md «Two binaries»).
const memoryLimit = 16 << 20
