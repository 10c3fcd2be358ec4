// Package trust owns what flower believes about a workspace, kept outside
// it, in the person's own state directory (DESIGN.md «Trust store»): which
// workspaces the person trusts, with the sha256 of each file there that can
// run a command or set the harness's environment, and a receipt of every
// run dir, handoff and task file flower itself wrote. A repository can
// write anything inside the workspace, so nothing there vouches for itself:
// a file that changed since it was trusted is untrusted again, and a run,
// handoff or task file with no receipt is the repository's text.
package trust

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"syscall"
	"time"

	"github.com/flowerhq/flower/atomicfile"
	"github.com/flowerhq/flower/diskfile"
	"github.com/flowerhq/flower/jsonenc"
)

// Store is the trust store: a folder only the person can write.
type Store struct {
	dir string
}

// ErrNoStore is wrapped when no state directory can be found (neither
// XDG_STATE_HOME nor HOME is set).
var ErrNoStore = errors.New("no state directory for flower's trust store")

// Dir is where the store lives for environment env: $XDG_STATE_HOME/flower,
// else $HOME/.local/state/flower. A relative XDG_STATE_HOME is ignored, as
// the XDG spec says.
func Dir(env []string) (string, error) {
	look := func(k string) string {
		v := ""
		for _, kv := range env {
			if name, val, ok := cut(kv); ok && name == k {
				v = val // the last entry wins, as in a child's environment
			}
		}
		return v
	}
	if x := look("XDG_STATE_HOME"); filepath.IsAbs(x) {
		return filepath.Join(x, "flower"), nil
	}
	if h := look("HOME"); filepath.IsAbs(h) {
		return filepath.Join(h, ".local", "state", "flower"), nil
	}
	return "", fmt.Errorf("%w: set XDG_STATE_HOME or HOME", ErrNoStore)
}

func cut(kv string) (string, string, bool) {
	for i := 0; i < len(kv); i++ {
		if kv[i] == '=' {
			return kv[:i], kv[i+1:], true
		}
	}
	return "", "", false
}

// Open opens (making it, mode 0700) the store for environment env. A store
// folder another user owns, or that its group or others can write, is
// refused with a line that says how to fix it, as ssh refuses such a
// ~/.ssh: whoever can write there could vouch for any workspace.
func Open(env []string) (*Store, error) {
	dir, err := Dir(env)
	if err != nil {
		return nil, err
	}
	return OpenDir(dir)
}

// OpenDir is Open for the store folder dir. Its subfolders, which hold
// the records, are checked as the folder itself is: a receipts folder that
// is a link to a folder anyone can write would let anyone vouch for a file.
func OpenDir(dir string) (*Store, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("trust store %s: %w", dir, err)
	}
	if err := ownFolder(dir, "trust store "+dir); err != nil {
		return nil, err
	}
	for _, sub := range []string{workspacesDir, receiptsDir} {
		p := filepath.Join(dir, sub)
		if err := os.Mkdir(p, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
			return nil, fmt.Errorf("trust store %s: %w", dir, err)
		}
		if err := ownFolder(p, "trust store folder "+p); err != nil {
			return nil, err
		}
	}
	return &Store{dir: dir}, nil
}

// ownFolder refuses a folder of the store that is not a real directory of
// this user's that only they can write; what names it in the refusal.
func ownFolder(path, what string) error {
	fi, err := os.Lstat(path)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s is not a directory (a link or a file is refused): remove it, and flower makes its own", what)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Geteuid() {
		return fmt.Errorf("%s is owned by uid %d, not you (uid %d): nothing it says is believed; remove it, and flower makes its own", what, st.Uid, os.Geteuid())
	}
	if fi.Mode().Perm()&0o022 != 0 {
		return fmt.Errorf("%s can be written by others (mode %04o): nothing it says is believed; run chmod 700 %s", what, fi.Mode().Perm(), path)
	}
	return nil
}

// Path is the store's folder.
func (s *Store) Path() string { return s.dir }

