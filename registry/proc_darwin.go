package registry

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// procStart reads pid's start time from the kernel (sysctl kern.proc.pid),
// in microseconds since the epoch: with the pid it names one process. A
// zombie counts as gone.
func procStart(pid int) (uint64, error) {
	kp, err := unix.SysctlKinfoProc("kern.proc.pid", pid)
	if err != nil {
		return 0, err
	}
	if kp.Proc.P_pid != int32(pid) {
		return 0, fmt.Errorf("process %d: not found", pid)
	}
	if kp.Proc.P_stat == 5 { // SZOMB
		return 0, fmt.Errorf("process %d is a zombie", pid)
	}
	t := kp.Proc.P_starttime
	return uint64(t.Sec)*1_000_000 + uint64(t.Usec), nil
}
