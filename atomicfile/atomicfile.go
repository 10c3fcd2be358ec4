// Package atomicfile owns the one way flower writes a file that another
// process or a person may read at any moment (handoff markdown,
// manifest.json): temp file in the same directory, fsync, rename over the
// target, fsync the directory. A crash leaves the old file or the new one,
// never half of one. CopyNew, of what a reader gives, is the
// same for a file that must only be created, never replaced (a file a
// person may have written first, an archive).
package atomicfile

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/flowerhq/flower/diskfile"
)

// WriteFile replaces path with data so that readers see either the previous
// contents or data in full. The file gets mode perm less the umask, as
// os.WriteFile does: a person who set umask 077 gets files only they can
// read (DESIGN.md «Durable or loud»). The parent directory must
// exist. If path is a symlink, the link itself is replaced. On any error the
// temp file is removed; path is left as it was, except when only the final
// directory sync fails (the new contents are then in place but their
// durability across a crash is not guaranteed).
func WriteFile(path string, data []byte, perm os.FileMode) error {
	d, base, err := openParent(path)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.WriteFile(base, data, perm)
}

// CopyNew creates path holding what r gives until EOF, in full, or fails
// with an error wrapping fs.ErrExist if anything is at path already: it
// never replaces a file, not even one that appears while it writes (a copy
// of another file, an archive). The new name is a hard link to a complete
// temp file, so readers never see part of it. On a file system without
// hard links it falls back to an exclusive create, where a crash mid-write
// can leave a short file. As with WriteFile, only a failed final directory
// sync leaves the file in place with an error.
func CopyNew(path string, r io.Reader, perm os.FileMode) error {
	d, base, err := openParent(path)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.copyNew(path, base, r, perm)
}

// openParent opens the folder of path, and returns it with path's last
// element.
func openParent(path string) (*Dir, string, error) {
	dir, base := filepath.Split(path)
	if base == "" {
		return nil, "", fmt.Errorf("write %s: empty file name", path)
	}
	if dir == "" {
		dir = "."
	}
	d, err := OpenDir(dir)
	if err != nil {
		return nil, "", fmt.Errorf("create temp: %w", err)
	}
	return d, base, nil
}

// Dir is a folder held open, into which files are written by name: the
// temp file is created, the rename made and the folder synced through its
// descriptor, with no walk of its path and no open of the folder for each
// write. A Dir is used from one goroutine at a time; Close lets it go.
type Dir struct {
	fd   int
	path string
}

// OpenDir opens the folder at path (a link to one is followed, as a
// write by path would).
func OpenDir(path string) (*Dir, error) {
	fd, err := diskfile.Openat(unix.AT_FDCWD, path, syscall.O_RDONLY|syscall.O_DIRECTORY, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	return &Dir{fd: fd, path: path}, nil
}

// Path is the path d was opened at.
func (d *Dir) Path() string { return d.path }

// Close lets the folder go.
func (d *Dir) Close() error {
	if d.fd < 0 {
		return nil
	}
	fd := d.fd
	d.fd = -1
	return os.NewSyscallError("close", syscall.Close(fd))
}

// WriteFile is the package's WriteFile of the file called name in d.
func (d *Dir) WriteFile(name string, data []byte, perm os.FileMode) error {
	tmp, err := d.writeTemp(bytes.NewReader(data), "."+name+".tmp-", perm)
	if err != nil {
		return err
	}
	// rename(2) itself, not os.Rename, which first looks whether path is a
	// directory to say EEXIST: rename says EISDIR of one all the same.
	if err := diskfile.Retry(func() error { return unix.Renameat(d.fd, tmp, d.fd, name) }); err != nil {
		d.remove(tmp)
		path := filepath.Join(d.path, name)
		return fmt.Errorf("rename %s: %w", path, &os.LinkError{Op: "rename", Old: filepath.Join(d.path, tmp), New: path, Err: err})
	}
	if err := d.sync(); err != nil {
		return fmt.Errorf("sync dir %s: %w", d.path, err)
	}
	return nil
}

// copyNew is CopyNew of the file called name in d (path names it for
// errors).
func (d *Dir) copyNew(path, name string, r io.Reader, perm os.FileMode) error {
	tmp, err := d.writeTemp(r, "."+name+".tmp-", perm)
	if err != nil {
		return err
	}
	// The temp name goes whatever happens: the link, if made, is the file.
	defer d.remove(tmp)
	err = diskfile.Retry(func() error { return unix.Linkat(d.fd, tmp, d.fd, name, 0) })
	switch {
	case errors.Is(err, fs.ErrExist):
		return fmt.Errorf("create %s: %w", path, &os.LinkError{Op: "link", Old: filepath.Join(d.path, tmp), New: path, Err: err})
	case err != nil:
		if err := d.copyExcl(name, tmp, perm); err != nil {
			return fmt.Errorf("create %s: %w", path, err)
		}
	}
	if err := d.sync(); err != nil {
		return fmt.Errorf("sync dir %s: %w", d.path, err)
	}
	return nil
}

// writeTemp writes what r gives to a synced temp file in d, created with
// mode perm (less the umask) under a name that starts with prefix, and
// returns that name. The temp file must live in the target's folder:
// rename and link only work within one file system. On error nothing is
// left behind.
func (d *Dir) writeTemp(r io.Reader, prefix string, perm os.FileMode) (string, error) {
	fd, name, err := d.createTemp(prefix, perm)
	if err != nil {
		return "", fmt.Errorf("create temp: %w", err)
	}
	w := &fdWriter{fd: fd}
	err = w.fill(r)
	if cerr := syscall.Close(fd); err == nil && cerr != nil {
		err = fmt.Errorf("close temp: %w", os.NewSyscallError("close", cerr))
	}
	if err != nil {
		d.remove(name)
		return "", err
	}
	return name, nil
}

// maxTempTries bounds the search for a free temp name.
const maxTempTries = 100

// createTemp is os.CreateTemp in d with a mode of the caller's: CreateTemp
// makes 0600 files, and a chmod after it would ignore the umask.
func (d *Dir) createTemp(prefix string, perm os.FileMode) (int, string, error) {
	var b [8]byte
	for range maxTempTries {
		_, _ = rand.Read(b[:])
		name := prefix + hex.EncodeToString(b[:])
		fd, err := diskfile.Openat(d.fd, name, syscall.O_RDWR|syscall.O_CREAT|syscall.O_EXCL|syscall.O_NOFOLLOW, uint32(perm.Perm()))
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return -1, "", &fs.PathError{Op: "open", Path: filepath.Join(d.path, name), Err: err}
		}
		return fd, name, nil
	}
	return -1, "", fmt.Errorf("no free temp name in %s after %d tries", d.path, maxTempTries)
}

