//go:build !linux

package main

import (
	"errors"
	"syscall"
	"time"
)

// stopOwner sends SIGTERM to the step's owner pid, once it is checked to
// hold the step's lock still, and waits up to wait for the lock to go.
func stopOwner(pid int, still func() bool, wait time.Duration) (exited bool, err error) {
	if !still() {
		return false, errNotRunning
	}
	if err := syscall.Kill(pid, syscall.SIGTERM); errors.Is(err, syscall.ESRCH) {
		return false, errNotRunning
	} else if err != nil {
		return false, err
	}
	for deadline := time.Now().Add(wait); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if !still() {
			return true, nil
		}
	}
	return false, nil
}

// lockHeldBy cannot ask the kernel who holds a lock here: the lock file's
// record, checked by StepOwner, is all there is.
func lockHeldBy(string, int) bool { return true }