const (
	workspacesDir = "workspaces"
	receiptsDir   = "receipts"
	lockName      = "lock"
	// maxDigests bounds the versions a receipt keeps of one path: the
	// newest are kept.
	maxDigests = 64
)

// Digest is the hex sha256 of data.
func Digest(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// Canonical is the form a path is recorded in: absolute, clean, with the
// links of its folder resolved (the last component is kept as named, so a
// link there is recorded as the link).
func Canonical(path string) string {
	abs, err := filepath.Abs(path)
	if err != nil {
		return filepath.Clean(path)
	}
	if dir, err := filepath.EvalSymlinks(filepath.Dir(abs)); err == nil {
		return filepath.Join(dir, filepath.Base(abs))
	}
	return abs
}

// recordFile is the file that holds the record of key in sub.
func (s *Store) recordFile(sub, key string) string {
	sum := sha256.Sum256([]byte(key))
	return filepath.Join(s.dir, sub, hex.EncodeToString(sum[:16])+".json")
}

// update reads the record at file into v (left as it is when there is
// none), lets change alter it, and writes it back durably, all under the
// store's lock: two flowers recording at once lose neither record.
func (s *Store) update(file string, v any, change func() (remove bool)) error {
	unlock, err := s.lock()
	if err != nil {
		return err
	}
	defer unlock()
	if err := s.read(file, v); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if change() {
		if err := os.Remove(file); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("trust store: %w", err)
		}
		return nil
	}
	var b []byte
	if a, ok := v.(appender); ok {
		b, err = a.appendJSON(nil)
	} else {
		b, err = json.Marshal(v)
	}
	if err != nil {
		return err
	}
	if err := atomicfile.WriteFile(file, append(b, '\n'), 0o600); err != nil {
		return fmt.Errorf("trust store: %w", err)
	}
	return nil
}

// maxRecord caps a record file that is read.
const maxRecord = 1 << 20

// read reads the record at file into v. A record is opened without
// following a link (and without blocking on a FIFO), and only a regular
// file of this user's that others cannot write is believed.
func (s *Store) read(file string, v any) error {
	f, err := diskfile.Open(file, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		if errors.Is(err, syscall.ELOOP) {
			return fmt.Errorf("trust store: %s is a link, not a record: nothing it says is believed", file)
		}
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("trust store: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("trust store: %s is not a regular file: nothing it says is believed", file)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Geteuid() {
		return fmt.Errorf("trust store: %s is owned by uid %d, not you: nothing it says is believed", file, st.Uid)
	}
	if fi.Mode().Perm()&0o022 != 0 {
		return fmt.Errorf("trust store: %s can be written by others (mode %04o): nothing it says is believed", file, fi.Mode().Perm())
	}
	if fi.Size() > maxRecord {
		return fmt.Errorf("trust store: %s is over %d bytes", file, maxRecord)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxRecord+1))
	if err != nil {
		return fmt.Errorf("trust store: %w", err)
	}
	if len(b) > maxRecord {
		return fmt.Errorf("trust store: %s is over %d bytes", file, maxRecord)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("trust store: %s is corrupt: %w", file, err)
	}
	return nil
}

