//go:build !linux

package main

import (
	"context"
	"os"
)

// watchParent calls gone when the application that started flower dies:
// its harness must not outlive it, even in the middle of a turn, when
// nothing is written that could fail (DESIGN.md «Agent SDK relay»). Here
// the parent is polled; Linux watches it through a pidfd instead.
func watchParent(ctx context.Context, gone func(error)) {
	pollParent(ctx, os.Getppid(), gone)
}
