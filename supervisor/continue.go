package supervisor

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/flowerhq/flower/handoff"
	"github.com/flowerhq/flower/handoffwriter"
	"github.com/flowerhq/flower/manifest"
	"github.com/flowerhq/flower/safefile"
	"github.com/flowerhq/flower/workbench"
)

// Errors of Continue and Rerun a caller can branch on. A handoff file that
// cannot start a generation gives a *HandoffFileError.
var (
	ErrNoStep            = errors.New("no such step")
	ErrNothingToContinue = errors.New("nothing to continue")
	ErrNoWorkbench       = workbench.ErrNoWorkbench // the same error, so errors.Is holds across packages
	ErrBrokenHandoff     = errors.New("broken handoff file")
)

// ContinueMessage is what a resumed session is told when the person gave
// no message of their own.
const ContinueMessage = "flower was stopped before this task was finished. This is the same session, resumed: " +
	"continue the task from where you left off."

// Continue picks up a step recorded in the run directory's manifest (the
// seed's 継続) and supervises it to its end like RunStep, handoffs
// included; the generation count carries on.
//
//   - A step with a live session (the latest successor, DESIGN.md «Continuation»: never a
//     retired one) resumes it with --resume and is sent message
//     (ContinueMessage when empty). If the harness refuses to resume it, a
//     fresh generation starts from the step's handoff file when there is
//     one, else from the task, and the manifest says so.
//   - A step stopped after its handoff was recorded, or before its
//     successor reported a session, starts the successor from the handoff
//     file as it is on disk now.
//   - A step stopped in the middle of a handoff (cut or writing, its context
//     at the threshold) is not resumed: its successor starts from the
//     handoff file if that generation wrote it before it stopped, else from
//     a degraded handoff assembled from the recorded task.
//
// A succeeded step is continued only with a message. A handoff file that is
// needed but broken gives a *HandoffFileError and nothing starts.
func (rt *Runtime) Continue(ctx context.Context, name, message string) (*manifest.StepResult, error) {
	if rt.m.Step(name) == nil {
		return nil, rt.noStep(name)
	}
	s, err := rt.lockStep(name)
	if err != nil {
		return nil, err
	}
	defer s.unlock()
	s.st = rt.m.Step(name)
	if err := s.vouchRun(); err != nil {
		return s.st, err
	}
	if err := s.vouchTask(name); err != nil {
		return s.st, err
	}
	for _, msg := range s.vouched {
		s.note(msg)
		s.st.AddError(msg)
	}
	s.vouched = nil
	l, err := s.continuation(message)
	if err != nil {
		return s.st, err
	}
	st, err := s.run(ctx, l)
	return st, s.durable(err)
}

func (rt *Runtime) noStep(name string) error {
	var names []string
	for _, st := range rt.m.Steps {
		names = append(names, st.Name)
	}
	if len(names) == 0 {
		return fmt.Errorf("%w: %s has no steps", ErrNoStep, manifest.Path(rt.opts.RunDir))
	}
	return fmt.Errorf("%w: %s has no step %q (it has: %s)", ErrNoStep, manifest.Path(rt.opts.RunDir), name, strings.Join(names, ", "))
}

