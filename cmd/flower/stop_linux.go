package main

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// stopOwner sends SIGTERM to the step's owner pid and waits up to wait for
// it to exit. The process is held by a pidfd from before the check that
// it still holds the step's lock (still) to the signal, so a pid the
// owner left and another process took is never signalled.
func stopOwner(pid int, still func() bool, wait time.Duration) (exited bool, err error) {
	fd, err := unix.PidfdOpen(pid, 0)
	if errors.Is(err, unix.ESRCH) {
		return false, errNotRunning
	} else if err != nil {
		return false, err
	}
	defer unix.Close(fd)
	if !still() {
		return false, errNotRunning
	}
	if err := unix.PidfdSendSignal(fd, unix.SIGTERM, nil, 0); errors.Is(err, unix.ESRCH) {
		return false, errNotRunning
	} else if err != nil {
		return false, err
	}
	// A pidfd reads as ready once its process has exited.
	deadline := time.Now().Add(wait)
	for {
		left := time.Until(deadline)
		if left <= 0 {
			return false, nil
		}
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		n, err := unix.Poll(fds, int(min(left, time.Second).Milliseconds())+1)
		if errors.Is(err, unix.EINTR) {
			continue
		} else if err != nil {
			return false, err
		}
		if n > 0 {
			return true, nil
		}
	}
}

// lockHeldBy reports whether the kernel lists pid as the holder of the
// flock(2) on the file at path (/proc/locks), so a lock file that names a
// pid other than its holder's is never believed.
func lockHeldBy(path string, pid int) bool {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return false
	}
	b, err := os.ReadFile("/proc/locks")
	if err != nil {
		return false
	}
	file := fmt.Sprintf("%02x:%02x:%d", unix.Major(uint64(st.Dev)), unix.Minor(uint64(st.Dev)), st.Ino)
	for _, line := range strings.Split(string(b), "\n") {
		// "1: FLOCK  ADVISORY  WRITE 22239 fe:00:9980929 0 EOF"; a waiter's
		// line has "->" after the number and holds nothing.
		f := strings.Fields(line)
		if len(f) >= 6 && f[1] == "FLOCK" && f[3] == "WRITE" && f[5] == file {
			return f[4] == strconv.Itoa(pid)
		}
	}
	return false
}
