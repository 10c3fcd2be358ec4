package interactive

import "golang.org/x/sys/unix"

const ioctlGetTermios = unix.TCGETS

// ioctlSetTermiosFlush sets the termios after dropping unread input.
const ioctlSetTermiosFlush = unix.TCSETSF