// continuation decides how Continue starts. Everything that can refuse
// (a broken handoff file) is checked before the manifest is touched.
func (s *stepRun) continuation(message string) (launch, error) {
	rt, st := s.rt, s.st
	if st.Status == manifest.StatusSucceeded && strings.TrimSpace(message) == "" {
		return launch{}, fmt.Errorf("%w: step %s succeeded; give a message to continue its session", ErrNothingToContinue, st.Name)
	}
	crashed := st.Status == manifest.StatusRunning
	if rt.windowSource == manifest.WindowFromModel && st.WindowSource == manifest.WindowFromHarness {
		// The harness said what the window is; a guess from the model
		// name must not undo that before it says so again.
		rt.adoptWindow(s.log, st, st.Window, "the manifest")
	}
	gen := st.Current()
	session := st.SessionID
	if slices.Contains(st.Retired, session) {
		session = "" // DESIGN.md «Continuation» holds even for a hand-edited manifest
	}
	begin := func() {
		s.begin()
		if crashed {
			s.noteError("flower stopped while this step was running (it was killed or crashed); continuing it")
		}
	}

	switch {
	case gen == nil:
		begin()
		task, _ := s.books().Task() // as a person may have edited it
		return launch{prompt: appendMessage(task, message), newGeneration: true, fallback: s.taskFallback}, nil

	case gen.Handoff != nil || session == "":
		return s.freshFromHandoff(gen, begin, message)

	case st.Status == manifest.StatusLimited && rt.policy.Enabled && gen.Context >= rt.policy.At(): // unattended: a step a limit stopped mid-handoff resumes its live session in the writing turn
		return s.resumeWriting(gen, session, begin), nil

	case rt.policy.Enabled && gen.Context >= rt.policy.At():
		// The generation's last result was at the threshold: it had been
		// cut for a handoff (its context is saved at each result).
		return s.recoverHandoff(gen, begin, message)

	case !gen.Answered && gen.NumTurns == 0 && s.lastHandoff() != nil:
		return s.resumeUnanswered(gen, session, message, begin)

	default:
		return s.resumeSession(gen, session, message, begin), nil
	}
}

// appendMessage returns prompt with message, a person's, after it; a
// blank message adds nothing.
func appendMessage(prompt, message string) string {
	if m := strings.TrimSpace(message); m != "" {
		return prompt + "\n\n" + m
	}
	return prompt
}

// noteError says msg as a notice and records it in the step's errors.
func (s *stepRun) noteError(msg string) {
	s.st.AddError(msg)
	s.note(msg)
}

// freshFromHandoff is how Continue starts a step stopped after a handoff
// was recorded, or before its latest generation gen's session said who it
// is: its successor (or it) starts fresh from the lineage's handoff, or
// from the task when nothing was handed off yet, message (a person's)
// after it. A generation that never had a session runs on; one whose
// session was set aside makes way for a new one.
func (s *stepRun) freshFromHandoff(gen *manifest.Generation, begin func(), message string) (launch, error) {
	prompt, from, err := s.handoffFallback()
	if err != nil {
		return launch{}, err
	}
	if s.lastHandoff() == nil {
		prompt, _ = s.books().Task() // nothing was done yet
		from = "the task"
	}
	begin()
	fresh := gen.Handoff != nil || gen.SessionID != ""
	n := gen.N
	if fresh {
		n++
	} else {
		gen.EndedAt = nil // this generation runs on
	}
	s.noteError(fmt.Sprintf("generation %d has no session to resume; it starts fresh from %s", n, from))
	return launch{prompt: appendMessage(prompt, message), newGeneration: fresh, fallback: s.handoffFallback}, nil
}

// resumeSession is how Continue resumes the live session of the step's
// latest generation gen, which runs on: it is sent message
// (ContinueMessage when empty). Should the harness refuse to resume it,
// the fresh session from the handoff gets a person's message too.
func (s *stepRun) resumeSession(gen *manifest.Generation, session, message string, begin func()) launch {
	begin()
	gen.EndedAt = nil // this generation runs on
	if message == "" {
		message = ContinueMessage
	}
	s.log.Info("resuming", "resume", session)
	fallback := func() (string, string, error) {
		prompt, from, err := s.handoffFallback()
		if message != ContinueMessage {
			prompt = appendMessage(prompt, message)
		}
		return prompt, from, err
	}
	return launch{prompt: message, resume: session, fallback: fallback}
}

// resumeUnanswered resumes a successor's session that was named but whose
// first request was never answered: flower stopped as its harness took
// the first prompt, which may not have reached its conversation. It is
// sent that prompt again, built from the handoff file as it is on disk
// now, with message, a person's, after it; a session that had it sees it
// twice. Should the harness refuse to resume it, a fresh session starts
// from the same prompt.
func (s *stepRun) resumeUnanswered(gen *manifest.Generation, session, message string, begin func()) (launch, error) {
	prompt, from, err := s.handoffFallback()
	if err != nil {
		return launch{}, err
	}
	prompt = appendMessage(prompt, message)
	begin()
	gen.EndedAt = nil // this generation runs on
	s.log.Info("resuming a session whose first request was never answered, with its first prompt again", "resume", session, "from", from)
	fallback := func() (string, string, error) { return prompt, from, nil }
	return launch{prompt: prompt, resume: session, fallback: fallback}, nil
}

