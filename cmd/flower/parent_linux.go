package main

import (
	"context"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// watchParent calls gone when the application that started flower dies:
// its harness must not outlive it, even in the middle of a turn, when
// nothing is written that could fail (DESIGN.md «Agent SDK relay»).
//
// On Linux the parent is watched through a pidfd, which names that one
// process (a reused pid cannot fool it) and becomes readable when it exits;
// the runtime's poller waits on it, so nothing polls. The parent-death
// signal is not used: it fires when the thread that forked flower exits,
// not the process, and it would arrive as a signal flower already gives
// another meaning. Where pidfds are missing (before Linux 5.3, or refused
// by a sandbox), the parent is polled as on other systems.
func watchParent(ctx context.Context, gone func(error)) {
	ppid := os.Getppid()
	f, err := openPidfd(ppid)
	if err != nil {
		pollParent(ctx, ppid, gone)
		return
	}
	// Closing the file wakes the wait below when the run ends first.
	stop := context.AfterFunc(ctx, func() { f.Close() })
	defer stop()
	// The parent may have died before its pidfd was opened: then the pid
	// named another process, or none, and flower already has a new parent.
	if os.Getppid() != ppid {
		f.Close()
		gone(fmt.Errorf("parent %d exited", ppid))
		return
	}
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		pollParent(ctx, ppid, gone)
		return
	}
	err = rc.Read(func(fd uintptr) bool {
		// The poller may wake for nothing; only an exit is readable.
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		n, perr := unix.Poll(fds, 0)
		return perr == nil && n > 0
	})
	if ctx.Err() != nil {
		return
	}
	f.Close()
	if err != nil {
		pollParent(ctx, ppid, gone)
		return
	}
	gone(fmt.Errorf("parent %d exited", ppid))
}

// openPidfd opens a non-blocking pidfd for pid as a file the runtime's
// poller waits on.
func openPidfd(pid int) (*os.File, error) {
	fd, err := unix.PidfdOpen(pid, unix.PIDFD_NONBLOCK)
	if err != nil {
		return nil, fmt.Errorf("pidfd_open %d: %w", pid, err)
	}
	return os.NewFile(uintptr(fd), fmt.Sprintf("pidfd:%d", pid)), nil
}
