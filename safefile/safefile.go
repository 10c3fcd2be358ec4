// Package safefile owns how flower touches a path inside its own territory
// (DESIGN.md «Territory»): the workbench <workspace>/.flower and the run
// dirs flower made. Those folders sit in a workspace someone else may have
// prepared, so nothing there is taken for what its name says: a component
// that is a symbolic link, a directory where a file belongs (or the
// reverse), a device, a socket, a FIFO or a file with a second hard link is
// refused with one line that names the path and says what to do; files are
// opened without following links and without blocking; and only regular
// files are read, each under a size cap stated by its caller.
package safefile

import (
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

// ErrUnsafe is wrapped by every *Error: a path in flower's territory is not
// what flower made there.
var ErrUnsafe = errors.New("not flower's own file")

// ErrTooLarge is wrapped by the *Error of a file over its cap.
var ErrTooLarge = errors.New("over its size cap")

// Error refuses one path. Its text is one line: the path, what is wrong
// with it, and what to do.
type Error struct {
	Path    string
	Problem string // "is a symbolic link (to /x)", "is a directory", …
	Fix     string // what to do
	Err     error  // ErrUnsafe or ErrTooLarge
}

// Error describes the refusal; it is what a person sees.
func (e *Error) Error() string {
	return fmt.Sprintf("%s %s: %s", e.Path, e.Problem, e.Fix)
}

// Unwrap gives ErrUnsafe or ErrTooLarge.
func (e *Error) Unwrap() error { return e.Err }

// Kind is what flower expects at a path.
type Kind int

// What a path must be.
const (
	Dir Kind = iota
	File
)

// fixLink is what to do about a link or a thing of the wrong kind in
// flower's territory: flower makes its files again, so removing the thing
// loses nothing of flower's.
func fix(path string) string {
	return "flower's own files are never links or special files; look at what is there, then remove it (rm -r " +
		quote(path) + ") and flower makes its own again"
}

func quote(p string) string {
	if strings.ContainsAny(p, " \t'\"\\$`") {
		return "'" + strings.ReplaceAll(p, "'", `'\''`) + "'"
	}
	return p
}

// fixLinked is what to do about a file of flower's with a second hard link:
// the other name may lie anywhere on the file system, and writing the file
// would write there too.
func fixLinked(path string) string {
	return "flower's own files have one name, and this one shares its contents with another (a hard link, perhaps to a file outside the workspace); remove it (rm " +
		quote(path) + "): the other name keeps the contents, and flower makes its own again"
}

// Links is how many names (hard links) the file of fi has; 1 where the
// system does not say.
func Links(fi fs.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Nlink)
	}
	return 1
}

// Single refuses a regular file of flower's, whose Lstat or Stat gave fi,
// that has more than one name: a write to it would reach every other name,
// which may be a file outside the workspace (DESIGN.md «Territory»).
func Single(path string, fi fs.FileInfo) error {
	if fi.Mode().IsRegular() && Links(fi) > 1 {
		return &Error{Path: path, Err: ErrUnsafe, Fix: fixLinked(path),
			Problem: fmt.Sprintf("has %d hard links, not one", Links(fi))}
	}
	return nil
}

// refuse builds the *Error for a path whose Lstat gave fi.
func refuse(path string, fi fs.FileInfo, want Kind) *Error {
	var problem string
	switch m := fi.Mode(); {
	case m&fs.ModeSymlink != 0:
		problem = "is a symbolic link"
		if to, err := os.Readlink(path); err == nil {
			problem += " (to " + to + ")"
		}
	case m.IsDir():
		problem = "is a directory where flower keeps a file"
	case m.IsRegular():
		problem = "is a file where flower keeps a directory"
	case m&fs.ModeNamedPipe != 0:
		problem = "is a FIFO, not a regular file"
	case m&fs.ModeDevice != 0:
		problem = "is a device, not a regular file"
	case m&fs.ModeSocket != 0:
		problem = "is a socket, not a regular file"
	default:
		problem = "is not a regular file"
	}
	if want == Dir && !fi.IsDir() && fi.Mode()&fs.ModeSymlink == 0 && !fi.Mode().IsRegular() {
		problem = "is not a directory"
	}
	return &Error{Path: path, Problem: problem, Fix: fix(path), Err: ErrUnsafe}
}

