package supervisor

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"

	"github.com/flowerhq/flower/handoff"
	"github.com/flowerhq/flower/safefile"
	"github.com/flowerhq/flower/trust"
	"github.com/flowerhq/flower/workbench"
)

// checkStep checks flower's territory for step name before anything reads
// or writes there (DESIGN.md «Territory»): the workbench's folders, the
// step's notes files, the run dir and its files.
func (rt *Runtime) checkStep(name string) error {
	return workbench.Territory{Workspace: rt.opts.Workspace, Dir: rt.opts.WorkbenchDir,
		RunDir: rt.opts.RunDir, Step: name}.Check()
}

// ErrUnknownNote is wrapped by the *UnknownNoteError of a run dir or notes
// file flower holds no receipt of.
var ErrUnknownNote = errors.New("a run or notes file flower did not write")

// UnknownNoteError refuses to pick up a run dir, or to feed a successor a
// handoff or task file, that neither flower nor the person is known to
// have written (DESIGN.md «Known documents»): the trust store outside the
// workspace holds no receipt of it, so it may have come with the
// repository, whatever its manifest says.
type UnknownNoteError struct {
	Path string
	What string // "run dir", "handoff file", "task file"
	Flag string // the flag that vouches for it
}

// Error describes the refusal; it is what a person sees.
func (e *UnknownNoteError) Error() string {
	return fmt.Sprintf("%s %s was not written by flower on this machine: its trust store holds no receipt of it, so it may have come with the repository, whatever its manifest says; nothing was started. Read it, and if you vouch for it run again with %s (or adopt the workspace's runs with `flower trust`)",
		e.What, e.Path, e.Flag)
}

// Unwrap makes errors.Is(err, ErrUnknownNote) true.
func (e *UnknownNoteError) Unwrap() error { return ErrUnknownNote }

// TrustNotesFlag is the command-line flag that sets Options.TrustNotes.
const TrustNotesFlag = "--trust-notes"

// openTrust sets the runtime's trust store: the one given, else the store
// of flower's own environment. Without one nothing is known (every run dir
// and notes file needs the person's word), and that is said once.
func (rt *Runtime) openTrust() {
	rt.trust = rt.opts.Trust
	if rt.trust == nil {
		var err error
		if rt.trust, err = trust.Open(os.Environ()); err != nil {
			msg := fmt.Sprintf("no trust store (%v): what flower writes gets no receipt, and a later continue or rerun needs %s", err, TrustNotesFlag)
			rt.log.Warn(msg)
			rt.emit(Event{Kind: KindNotice, Text: msg})
		}
	}
	if rt.wb != nil {
		rt.wb.Written = rt.receipt
	}
}

// receipt records in the trust store that flower wrote data at path (a
// nil data: the run dir path). A receipt that cannot be written is logged:
// the run goes on, and a later continue or rerun asks for the person's word.
func (rt *Runtime) receipt(what, path string, data []byte) {
	if rt.trust == nil {
		return
	}
	if err := rt.trust.Record(what, path, data); err != nil {
		rt.log.Warn("no receipt in the trust store", "what", what, "path", path, "err", err)
	}
}

// noteVerdict is what the trust store's receipts say of data at path.
func (rt *Runtime) noteVerdict(path string, data []byte) trust.Verdict {
	if rt.trust == nil {
		return trust.Unknown
	}
	return rt.trust.Check(path, data)
}

// vouchRun refuses to pick up a run dir, loaded from disk, that the trust
// store holds no receipt of, unless the person vouched for it, which
// adopts it (DESIGN.md «Known documents»).
func (s *stepRun) vouchRun() error {
	rt := s.rt
	if !rt.loaded || rt.noteVerdict(rt.opts.RunDir, nil) == trust.Known {
		return nil
	}
	if !rt.opts.TrustNotes {
		return &UnknownNoteError{Path: rt.opts.RunDir, What: "run dir", Flag: TrustNotesFlag}
	}
	rt.receipt("run dir", rt.opts.RunDir, nil)
	s.vouched = append(s.vouched, fmt.Sprintf("run dir %s, of which flower held no receipt, is adopted on the person's word (%s)", rt.opts.RunDir, TrustNotesFlag))
	return nil
}

// vouch decides whether the notes file at path, holding data, may reach a
// successor (DESIGN.md «Known documents»): a version flower holds a
// receipt of may; an edit of a file flower wrote there may, and is said; a
// file with no receipt is refused with an *UnknownNoteError unless the
// person vouched for it (Options.TrustNotes), which adopts it and is said.
func (s *stepRun) vouch(what, path string, data []byte) error {
	rt, st := s.rt, s.st
	switch rt.noteVerdict(path, data) {
	case trust.Known:
		return nil
	case trust.Edited:
		s.note(fmt.Sprintf("%s %s was changed since flower wrote it (sha256 %s): taken as a person's edit", what, path, handoff.Digest(data)[:16]))
		return nil
	}
	if !rt.opts.TrustNotes {
		return &UnknownNoteError{Path: path, What: what, Flag: TrustNotesFlag}
	}
	rt.receipt(what, path, data)
	msg := fmt.Sprintf("%s %s, of which flower held no receipt (sha256 %s), is used on the person's word (%s)", what, path, handoff.Digest(data)[:16], TrustNotesFlag)
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

// vouchTask checks the task file a successor of step name would read.
func (s *stepRun) vouchTask(name string) error {
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

// setAsideUnknown archives the step's handoff and task files when flower
// holds no receipt of them: a new run starts from its own
// task, and nothing a repository shipped under flower's names is left for
// a later rerun or continue to feed a successor (DESIGN.md «Known
// documents»). What it does is said.
func (s *stepRun) setAsideUnknown(name string) error {
	rt := s.rt
	if rt.wb == nil {
		return nil
	}
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
			if rt.noteVerdict(f.path, data) != trust.Unknown {
				continue
			}
		}
		dst, err := f.aside(name, rt.clock.Now())
		if err != nil {
			return fmt.Errorf("set aside %s: %w", f.path, err)
		}
		s.note(fmt.Sprintf("%s %s was not written by flower (flower holds no receipt of it): moved to %s, and this run does not read it", f.what, f.path, dst))
	}
	return nil
}
