package supervisor

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"time"

	"github.com/flowerhq/flower/handoff"
	"github.com/flowerhq/flower/manifest"
	"github.com/flowerhq/flower/safefile"
	"github.com/flowerhq/flower/workbench"
)

// checkStep checks flower's territory for step name before anything reads
// or writes there (DESIGN.md «Territory»): the workbench's folders, the
// step's notes files, the run dir and its files.
func (rt *Runtime) checkStep(name string) error {
	return workbench.Territory{Workspace: rt.opts.Workspace, Dir: rt.opts.WorkbenchDir,
		RunDir: rt.opts.RunDir, Step: name}.Check()
}

// ErrUnknownNote is wrapped by the *UnknownNoteError of a notes file no
// manifest of the workbench recorded.
var ErrUnknownNote = errors.New("a notes file flower did not write")

// UnknownNoteError refuses to feed a successor a handoff or task file that
// neither flower nor the person is known to have written (DESIGN.md «Known
// documents»): no manifest of this workbench records its path or its
// sha256, so it may have come with the repository.
type UnknownNoteError struct {
	Path string
	What string // "handoff file", "task file"
	Flag string // the flag that vouches for it
}

// Error describes the refusal; it is what a person sees.
func (e *UnknownNoteError) Error() string {
	return fmt.Sprintf("%s %s was not written by flower: no manifest of this workbench records its path or its sha256, so it may have come with the repository; nothing was started. Read it, and if you vouch for it run again with %s",
		e.What, e.Path, e.Flag)
}

// Unwrap makes errors.Is(err, ErrUnknownNote) true.
func (e *UnknownNoteError) Unwrap() error { return ErrUnknownNote }

// TrustNotesFlag is the command-line flag that sets Options.TrustNotes.
const TrustNotesFlag = "--trust-notes"

// notesRecords is what the manifests of a workbench record of its notes
// files: their paths and the sha256 of every version written or launched.
type notesRecords struct {
	paths, digests map[string]bool
}

// recordedNotes gathers the records of this run's manifest and of every
// manifest in the workbench's runs folder that belongs there (a foreign or
// unreadable one records nothing).
func (rt *Runtime) recordedNotes() notesRecords {
	r := notesRecords{paths: map[string]bool{}, digests: map[string]bool{}}
	add := func(m *manifest.Manifest) {
		for _, st := range m.Steps {
			r.path(st.TaskPath)
			r.path(st.HandoffPath)
			r.digest(st.TaskSHA256)
			for _, g := range st.Generations {
				if h := g.Handoff; h != nil {
					r.path(h.Path)
					r.path(h.TaskPath)
					r.digest(h.SHA256Written)
					r.digest(h.SHA256Launched)
					r.digest(h.TaskSHA256)
				}
			}
		}
	}
	add(rt.m)
	for _, d := range workbench.RunDirs(rt.opts.WorkbenchDir) {
		if d == rt.opts.RunDir {
			continue
		}
		if m, err := manifest.LoadBound(d); err == nil {
			add(m)
		}
	}
	return r
}

func (r notesRecords) path(p string) {
	if p != "" {
		r.paths[filepath.Clean(p)] = true
	}
}

func (r notesRecords) digest(d string) {
	if d != "" {
		r.digests[d] = true
	}
}

// noteVerdict is what the records say of a notes file's contents.
type noteVerdict int

const (
	noteKnown   noteVerdict = iota // a version flower wrote or launched
	noteEdited                     // flower's file, changed since: a person's edit
	noteUnknown                    // neither its path nor its contents are recorded
)

func (r notesRecords) verdict(path string, data []byte) noteVerdict {
	switch {
	case r.digests[handoff.Digest(data)]:
		return noteKnown
	case r.paths[filepath.Clean(path)]:
		return noteEdited
	}
	return noteUnknown
}

// vouch decides whether the notes file at path, holding data, may reach a
// successor (DESIGN.md «Known documents»): a version recorded by a manifest
// of this workbench may; an edit of a file flower wrote there may, and is
// said; a file no manifest knows is refused with an *UnknownNoteError
// unless the person vouched for it (Options.TrustNotes), which is said too.
func (s *stepRun) vouch(what, path string, data []byte) error {
	rt, st := s.rt, s.st
	switch rt.recordedNotes().verdict(path, data) {
	case noteKnown:
		return nil
	case noteEdited:
		s.note(fmt.Sprintf("%s %s was changed since flower wrote it (sha256 %s): taken as a person's edit", what, path, handoff.Digest(data)[:16]))
		return nil
	}
	if !rt.opts.TrustNotes {
		return &UnknownNoteError{Path: path, What: what, Flag: TrustNotesFlag}
	}
	msg := fmt.Sprintf("%s %s, which no manifest of this workbench records (sha256 %s), is used on the person's word (%s)", what, path, handoff.Digest(data)[:16], TrustNotesFlag)
	if st != nil {
		st.AddError(msg)
	} else {
		s.vouched = append(s.vouched, msg)
	}
	s.note(msg)
	return nil
}

func (s *stepRun) note(msg string) {
	name := ""
	if s.st != nil {
		name = s.st.Name
	}
	s.log.Warn(msg)
	s.rt.emit(Event{Kind: KindNotice, Step: name, Text: msg})
}

// vouchTask checks the task file a successor of step st would read when
// the step never froze its task in this run (a step rerun into being reads
// the file an earlier run froze). A step that froze its task reads the
// recorded path, which a bound manifest keeps in the workbench.
func (s *stepRun) vouchTask(name string) error {
	st := s.rt.m.Step(name)
	if st != nil && (st.TaskPath != "" || st.TaskSHA256 != "") {
		return nil
	}
	path := s.rt.wb.TaskPath(name)
	if path == "" {
		return nil
	}
	data, err := workbench.ReadNote(path, workbench.MaxTask, "a task")
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	return s.vouch("task file", path, data)
}

// setAsideUnknown archives the step's handoff and task files when no
// manifest of the workbench records them: a new run starts from its own
// task, and nothing a repository shipped under flower's names is left for
// a later rerun or continue to feed a successor (DESIGN.md «Known
// documents»). What it does is said.
func (s *stepRun) setAsideUnknown(name string) error {
	rt := s.rt
	if rt.wb == nil {
		return nil
	}
	var rec *notesRecords
	for _, f := range []struct {
		what, path string
		limit      int
		aside      func(string, time.Time) (string, error)
	}{
		{"handoff file", rt.wb.HandoffPath(name), workbench.MaxHandoff, rt.wb.SetAsideHandoff},
		{"task file", rt.wb.TaskPath(name), workbench.MaxTask, rt.wb.SetAsideTask},
	} {
		data, err := workbench.ReadNote(f.path, f.limit, "a "+f.what)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			continue
		case errors.Is(err, safefile.ErrTooLarge):
			// Not read by this run; a rerun or continue refuses it by its size.
			continue
		case err != nil:
			return err
		default:
			if rec == nil {
				r := rt.recordedNotes()
				rec = &r
			}
			if rec.verdict(f.path, data) != noteUnknown {
				continue
			}
		}
		dst, err := f.aside(name, rt.clock.Now())
		if err != nil {
			return fmt.Errorf("set aside %s: %w", f.path, err)
		}
		s.note(fmt.Sprintf("%s %s was not written by flower (no manifest of this workbench records it): moved to %s, and this run does not read it", f.what, f.path, dst))
	}
	return nil
}