// Check makes sure that every component of path below anchor is what
// flower makes: a real directory for each folder and, at path itself, a
// real directory (Dir) or a regular file (File). A component that does not
// exist ends the check without error: flower will make it. anchor is a
// folder the person named (the workspace, or a run dir they gave); it and
// its parents are theirs and are not checked. A path not under anchor is
// checked as a single component.
func Check(anchor, path string, want Kind) error {
	return (*Seen)(nil).Check(anchor, path, want)
}

// Seen remembers, for one check of many paths (Territory.Check's), what
// each Lstat and each listing of a folder gave: a folder above several of
// the paths is looked at once per check, not once per path. Its methods
// are the package's functions of the same names; a nil *Seen looks every
// time. A Seen is for one check: what it remembers is not looked at again.
type Seen struct {
	stats map[string]seenStat
	dirs  map[string]seenDir
}

type seenStat struct {
	fi  fs.FileInfo
	err error
}

type seenDir struct {
	entries []os.DirEntry
	err     error
}

func (s *Seen) lstat(path string) (fs.FileInfo, error) {
	if s == nil {
		return os.Lstat(path)
	}
	if r, ok := s.stats[path]; ok {
		return r.fi, r.err
	}
	fi, err := os.Lstat(path)
	if s.stats == nil {
		s.stats = map[string]seenStat{}
	}
	s.stats[path] = seenStat{fi, err}
	return fi, err
}

func (s *Seen) entriesOf(dir string) ([]os.DirEntry, error) {
	if s == nil {
		return entriesOf(dir)
	}
	if r, ok := s.dirs[dir]; ok {
		return r.entries, r.err
	}
	entries, err := entriesOf(dir)
	if s.dirs == nil {
		s.dirs = map[string]seenDir{}
	}
	s.dirs[dir] = seenDir{entries, err}
	return entries, err
}

// Entries lists dir as the checks see it: a missing dir, or a file where
// it was expected, has no entries.
func (s *Seen) Entries(dir string) ([]os.DirEntry, error) {
	return s.entriesOf(dir)
}

// Check is the package's Check.
func (s *Seen) Check(anchor, path string, want Kind) error {
	anchor, path = filepath.Clean(anchor), filepath.Clean(path)
	// Below anchor, the components are the prefixes of path that end at a
	// separator, and path itself: path is clean, so each prefix is too,
	// with no filepath.Join per component (which cost the checks of each
	// decision more than their lstat calls did).
	start := len(anchor) + 1
	if anchor == string(filepath.Separator) {
		start = 1
	}
	if len(path) <= start || path[:start-1] != anchor[:start-1] || path[start-1] != filepath.Separator {
		return s.checkRel(anchor, path, want)
	}
	for end := start; end <= len(path); end++ {
		if end < len(path) && path[end] != filepath.Separator {
			continue
		}
		k := Dir
		if end == len(path) {
			k = want
		}
		if done, err := s.component(path[:end], k); done {
			return err
		}
	}
	return nil
}

// checkRel is Check of any other pair: path is anchor itself, lies
// outside it, or anchor is relative; its components are found by
// filepath.Rel.
func (s *Seen) checkRel(anchor, path string, want Kind) error {
	rel, err := filepath.Rel(anchor, path)
	if err != nil || !filepath.IsLocal(rel) {
		if path == anchor {
			return nil
		}
		return s.checkOne(path, want)
	}
	parts := strings.Split(rel, string(filepath.Separator))
	cur := anchor
	for i, part := range parts {
		cur = filepath.Join(cur, part)
		k := Dir
		if i == len(parts)-1 {
			k = want
		}
		if done, err := s.component(cur, k); done {
			return err
		}
	}
	return nil
}

// component checks one component of Check's walk, which it ends (done)
// when the component is missing, wrong, or the file at its end.
func (s *Seen) component(cur string, k Kind) (done bool, err error) {
	fi, err := s.lstat(cur)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		// Missing, or below a file of the person's: making it says why not.
		return true, nil
	}
	if err != nil {
		return true, fmt.Errorf("check %s: %w", cur, err)
	}
	if !is(fi, k) {
		return true, refuse(cur, fi, k)
	}
	if k == File {
		return true, Single(cur, fi)
	}
	return false, nil
}

func (s *Seen) checkOne(path string, want Kind) error {
	fi, err := s.lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("check %s: %w", path, err)
	}
	if !is(fi, want) {
		return refuse(path, fi, want)
	}
	if want == File {
		return Single(path, fi)
	}
	return nil
}

