// Package atomicfile owns the one way flower writes a file that another
// process or a person may read at any moment (handoff markdown,
// manifest.json): temp file in the same directory, fsync, rename over the
// target, fsync the directory. A crash leaves the old file or the new one,
// never half of one. WriteNew (and CopyNew, of what a reader gives) is the
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
	"strings"
	"syscall"

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
	dir, tmp, err := writeTemp(path, bytes.NewReader(data), perm)
	if err != nil {
		return err
	}
	// rename(2) itself, not os.Rename, which first looks whether path is a
	// directory to say EEXIST: rename says EISDIR of one all the same.
	if err := rename(tmp, path); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("rename %s: %w", path, err)
	}
	if err := syncDir(dir); err != nil {
		return fmt.Errorf("sync dir %s: %w", dir, err)
	}
	return nil
}

// WriteNew creates path holding data in full, or fails with an error
// wrapping fs.ErrExist if anything is at path already: it never replaces a
// file, not even one that appears while it writes. The new name is a hard
// link to a complete temp file, so readers never see part of data. On a
// file system without hard links it falls back to an exclusive create,
// where a crash mid-write can leave a short file. As with WriteFile, only a
// failed final directory sync leaves the file in place with an error.
func WriteNew(path string, data []byte, perm os.FileMode) error {
	return CopyNew(path, bytes.NewReader(data), perm)
}

// CopyNew is WriteNew of what r gives until EOF: a copy of another file
// (an archive) that no reader ever sees half of.
func CopyNew(path string, r io.Reader, perm os.FileMode) error {
	dir, tmp, err := writeTemp(path, r, perm)
	if err != nil {
		return err
	}
	// The temp name goes whatever happens: the link, if made, is the file.
	defer os.Remove(tmp)
	err = os.Link(tmp, path)
	switch {
	case errors.Is(err, fs.ErrExist):
		return fmt.Errorf("create %s: %w", path, err)
	case err != nil:
		if err := copyExcl(path, tmp, perm); err != nil {
			return fmt.Errorf("create %s: %w", path, err)
		}
	}
	if err := syncDir(dir); err != nil {
		return fmt.Errorf("sync dir %s: %w", dir, err)
	}
	return nil
}

// writeTemp writes what r gives to a synced temp file next to path,
// created with mode perm (less the umask), and returns the directory and
// the temp file's name. On error nothing is left behind.
func writeTemp(path string, r io.Reader, perm os.FileMode) (dir, tmp string, err error) {
	dir, base := filepath.Split(path)
	if base == "" {
		return "", "", fmt.Errorf("write %s: empty file name", path)
	}
	if dir == "" {
		dir = "."
	}
	// The temp file must live in the target's directory: rename and link
	// only work within one file system.
	f, name, err := createTemp(dir, "."+base+".tmp-", perm)
	if err != nil {
		return "", "", fmt.Errorf("create temp: %w", err)
	}
	// The error paths below return "" for tmp: the cleanup must use the
	// name it was created under, not the result.
	fail := func(what string, err error) (string, string, error) {
		_ = f.Close()
		_ = os.Remove(name)
		return "", "", fmt.Errorf("%s: %w", what, err)
	}
	if _, err := io.Copy(f, r); err != nil {
		return fail("write temp", err)
	}
	if err := f.Sync(); err != nil {
		return fail("sync temp", err)
	}
	if err := f.Close(); err != nil {
		_ = os.Remove(name)
		return "", "", fmt.Errorf("close temp: %w", err)
	}
	return dir, name, nil
}

// maxTempTries bounds the search for a free temp name.
const maxTempTries = 100

// createTemp is os.CreateTemp with a mode of the caller's: CreateTemp makes
// 0600 files, and a chmod after it would ignore the umask.
func createTemp(dir, prefix string, perm os.FileMode) (*os.File, string, error) {
	var b [8]byte
	sep := string(filepath.Separator) // dir is the Split of a path: it ends in one, or is "."
	if strings.HasSuffix(dir, sep) {
		sep = ""
	}
	for range maxTempTries {
		_, _ = rand.Read(b[:])
		name := dir + sep + prefix + hex.EncodeToString(b[:])
		f, err := diskfile.Open(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, perm.Perm())
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		return f, name, err
	}
	return nil, "", fmt.Errorf("no free temp name in %s after %d tries", dir, maxTempTries)
}

// copyExcl creates path with O_EXCL and copies the file src into it,
// removing its own file again if the copy fails.
func copyExcl(path, src string, perm os.FileMode) error {
	in, err := diskfile.Open(src, os.O_RDONLY, 0)
	if err != nil {
		return err
	}
	defer in.Close()
	f, err := diskfile.Open(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	_, werr := io.Copy(f, in)
	if werr == nil {
		werr = f.Sync()
	}
	if err := errors.Join(werr, f.Close()); err != nil {
		_ = os.Remove(path)
		return err
	}
	return nil
}

// syncDir makes the rename itself durable: without it a crash may bring
// back the old directory entry even though the new data reached the disk.
func syncDir(dir string) error {
	d, err := diskfile.Open(dir, os.O_RDONLY, 0)
	if err != nil {
		return err
	}
	return errors.Join(d.Sync(), d.Close())
}

func rename(from, to string) error {
	for {
		err := syscall.Rename(from, to)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return &os.LinkError{Op: "rename", Old: from, New: to, Err: err}
		}
		return nil
	}
}
