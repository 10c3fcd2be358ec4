package main

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strconv"
)

// envCPUProfile names a file flower writes a CPU profile of its whole run
// to (go tool pprof reads it), and what it allocated in that run next to
// it, <file>.allocs; a directory gets one file per process,
// flower-<pid>.pprof, for a bench that starts many. Unset, nothing is
// profiled.
const envCPUProfile = "FLOWER_CPUPROFILE"

// startCPUProfile starts the profile envCPUProfile asks for and returns
// what stops it; it does nothing when the variable is unset.
func startCPUProfile() (stop func()) {
	path := os.Getenv(envCPUProfile)
	if path == "" {
		return func() {}
	}
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		path = filepath.Join(path, "flower-"+strconv.Itoa(os.Getpid())+".pprof")
	}
	f, err := os.Create(path)
	if err == nil {
		err = pprof.StartCPUProfile(f)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "flower: %s: %v\n", envCPUProfile, err)
		return func() {}
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
		if a, err := os.Create(path + ".allocs"); err == nil {
			_ = pprof.Lookup("allocs").WriteTo(a, 0)
			a.Close()
		}
	}
}