func is(fi fs.FileInfo, k Kind) bool {
	if k == Dir {
		return fi.IsDir()
	}
	return fi.Mode().IsRegular()
}

// CheckEntries refuses any entry of dir that is a link, a special file
// (a FIFO, a device, a socket) or a file with a second hard link: a folder
// of flower's holds only its own files and folders. A missing dir is fine.
func CheckEntries(dir string) error {
	return (*Seen)(nil).CheckEntries(dir)
}

// CheckEntries is the package's CheckEntries.
func (s *Seen) CheckEntries(dir string) error {
	entries, err := s.entriesOf(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if e.Type().IsDir() {
			continue
		}
		p := filepath.Join(dir, e.Name())
		fi, err := s.lstat(p)
		if err != nil {
			continue // gone meanwhile
		}
		if !fi.IsDir() && !fi.Mode().IsRegular() {
			return refuse(p, fi, File)
		}
		if err := Single(p, fi); err != nil {
			return err
		}
	}
	return nil
}

// entriesOf lists dir for the checks above: a missing dir, or a file
// where it was expected, has no entries.
func entriesOf(dir string) ([]os.DirEntry, error) {
	entries, err := diskfile.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("check %s: %w", dir, err)
	}
	return entries, nil
}

// CheckSpecial refuses any entry of dir that is a FIFO, a socket or a
// device: opened by flower or by a tool the harness runs (git reads every
// .gitignore it meets), such a thing blocks or answers. Links and files are
// passed over; a missing dir is fine.
func CheckSpecial(dir string) error {
	return (*Seen)(nil).CheckSpecial(dir)
}

// CheckSpecial is the package's CheckSpecial.
func (s *Seen) CheckSpecial(dir string) error {
	entries, err := s.entriesOf(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if t := e.Type(); t&(fs.ModeNamedPipe|fs.ModeSocket|fs.ModeDevice|fs.ModeCharDevice|fs.ModeIrregular) != 0 {
			p := filepath.Join(dir, e.Name())
			if fi, err := s.lstat(p); err == nil {
				return refuse(p, fi, File)
			}
		}
	}
	return nil
}

// Open opens path for reading without following a link at its last
// component and without blocking on a FIFO, and makes sure it is a regular
// file. Combine it with Check for the components above.
func Open(path string) (*os.File, error) {
	f, err := diskfile.Open(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, syscall.ELOOP) {
			if fi, lerr := os.Lstat(path); lerr == nil {
				return nil, refuse(path, fi, File)
			}
		}
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, refuse(path, fi, File)
	}
	return f, nil
}

// ReadFile reads the regular file at path, refusing a link (at any
// component below anchor), anything not a regular file, and a file of more
// than limit bytes (an *Error wrapping ErrTooLarge that names the cap and
// what). what names the file for that message ("the handoff", "a
// manifest"). A missing file gives an error wrapping fs.ErrNotExist.
func ReadFile(anchor, path string, limit int64, what string) ([]byte, error) {
	if err := Check(anchor, path, File); err != nil {
		return nil, err
	}
	f, err := Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.Size() > limit {
		return nil, tooLarge(path, fi.Size(), limit, what)
	}
	return readCapped(f, path, limit, what)
}

// readCapped reads f to its end, refusing past limit bytes: the size can
// change under us, so never more than the cap allows is read.
func readCapped(f io.Reader, path string, limit int64, what string) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, tooLarge(path, int64(len(b)), limit, what)
	}
	return b, nil
}

func tooLarge(path string, size, limit int64, what string) *Error {
	return &Error{Path: path, Err: ErrTooLarge,
		Problem: fmt.Sprintf("holds %s, over the cap of %s for %s", Size(size), Size(limit), what),
		Fix:     "make it smaller (see «Input caps» in flower's docs/reference.md)"}
}

// Size writes n bytes for a person: 1.5 MiB, 300 KiB, 12 bytes.
func Size(n int64) string {
	switch {
	case n >= 1<<20:
		return trimZero(fmt.Sprintf("%.1f", float64(n)/(1<<20))) + " MiB"
	case n >= 1<<10:
		return trimZero(fmt.Sprintf("%.1f", float64(n)/(1<<10))) + " KiB"
	}
	return fmt.Sprintf("%d bytes", n)
}

