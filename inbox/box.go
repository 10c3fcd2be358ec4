package inbox

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/flowerhq/flower/diskfile"
)

// box is an inbox dir held open. It is reached from the run dir one
// folder at a time, never through a link (O_NOFOLLOW at the inbox folder
// and at the step's), and every name in it is opened, removed or renamed
// relative to its descriptor: a name from its listing or of this package's
// own making, which has no separator, cannot leave it.
type box struct {
	f   *os.File // for listing and closing
	fd  int
	dir string
}

// open opens the inbox dir (see openBox), making none of it.
func open(dir string) (*box, error) { return openBox(dir, false) }

// openBox opens the inbox dir after checking that neither it nor its
// parent in the run dir is a link or anything but a folder (ErrNotDir);
// with mkdir, each of the two is made first when missing.
func openBox(dir string, mkdir bool) (*box, error) {
	dir = filepath.Clean(dir)
	parent := filepath.Dir(dir)
	run, err := diskfile.Openat(unix.AT_FDCWD, filepath.Dir(parent), unix.O_DIRECTORY, 0)
	if err != nil {
		return nil, fmt.Errorf("inbox: %w", &fs.PathError{Op: "open", Path: filepath.Dir(parent), Err: err})
	}
	defer unix.Close(run)
	mid, err := openFolder(run, parent, mkdir)
	if err != nil {
		return nil, err
	}
	defer unix.Close(mid)
	fd, err := openFolder(mid, dir, mkdir)
	if err != nil {
		return nil, err
	}
	return &box{f: os.NewFile(uintptr(fd), dir), fd: fd, dir: dir}, nil
}

// openFolder opens the folder at path, named by its last element in the
// folder at, without following a link; with mkdir it is made first when
// missing.
func openFolder(at int, path string, mkdir bool) (int, error) {
	name := filepath.Base(path)
	if mkdir {
		if err := unix.Mkdirat(at, name, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
			return -1, fmt.Errorf("make inbox: %w", &fs.PathError{Op: "mkdir", Path: path, Err: err})
		}
	}
	fd, err := diskfile.Openat(at, name, unix.O_DIRECTORY|unix.O_NOFOLLOW, 0)
	switch {
	case errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR):
		return -1, fmt.Errorf("%w: %s", ErrNotDir, path)
	case err != nil:
		return -1, fmt.Errorf("inbox: %w", &fs.PathError{Op: "open", Path: path, Err: err})
	}
	return fd, nil
}

// Close lets the inbox dir go.
func (b *box) Close() error { return b.f.Close() }

// list is up to n of the box's entries.
func (b *box) list(n int) ([]os.DirEntry, error) { return b.f.ReadDir(n) }

// lstat is the entry name as it is, a link not followed.
func (b *box) lstat(name string) (unix.Stat_t, error) {
	var st unix.Stat_t
	err := diskfile.Retry(func() error { return unix.Fstatat(b.fd, name, &st, unix.AT_SYMLINK_NOFOLLOW) })
	return st, b.pathErr("lstat", name, err)
}

// openFile opens the entry name, never through a link.
func (b *box) openFile(name string, flag int, perm uint32) (*os.File, error) {
	fd, err := diskfile.Openat(b.fd, name, flag|unix.O_NOFOLLOW, perm)
	if err != nil {
		return nil, b.pathErr("open", name, err)
	}
	return os.NewFile(uintptr(fd), filepath.Join(b.dir, name)), nil
}

// remove removes the entry name: a file, or an empty folder.
func (b *box) remove(name string) error {
	err := diskfile.Retry(func() error { return unix.Unlinkat(b.fd, name, 0) })
	if errors.Is(err, unix.EISDIR) || errors.Is(err, unix.EPERM) {
		err = diskfile.Retry(func() error { return unix.Unlinkat(b.fd, name, unix.AT_REMOVEDIR) })
	}
	return b.pathErr("remove", name, err)
}

// rename gives the entry from the name to.
func (b *box) rename(from, to string) error {
	err := diskfile.Retry(func() error { return unix.Renameat(b.fd, from, b.fd, to) })
	if err != nil {
		return &os.LinkError{Op: "rename", Old: filepath.Join(b.dir, from), New: filepath.Join(b.dir, to), Err: err}
	}
	return nil
}

func (b *box) pathErr(op, name string, err error) error {
	if err == nil {
		return nil
	}
	return &fs.PathError{Op: op, Path: filepath.Join(b.dir, name), Err: err}
}
