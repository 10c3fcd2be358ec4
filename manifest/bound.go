package manifest

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/flowerhq/flower/workbench"
)

// ErrForeign is wrapped by the *ForeignError of a manifest that does not
// belong where it was found.
var ErrForeign = errors.New("manifest does not belong here")

// ForeignError refuses a manifest that names another place than the one it
// was loaded from (DESIGN.md «Territory»): a run dir copied or planted
// from elsewhere must not send flower's writes, or the harness, there.
type ForeignError struct {
	Path    string // the manifest's file
	Field   string // run_dir, workspace, or the step field holding a path
	Records string // what the file says ("" when the field is missing)
	Want    string // what it must say to belong here
}

// Error describes the refusal; it is what a person sees.
func (e *ForeignError) Error() string {
	if e.Records == "" {
		return fmt.Sprintf("manifest %s records no %s, so it cannot be bound to its run dir: it was not written by flower, or was damaged; start a new run (or give --run-dir another run)", e.Path, e.Field)
	}
	return fmt.Sprintf("manifest %s names %s %s, not %s: it belongs to another place (copied or planted here); flower uses a run dir only where it was made, so start a new run (or give --run-dir another run)", e.Path, e.Field, e.Records, e.Want)
}

// Unwrap makes errors.Is(err, ErrForeign) true.
func (e *ForeignError) Unwrap() error { return ErrForeign }

// LoadBound is Load for the run dir runDir (absolute), and checks that the
// manifest belongs there: its run_dir is runDir; its workspace is the one
// that holds runDir when runDir lies in a workbench
// (<workspace>/.flower/runs/<name>), else an absolute path; and every task
// and handoff path it records lies in that workspace's .flower/notes. A
// manifest that says otherwise gives a *ForeignError, one without run_dir
// too.
func LoadBound(runDir string) (*Manifest, error) {
	runDir = filepath.Clean(runDir)
	path := Path(runDir)
	m, err := Load(path)
	if err != nil {
		return nil, err
	}
	if err := m.bound(path, runDir); err != nil {
		return nil, err
	}
	// From here on flower writes where it loaded the file from, by the
	// path it found it at.
	m.RunDir = runDir
	if ws := workbench.HoldingWorkspace(runDir); ws != "" {
		m.Workspace = ws
	}
	return m, nil
}

func (m *Manifest) bound(path, runDir string) error {
	foreign := func(field, records, want string) error {
		return &ForeignError{Path: path, Field: field, Records: records, Want: want}
	}
	switch {
	case m.RunDir == "":
		return foreign("run_dir", "", runDir)
	case !samePath(m.RunDir, runDir):
		return foreign("run_dir", m.RunDir, runDir)
	}
	ws := workbench.HoldingWorkspace(runDir)
	switch {
	case m.Workspace == "":
		return foreign("workspace", "", firstNonEmpty(ws, "an absolute path"))
	case ws != "" && !samePath(m.Workspace, ws):
		return foreign("workspace", m.Workspace, ws)
	case !filepath.IsAbs(m.Workspace):
		return foreign("workspace", m.Workspace, "an absolute path")
	}
	notes := workbench.NotesDir(workbench.DirOf(filepath.Clean(m.Workspace)))
	in := func(field, p string) error {
		if p == "" || filepath.IsAbs(p) && samePath(filepath.Dir(p), notes) {
			return nil
		}
		return foreign(field, p, "a file in "+notes)
	}
	for _, st := range m.Steps {
		if err := in(fmt.Sprintf("task_path of step %q", st.Name), st.TaskPath); err != nil {
			return err
		}
		for _, g := range st.Generations {
			if h := g.Handoff; h != nil {
				if err := in(fmt.Sprintf("handoff path of step %q generation %d", st.Name, g.N), h.Path); err != nil {
					return err
				}
				if err := in(fmt.Sprintf("task_path of step %q generation %d", st.Name, g.N), h.TaskPath); err != nil {
					return err
				}
			}
		}
		if err := in(fmt.Sprintf("handoff_path of step %q", st.Name), st.HandoffPath); err != nil {
			return err
		}
	}
	return nil
}

// samePath reports whether a and b name the same folder: the same clean
// path, or two paths to one directory (a workspace reached through a link
// of the person's, say, -C /home/me/proj and -C /data/proj).
func samePath(a, b string) bool {
	a, b = filepath.Clean(a), filepath.Clean(b)
	if a == b {
		return true
	}
	fa, err := os.Stat(a)
	if err != nil {
		return false
	}
	fb, err := os.Stat(b)
	return err == nil && os.SameFile(fa, fb)
}

func firstNonEmpty(a ...string) string {
	for _, s := range a {
		if s != "" {
			return s
		}
	}
	return ""
}