// lock takes the store's lock (flock(2) on its lock file).
func (s *Store) lock() (func(), error) {
	f, err := diskfile.Open(filepath.Join(s.dir, lockName), os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("trust store: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("trust store: lock: %w", err)
	}
	return func() { f.Close() }, nil
}

// Receipt is what the store knows flower wrote at one path.
type Receipt struct {
	Path string `json:"path"`
	// What names it: "run dir", "handoff file", "task file".
	What string `json:"what"`
	// SHA256 are the versions flower wrote or the person adopted, oldest
	// first; none for a run dir, whose manifest is its book, not its proof.
	SHA256 []string  `json:"sha256"`
	At     time.Time `json:"at"`
}

// appender is a record that writes its own JSON: a receipt is written at
// every write of a notes file, so without encoding/json's reflection.
type appender interface {
	appendJSON(b []byte) ([]byte, error)
}

// appendJSON is encoding/json's Marshal of r, by jsonenc (its test holds
// the two together).
func (r *Receipt) appendJSON(b []byte) ([]byte, error) {
	b = append(b, `{"path":`...)
	b = jsonenc.AppendString(b, r.Path)
	b = append(b, `,"what":`...)
	b = jsonenc.AppendString(b, r.What)
	b = append(b, `,"sha256":`...)
	b, _ = jsonenc.AppendValue(b, r.SHA256)
	b = append(b, `,"at":`...)
	b, err := jsonenc.AppendTime(b, r.At)
	return append(b, '}'), err
}

// Record adds a receipt: flower wrote (or the person adopted) data at path.
// A nil data records the path alone (a run dir).
func (s *Store) Record(what, path string, data []byte) error {
	path = Canonical(path)
	var r Receipt
	return s.update(s.recordFile(receiptsDir, path), &r, func() bool {
		if r.Path != path {
			r = Receipt{Path: path}
		}
		r.What, r.At = what, time.Now().UTC()
		if data != nil {
			d := Digest(data)
			if n := len(r.SHA256); n == 0 || r.SHA256[n-1] != d {
				r.SHA256 = append(r.SHA256, d)
			}
			if len(r.SHA256) > maxDigests {
				r.SHA256 = r.SHA256[len(r.SHA256)-maxDigests:]
			}
		}
		return false
	})
}

// Verdict is what the receipts say of a file's contents.
type Verdict int

const (
	// Unknown: no receipt names the path: the repository's text.
	Unknown Verdict = iota
	// Known: flower wrote (or the person adopted) this very version.
	Known
	// Edited: flower wrote a file at this path, and it changed since on
	// this machine: the person's edit.
	Edited
)

// Check says what the receipts know of data at path; a nil data asks about
// the path alone (a run dir).
func (s *Store) Check(path string, data []byte) Verdict {
	path = Canonical(path)
	var r Receipt
	if err := s.read(s.recordFile(receiptsDir, path), &r); err != nil || r.Path != path {
		return Unknown
	}
	if data == nil {
		return Known
	}
	d := Digest(data)
	for _, x := range r.SHA256 {
		if x == d {
			return Known
		}
	}
	return Edited
}

// Workspace is the person's trust in one workspace: the sha256 of each of
// its files that can run a command or set the harness's environment, as
// they were when trusted (paths relative to the workspace).
type Workspace struct {
	Path  string            `json:"workspace"`
	Files map[string]string `json:"files"`
	At    time.Time         `json:"at"`
}

// Trust records that the person trusts ws with files as they are.
func (s *Store) Trust(ws string, files []File) error {
	ws = Canonical(ws)
	var w Workspace
	return s.update(s.recordFile(workspacesDir, ws), &w, func() bool {
		w = Workspace{Path: ws, Files: map[string]string{}, At: time.Now().UTC()}
		for _, f := range files {
			w.Files[f.Rel] = f.SHA256
		}
		return false
	})
}

// Revoke forgets the person's trust in ws; trusting nothing is no error.
func (s *Store) Revoke(ws string) error {
	ws = Canonical(ws)
	var w Workspace
	return s.update(s.recordFile(workspacesDir, ws), &w, func() bool { return true })
}

// Trusted returns the files among files that are not trusted as they are
// now: never trusted, or changed since (as with direnv, a change undoes the
// trust). Sorted by path.
func (s *Store) Trusted(ws string, files []File) (untrusted []File) {
	ws = Canonical(ws)
	var w Workspace
	if err := s.read(s.recordFile(workspacesDir, ws), &w); err != nil || w.Path != ws {
		w.Files = nil
	}
	for _, f := range files {
		if w.Files[f.Rel] != f.SHA256 {
			untrusted = append(untrusted, f)
		}
	}
	sort.Slice(untrusted, func(i, j int) bool { return untrusted[i].Rel < untrusted[j].Rel })
	return untrusted
}