// copyExcl creates name in d with O_EXCL and copies the file src of d
// into it, removing its own file again if the copy fails.
func (d *Dir) copyExcl(name, src string, perm os.FileMode) error {
	in, err := diskfile.Openat(d.fd, src, syscall.O_RDONLY, 0)
	if err != nil {
		return &fs.PathError{Op: "open", Path: filepath.Join(d.path, src), Err: err}
	}
	defer syscall.Close(in)
	fd, err := diskfile.Openat(d.fd, name, syscall.O_WRONLY|syscall.O_CREAT|syscall.O_EXCL, uint32(perm.Perm()))
	if err != nil {
		return &fs.PathError{Op: "open", Path: filepath.Join(d.path, name), Err: err}
	}
	err = (&fdWriter{fd: fd}).fill(&fdReader{fd: in})
	if cerr := syscall.Close(fd); err == nil && cerr != nil {
		err = os.NewSyscallError("close", cerr)
	}
	if err != nil {
		d.remove(name)
		return err
	}
	return nil
}

// sync makes a rename or link in d durable: without it a crash may bring
// back the old directory entry even though the new data reached the disk.
func (d *Dir) sync() error {
	return os.NewSyscallError("fsync", diskfile.Retry(func() error { return syscall.Fsync(d.fd) }))
}

// remove unlinks name from d, whatever comes of it.
func (d *Dir) remove(name string) {
	_ = diskfile.Retry(func() error { return unix.Unlinkat(d.fd, name, 0) })
}

// fdWriter writes to a descriptor the caller closes.
type fdWriter struct{ fd int }

func (w *fdWriter) Write(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		m, err := syscall.Write(w.fd, p[n:])
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return n, os.NewSyscallError("write", err)
		}
		n += m
	}
	return n, nil
}

// fill writes what r gives until EOF, and syncs it.
func (w *fdWriter) fill(r io.Reader) error {
	if _, err := io.Copy(w, r); err != nil {
		return fmt.Errorf("write temp: %w", err)
	}
	if err := diskfile.Retry(func() error { return syscall.Fsync(w.fd) }); err != nil {
		return fmt.Errorf("sync temp: %w", os.NewSyscallError("fsync", err))
	}
	return nil
}

// fdReader reads a descriptor.
type fdReader struct{ fd int }

func (r *fdReader) Read(p []byte) (int, error) {
	for {
		n, err := syscall.Read(r.fd, p)
		switch {
		case err == syscall.EINTR:
			continue
		case err != nil:
			return 0, os.NewSyscallError("read", err)
		case n == 0 && len(p) > 0:
			return 0, io.EOF
		}
		return n, nil
	}
}
