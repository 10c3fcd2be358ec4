package main

import "golang.org/x/sys/unix"

// waitExit waits for pid to exit without reaping it: waitid(P_PID, pid,
// WEXITED|WNOWAIT).
func waitExit(pid int) error {
	var info unix.Siginfo
	return unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
}
