package child

import (
	"bytes"
	"os"
	"strconv"
	"time"
)

// ProcStat is what /proc/PID/stat says of one process.
type ProcStat struct {
	PID, PPID, Pgrp, SID int
	State                string        // "R", "S", "Z", …
	CPU                  time.Duration // its own user + system time, without its children's
}

// Procs reads every process's /proc/PID/stat; nil where there is no /proc.
func Procs() []ProcStat {
	var out []ProcStat
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if p, ok := ReadProcStat(pid); ok {
			out = append(out, p)
		}
	}
	return out
}

// ReadProcStat reads /proc/<pid>/stat; false when it cannot.
func ReadProcStat(pid int) (ProcStat, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ProcStat{}, false
	}
	return parseProcStat(pid, b)
}

func parseProcStat(pid int, b []byte) (ProcStat, bool) {
	// pid (comm) state ppid pgrp session tty tpgid flags minflt cminflt
	// majflt cmajflt utime stime …; comm may hold spaces and parentheses.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return ProcStat{}, false
	}
	f := bytes.Fields(b[i+1:])
	if len(f) < 13 {
		return ProcStat{}, false
	}
	n := func(k int) int { v, _ := strconv.Atoi(string(f[k])); return v }
	return ProcStat{PID: pid, PPID: n(1), Pgrp: n(2), SID: n(3), State: string(f[0]),
		CPU: time.Duration(n(11)+n(12)) * time.Second / 100}, true // USER_HZ is 100 on Linux
}

// PeakRSS is the process's peak resident set in KiB, VmHWM of
// /proc/<pid>/status; 0 when it cannot be read.
func PeakRSS(pid int) int {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0
	}
	for l := range bytes.Lines(b) {
		if v, ok := bytes.CutPrefix(l, []byte("VmHWM:")); ok {
			n, _ := strconv.Atoi(string(bytes.TrimSpace(bytes.TrimSuffix(bytes.TrimSpace(v), []byte("kB")))))
			return n
		}
	}
	return 0
}