// recoverHandoff finishes the handoff a stopped flower was in the middle of:
// the session had been cut at the threshold, so resuming it would only cut
// it again. If this generation's handoff reached the file, the successor
// starts from it (frozen again, the file as found kept in the archive);
// otherwise from a degraded handoff built from the task. message, a
// person's, follows its first prompt.
func (s *stepRun) recoverHandoff(gen *manifest.Generation, begin func(), message string) (launch, error) {
	rt, st := s.rt, s.st
	path := rt.wb.HandoffPath(st.Name)
	cut := handoff.Cut{Reason: manifest.ReasonThreshold, Context: gen.Context}
	if s.writtenBy(gen, path) {
		h, _, err := ReadHandoffFile(path)
		if err != nil {
			return launch{}, err
		}
		cut.Handoff, cut.Outcome = h, manifest.OutcomeWritten
		if h.IsDegraded() {
			cut.Why = "the handoff on disk is a degraded one"
		}
	} else {
		cut.Why = fmt.Sprintf("flower stopped during generation %d's handoff, before the handoff was written", gen.N)
	}
	begin()
	if cut.Handoff.Complete() {
		msg := fmt.Sprintf("flower stopped after generation %d wrote its handoff; the successor starts from %s", gen.N, path)
		s.log.Warn(msg)
		rt.emit(Event{Kind: KindNotice, Step: st.Name, Text: msg})
		st.AddError(msg)
	}
	f, err := s.books().Freeze(gen, cut)
	prompt, err := s.launch(gen, f, err)
	if err != nil {
		return launch{}, err
	}
	return launch{prompt: appendMessage(prompt, message), newGeneration: true, fallback: s.handoffFallback}, nil
}

// writtenBy reports whether the handoff file at path was written while gen
// ran (flower stopped between freezing it and recording it): it changed
// after the generation started and is not the handoff gen started from.
func (s *stepRun) writtenBy(gen *manifest.Generation, path string) bool {
	if path == "" {
		return false
	}
	fi, err := os.Lstat(path)
	if err != nil || fi.ModTime().Before(gen.StartedAt) {
		return false
	}
	if prev := s.lastHandoff(); prev != nil {
		b, err := readFile(path)
		if err != nil {
			return false
		}
		d := digest(b)
		return d != prev.SHA256Written && d != prev.SHA256Launched
	}
	return true
}

// lastHandoff returns the step's latest handoff record, nil if it never
// handed off.
func (s *stepRun) lastHandoff() *manifest.HandoffRecord {
	for i := len(s.st.Generations) - 1; i >= 0; i-- {
		if h := s.st.Generations[i].Handoff; h != nil {
			return h
		}
	}
	return nil
}

// taskFallback starts a fresh session of a step that has no handoff yet
// from its task, warning that a session worked on it before.
func (s *stepRun) taskFallback() (prompt, from string, err error) {
	task, _ := s.books().Task()
	return "A session that worked on this task before could not be resumed, so this is a fresh start: " +
		"check the workspace for work already done before you redo anything.\n\n" + task, "the task", nil
}

// handoffFallback starts a fresh session from the step's latest handoff,
// read from its file as it is on disk now (DESIGN.md «Launch from disk»). Without a handoff it
// falls back to the task; a handoff that was never on disk (no workbench)
// gives a degraded handoff from the task.
func (s *stepRun) handoffFallback() (prompt, from string, err error) {
	rec := s.lastHandoff()
	switch {
	case rec == nil:
		return s.taskFallback()
	case rec.Path == "":
		h := handoffwriter.Degraded(s.st.Name, s.st.Task, "the last handoff was not kept on disk (no workbench)")
		return s.books().SuccessorPrompt(h, rec), "a degraded handoff from the task", nil
	}
	h, b, err := ReadHandoffFile(rec.Path)
	if err != nil {
		return "", "", err
	}
	if err := s.vouch("handoff file", rec.Path, b); err != nil {
		return "", "", err
	}
	h.Step = s.st.Name
	return s.books().SuccessorPrompt(h, rec), rec.Path, nil
}

