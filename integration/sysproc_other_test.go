//go:build !linux

package integration_test

import "syscall"

// diesWithTests: a process group of its own (no parent-death signal here).
func diesWithTests() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }
