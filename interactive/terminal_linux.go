package interactive

import (
	"fmt"
	"os"
	"syscall"
)

// reopenTerminal opens the terminal in anew: opening /proc/self/fd/N makes a
// new open file description, so O_NONBLOCK on it leaves the person's
// shell's own descriptor blocking.
func reopenTerminal(in *os.File) (*os.File, error) {
	return os.OpenFile(fmt.Sprintf("/proc/self/fd/%d", in.Fd()), os.O_RDONLY|syscall.O_NONBLOCK, 0)
}
