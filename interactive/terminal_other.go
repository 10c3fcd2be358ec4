//go:build !linux

package interactive

import (
	"errors"
	"os"
)

// reopenTerminal: without /proc there is no way to open the person's
// terminal anew (/dev/fd/N shares the descriptor's flags, and /dev/tty is
// only the controlling terminal), so the keys are read from in itself.
func reopenTerminal(*os.File) (*os.File, error) {
	return nil, errors.New("no /proc to open the terminal anew")
}
