// Package diskfile opens files and directories on disk the way flower
// uses them: read, written and synced in place, never waited on.
//
// os.OpenFile hands every descriptor to the runtime's poller: on Linux it
// sets the descriptor non-blocking, asks epoll to watch it (which refuses
// a regular file or a directory) and sets it blocking again, four fcntl
// and an epoll_ctl on every open. flower opens a dozen files for each
// decision of a step (a manifest save, a receipt, a check of its
// territory), so those five calls were most of the system calls it makes
// (DESIGN.md «Atomic writes»). Open makes the one open call and wraps the
// descriptor as os.NewFile does, which asks the poller only for a
// descriptor opened non-blocking.
package diskfile

import (
	"io/fs"
	"os"
	"slices"
	"syscall"

	"golang.org/x/sys/unix"
)

// Open is os.OpenFile without the poller's try for a descriptor opened
// blocking: the same flags (close-on-exec always), the same permission
// bits under the umask, the same *fs.PathError.
func Open(path string, flag int, perm fs.FileMode) (*os.File, error) {
	mode := uint32(perm.Perm())
	if perm&fs.ModeSetuid != 0 {
		mode |= syscall.S_ISUID
	}
	if perm&fs.ModeSetgid != 0 {
		mode |= syscall.S_ISGID
	}
	if perm&fs.ModeSticky != 0 {
		mode |= syscall.S_ISVTX
	}
	fd, err := Openat(unix.AT_FDCWD, path, flag, mode)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	return os.NewFile(uintptr(fd), path), nil
}

// Openat is openat(2), relative to the folder dir (a descriptor, or
// unix.AT_FDCWD), with close-on-exec, again on EINTR: a bare descriptor,
// for a caller that reads, writes and closes it by system call.
func Openat(dir int, name string, flag int, mode uint32) (int, error) {
	for {
		fd, err := unix.Openat(dir, name, flag|unix.O_CLOEXEC, mode)
		if err != unix.EINTR {
			return fd, err
		}
	}
}

// Retry calls f again while it is interrupted (EINTR).
func Retry(f func() error) error {
	for {
		if err := f(); err != unix.EINTR {
			return err
		}
	}
}

// ReadDir is os.ReadDir by Open: the entries sorted by name.
func ReadDir(dir string) ([]os.DirEntry, error) {
	f, err := Open(dir, os.O_RDONLY|syscall.O_DIRECTORY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	entries, err := f.ReadDir(-1)
	slices.SortFunc(entries, func(a, b os.DirEntry) int {
		switch {
		case a.Name() < b.Name():
			return -1
		case a.Name() > b.Name():
			return 1
		}
		return 0
	})
	return entries, err
}
