// Package atomicfile owns the one way flower writes a file that another
// process or a person may read at any moment (handoff markdown,
// manifest.json): temp file in the same directory, fsync, rename over the
// target, fsync the directory. A crash leaves the old file or the new one,
// never half of one.
package atomicfile

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// WriteFile replaces path with data so that readers see either the previous
// contents or data in full. The file ends up with mode perm exactly (the
// umask does not apply, unlike os.WriteFile). The parent directory must
// exist. If path is a symlink, the link itself is replaced. On any error the
// temp file is removed; path is left as it was, except when only the final
// directory sync fails (the new contents are then in place but their
// durability across a crash is not guaranteed).
func WriteFile(path string, data []byte, perm os.FileMode) (err error) {
	dir, base := filepath.Split(path)
	if base == "" {
		return fmt.Errorf("write %s: empty file name", path)
	}
	if dir == "" {
		dir = "."
	}
	// The temp file must live in the target's directory: rename is only
	// atomic within one file system.
	f, err := os.CreateTemp(dir, "."+base+".tmp-*")
	if err != nil {
		return fmt.Errorf("create temp: %w", err)
	}
	tmp := f.Name()
	closed := false
	defer func() {
		if err == nil {
			return
		}
		if !closed {
			_ = f.Close()
		}
		// After a successful rename the temp name is gone; the error from
		// Remove is then expected and meaningless.
		_ = os.Remove(tmp)
	}()

	if _, err := f.Write(data); err != nil {
		return fmt.Errorf("write temp: %w", err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("sync temp: %w", err)
	}
	closed = true
	if err := f.Close(); err != nil {
		return fmt.Errorf("close temp: %w", err)
	}
	// Chmod before rename so the final name never shows CreateTemp's 0600.
	if err := os.Chmod(tmp, perm); err != nil {
		return fmt.Errorf("chmod temp: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("rename %s: %w", path, err)
	}
	if err := syncDir(dir); err != nil {
		return fmt.Errorf("sync dir %s: %w", dir, err)
	}
	return nil
}

// syncDir makes the rename itself durable: without it a crash may bring
// back the old directory entry even though the new data reached the disk.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	return errors.Join(d.Sync(), d.Close())
}
