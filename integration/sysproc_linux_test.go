package integration_test

import "syscall"

// diesWithTests: a process group of its own, and SIGKILL if the test binary
// dies without cleaning up.
func diesWithTests() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