// resumeRefused handles a harness that will not resume the session (it does
// not know it): the generation ends, the session is set aside, and a fresh
// generation starts from the fallback. It is said, not counted as a failed
// attempt.
func (s *stepRun) resumeRefused(gen *manifest.Generation, l launch, why string) (launch, error) {
	rt, st := s.rt, s.st
	fallback := l.fallback
	if fallback == nil {
		fallback = s.handoffFallback
	}
	prompt, from, err := fallback()
	if err != nil {
		return launch{}, fmt.Errorf("session %s could not be resumed and there is nothing to start afresh from: %w", l.resume, err)
	}
	msg := fmt.Sprintf("session %s could not be resumed (%s); generation %d starts a fresh session from %s", l.resume, why, gen.N+1, from)
	st.AddError(msg)
	s.log.Warn(msg)
	rt.emit(Event{Kind: KindNotice, Step: st.Name, Generation: gen.N, Text: msg})
	st.Retire(l.resume)
	if st.SessionID == l.resume {
		st.SessionID = ""
	}
	end := rt.clock.Now()
	gen.EndedAt = &end
	rt.save(st)
	return launch{prompt: prompt, newGeneration: true, fallback: fallback}, nil
}

// Rerun starts a fresh generation of a step from its handoff file as it is
// on disk now: the seed's "open it, change a line, run again". A live
// session of the step is set aside (retired). A step not in the manifest
// is added, with the handoff as its task. A broken file gives a
// *HandoffFileError and nothing starts.
func (rt *Runtime) Rerun(ctx context.Context, name string) (*manifest.StepResult, error) {
	if rt.wb == nil {
		return rt.m.Step(name), fmt.Errorf("rerun step %s: %w: the handoff file lives in the workbench", name, ErrNoWorkbench)
	}
	s, err := rt.lockStep(name)
	if err != nil {
		return nil, err
	}
	defer s.unlock()
	if err := s.vouchRun(); err != nil {
		return rt.m.Step(name), err
	}
	path := rt.wb.HandoffPath(name)
	h, b, err := ReadHandoffFile(path)
	if err != nil {
		return rt.m.Step(name), err
	}
	// Only known documents reach the model (DESIGN.md «Known documents»).
	if err := s.vouch("handoff file", path, b); err != nil {
		return rt.m.Step(name), err
	}
	if err := s.vouchTask(name); err != nil {
		return rt.m.Step(name), err
	}
	s.st = rt.m.EnsureStep(name, string(b), rt.clock.Now())
	st := s.st
	for _, msg := range s.vouched {
		st.AddError(msg)
	}
	s.begin()
	cur := st.Current()
	// A generation that never got a session is reused, not skipped.
	reuse := cur != nil && cur.SessionID == "" && cur.Handoff == nil
	if st.SessionID != "" {
		st.Retire(st.SessionID)
		s.log.Info("rerun sets the live session aside", "session", st.SessionID)
		st.SessionID = ""
	}
	n := 1
	if cur != nil {
		n = cur.N
		if reuse {
			cur.EndedAt = nil
		} else {
			n++
		}
	}
	if workbench.NearCap(len(b), workbench.MaxHandoff) {
		s.note(fmt.Sprintf("handoff file %s holds %s, near the cap of %s for a handoff", path, safefile.Size(int64(len(b))), safefile.Size(workbench.MaxHandoff)))
	}
	msg := fmt.Sprintf("rerun: generation %d starts from %s as it is on disk now (sha256 %s)", n, path, digest(b)[:16])
	s.log.Info(msg)
	rt.emit(Event{Kind: KindNotice, Step: name, Generation: n, Text: msg})
	h.Step = name
	fallback := func() (string, string, error) {
		h, _, err := ReadHandoffFile(path)
		h.Step = name
		return s.books().SuccessorPrompt(h, s.lastHandoff()), path, err
	}
	st, err = s.run(ctx, launch{prompt: s.books().SuccessorPrompt(h, s.lastHandoff()), newGeneration: !reuse, fallback: fallback})
	return st, s.durable(err)
}