func trimZero(s string) string { return strings.TrimSuffix(s, ".0") }

// OpenAppend opens (creating it with perm if need be) the file at path for
// appending, refusing a link at its last component, anything not a regular
// file and a file with a second hard link. Combine it with Check for the
// components above.
func OpenAppend(path string, perm os.FileMode) (*os.File, error) {
	return OpenOwn(path, os.O_WRONLY|os.O_APPEND, perm)
}

// OpenOwn opens (creating it with perm if need be) a file of flower's at
// path with flag (os.O_RDWR, os.O_WRONLY|os.O_APPEND …), as OpenAppend
// does: never through a link at its last component, never blocking, and
// only a regular file with one name. Nothing is truncated before the
// checks. Combine it with Check for the components above.
func OpenOwn(path string, flag int, perm os.FileMode) (*os.File, error) {
	f, err := diskfile.Open(path, flag|os.O_CREATE|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_CLOEXEC, perm)
	if err != nil {
		if errors.Is(err, syscall.ELOOP) {
			if fi, lerr := os.Lstat(path); lerr == nil {
				return nil, refuse(path, fi, File)
			}
		}
		return nil, err
	}
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = refuse(path, fi, File)
	}
	if err == nil {
		err = Single(path, fi)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// MkdirAll makes every missing folder of path below anchor, one at a time,
// refusing a component that is not a real directory (a link to one
// included) instead of following it.
func MkdirAll(anchor, path string, perm os.FileMode) error {
	anchor, path = filepath.Clean(anchor), filepath.Clean(path)
	rel, err := filepath.Rel(anchor, path)
	if err != nil || !filepath.IsLocal(rel) {
		if path == anchor {
			return nil
		}
		if err := (*Seen)(nil).checkOne(path, Dir); err != nil {
			return err
		}
		return os.MkdirAll(path, perm)
	}
	// The anchor is the person's folder: made as asked, links and all.
	if err := os.MkdirAll(anchor, perm); err != nil {
		return err
	}
	cur := anchor
	for _, part := range strings.Split(rel, string(filepath.Separator)) {
		cur = filepath.Join(cur, part)
		err := os.Mkdir(cur, perm)
		if err == nil || errors.Is(err, fs.ErrExist) {
			fi, lerr := os.Lstat(cur)
			if lerr != nil {
				return lerr
			}
			if !fi.IsDir() {
				return refuse(cur, fi, Dir)
			}
			continue
		}
		return err
	}
	return nil
}

// ReadGiven reads a file a person named (a task file, a handoff to send):
// it is theirs, so a link is followed, but only a regular file is read,
// never blocking on a FIFO, and never more than limit bytes (an *Error
// wrapping ErrTooLarge past it).
func ReadGiven(path string, limit int64, what string) ([]byte, error) {
	f, err := diskfile.Open(path, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	if fi.Size() > limit {
		return nil, tooLarge(path, fi.Size(), limit, what)
	}
	return readCapped(f, path, limit, what)
}

// ReadGivenIn is ReadGiven for a file a person named by a path that may
// lie in workspace, someone else's folder: a link there that takes the
// path out of workspace (a committed task.md → ~/.ssh/id_rsa) is the
// repository's choice, not the person's, and is refused with an *Error
// that says to name the file it points to instead. A path the person gave
// that lies outside workspace is theirs and is read as ReadGiven reads it.
func ReadGivenIn(workspace, path string, limit int64, what string) ([]byte, error) {
	ws, err := filepath.Abs(workspace)
	if err != nil {
		return nil, err
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	if !under(ws, abs) {
		return ReadGiven(path, limit, what)
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return nil, err
	}
	realWS, err := filepath.EvalSymlinks(ws)
	if err != nil {
		return nil, err
	}
	if !under(realWS, real) {
		return nil, &Error{Path: path, Err: ErrUnsafe,
			Problem: "lies in the workspace but leads, through a link there, to " + real + ", outside it",
			Fix: "flower reads a file outside the workspace only when you name it yourself: if you mean that file, give its own path (-f " +
				quote(real) + "); else remove the link"}
	}
	return ReadGiven(real, limit, what)
}

// under reports whether path is dir or lies below it (both clean and
// absolute).
func under(dir, path string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && filepath.IsLocal(rel) || path == dir
}
