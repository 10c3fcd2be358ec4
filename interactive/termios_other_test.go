//go:build !linux

package interactive

import "golang.org/x/sys/unix"

const ioctlGetTermios = unix.TIOCGETA

// ioctlSetTermiosFlush sets the termios after dropping unread input.
const ioctlSetTermiosFlush = unix.TIOCSETAF