// HandoffFileError says why a handoff file cannot start a generation: it is
// missing, or a person broke it.
type HandoffFileError struct {
	Path    string
	Problem string // "is empty", "is not UTF-8 text (…)", "lacks …"
	Err     error  // fs.ErrNotExist, ErrBrokenHandoff, or a read error
}

// Error describes the failure; it is what a person sees.
func (e *HandoffFileError) Error() string {
	return fmt.Sprintf("handoff file %s %s; nothing was started", e.Path, e.Problem)
}

// Unwrap gives fs.ErrNotExist, ErrBrokenHandoff or the read error.
func (e *HandoffFileError) Unwrap() error { return e.Err }

// ReadHandoffFile reads and checks a handoff file before a generation starts
// from it: it must exist, be UTF-8 text, not be empty, and fill the
// required sections (DESIGN.md «Handoff document»). It returns the parsed handoff and the file's
// bytes. The file is one of flower's (DESIGN.md «Territory»): a link, or
// anything but a regular file, is refused, and so is one over
// workbench.MaxHandoff.
func ReadHandoffFile(path string) (handoffwriter.Handoff, []byte, error) {
	b, err := workbench.ReadNote(path, workbench.MaxHandoff, "a handoff")
	return checkHandoffFile(path, b, err)
}

// ReadGivenHandoffFile is ReadHandoffFile for a file the person named
// (flower handoff set FILE): a link of theirs is followed, but it must be a
// regular file under the same cap.
func ReadGivenHandoffFile(path string) (handoffwriter.Handoff, []byte, error) {
	b, err := safefile.ReadGiven(path, workbench.MaxHandoff, "a handoff")
	return checkHandoffFile(path, b, err)
}

func checkHandoffFile(path string, b []byte, err error) (handoffwriter.Handoff, []byte, error) {
	var se *safefile.Error
	switch {
	case errors.As(err, &se):
		// Already names the file and says what to do.
		return handoffwriter.Handoff{}, nil, &HandoffFileError{Path: path, Problem: se.Problem + ": " + se.Fix, Err: err}
	case errors.Is(err, fs.ErrNotExist):
		return handoffwriter.Handoff{}, nil, &HandoffFileError{Path: path, Problem: "does not exist", Err: err}
	case err != nil:
		return handoffwriter.Handoff{}, nil, &HandoffFileError{Path: path, Problem: "cannot be read (" + err.Error() + ")", Err: err}
	}
	broken := func(problem string) (handoffwriter.Handoff, []byte, error) {
		return handoffwriter.Handoff{}, b, &HandoffFileError{Path: path, Problem: problem, Err: ErrBrokenHandoff}
	}
	if len(strings.TrimSpace(string(b))) == 0 {
		return broken("is empty: write the handoff into it (" + requiredHeadings(handoffwriter.Required) + ")")
	}
	if !utf8.Valid(b) {
		off := 0
		for off < len(b) {
			r, size := utf8.DecodeRune(b[off:])
			if r == utf8.RuneError && size <= 1 {
				break
			}
			off += size
		}
		return broken(fmt.Sprintf("is not UTF-8 text (byte 0x%02x at offset %d): save it as UTF-8", b[off], off))
	}
	h := handoffwriter.Parse(string(b))
	if missing := h.Missing(); len(missing) > 0 {
		return broken(fmt.Sprintf("lacks the required section(s) %s: put back %s with its text",
			strings.Join(missing, ", "), requiredHeadings(missing)))
	}
	return h, b, nil
}

// requiredHeadings names the headings of the given section keys, quoted.
func requiredHeadings(keys []string) string {
	var hs []string
	for _, sec := range handoffwriter.Sections {
		if slices.Contains(keys, sec.Key) {
			hs = append(hs, fmt.Sprintf("%q", sec.Heading()))
		}
	}
	return strings.Join(hs, " and ")
}
