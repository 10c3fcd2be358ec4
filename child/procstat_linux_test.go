package child

import (
	"os"
	"runtime"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func TestParseProcStatCommWithParentheses(t *testing.T) {
	line := "4242 (a) b (c)) Z 7 8 9 0 -1 4194560 10 0 0 0 250 31 0 0 20 0 1 0\n"
	p, ok := parseProcStat(4242, []byte(line))
	want := ProcStat{PID: 4242, PPID: 7, Pgrp: 8, SID: 9, State: "Z", CPU: 2810 * time.Millisecond}
	if !ok || p != want {
		t.Fatalf("parseProcStat = %+v, %v; want %+v", p, ok, want)
	}
	if _, ok := parseProcStat(1, []byte("1 (no close paren S 0 1")); ok {
		t.Fatal("a line without the comm's closing parenthesis parsed")
	}
	if _, ok := parseProcStat(1, []byte("1 (short) S 0 1 1")); ok {
		t.Fatal("a line without the CPU fields parsed")
	}
}

func TestProcsFindsThisProcess(t *testing.T) {
	sid, _ := unix.Getsid(0)
	for _, p := range Procs() {
		if p.PID == os.Getpid() {
			if p.PPID != os.Getppid() || p.Pgrp != syscall.Getpgrp() || p.SID != sid {
				t.Fatalf("this process reads as %+v; ppid %d pgrp %d sid %d", p, os.Getppid(), syscall.Getpgrp(), sid)
			}
			return
		}
	}
	t.Fatal("Procs does not list this process")
}

func TestPeakRSSOfThisProcess(t *testing.T) {
	before := PeakRSS(os.Getpid())
	buf := make([]byte, 64<<20)
	for i := range buf {
		buf[i] = byte(i) // touch every page, so it is resident
	}
	if got := PeakRSS(os.Getpid()); before == 0 || got < before+60<<10 {
		t.Fatalf("PeakRSS %d KiB before touching 64 MiB, %d KiB after", before, got)
	}
	runtime.KeepAlive(buf)
	if got := PeakRSS(-1); got != 0 {
		t.Fatalf("PeakRSS of no process = %d", got)
	}
}
