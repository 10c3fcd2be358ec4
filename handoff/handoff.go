// Package handoff owns what happens between two generations of a step: the
// cut session's handoff is degraded if it must be (DESIGN.md «Degraded handoff»), frozen to
// the workbench (DESIGN.md «Handoff files», «No workbench»), recorded on the step (DESIGN.md «Manifest», «Continuation»), and read back from
// disk for the successor (DESIGN.md «Launch from disk»). It also owns the step's task as a successor
// sees it: frozen to the workbench at the step's start, read back from disk
// (a person may edit it) and carried verbatim, up to a limit, in every
// successor's first prompt next to the handoff. Only the engine (package
// supervisor) calls it, whichever front runs the step: no front parses,
// degrades or freezes a handoff.
package handoff

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/flowerhq/flower/handoffwriter"
	"github.com/flowerhq/flower/manifest"
	"github.com/flowerhq/flower/policy"
	"github.com/flowerhq/flower/workbench"
)

// Cut is how a generation ended in a handoff.
type Cut struct {
	// Handoff is what the writing turn produced; zero when there was none
	// (overflow, a harness that died).
	Handoff handoffwriter.Handoff
	// Why, when non-empty, is why the handoff degrades (DESIGN.md «Degraded handoff»).
	Why string
	// Reason is why the generation was cut: one of manifest's Reason*
	// values (threshold, overflow, compaction, compact_blocked,
	// requested, lost).
	Reason string
	// Context is the main thread's context at the cut.
	Context        int
	WritingSeconds float64
	WritingCostUSD float64
	// Outcome of the writing turn (manifest.Outcome*); derived when empty.
	Outcome string
}

// Books is what a handoff is recorded in and against.
type Books struct {
	Step         *manifest.StepResult
	Policy       policy.HandoffPolicy
	WindowSource string
	// Workbench is where the file goes; nil means no file (DESIGN.md «No workbench»).
	Workbench *workbench.Workbench
	Now       func() time.Time
	// Save writes the manifest; it is called after every change.
	Save func()
	// Failed, if set, hears of a file of the step's records that could not
	// be written: what ("handoff file", "task file") and why. The step goes
	// on (through the prompt, or from the manifest's copy); the caller says
	// it where a person sees it and ends the step non-zero (DESIGN.md
	// «Durable or loud»).
	Failed func(what string, err error)
	Log    *slog.Logger
	// TaskCarry bounds how many characters of the task a successor's first
	// prompt carries verbatim: 0 means DefaultTaskCarry, a negative value
	// carries nothing (the prompt is the handoff alone).
	TaskCarry int
	// ManifestPath is the run's manifest.json, where the task is kept
	// without a workbench; a task too long to carry whole points there.
	ManifestPath string
}

// DefaultTaskCarry is how many characters (runes) of the task a successor's
// first prompt carries unless told otherwise: enough for a detailed brief,
// small next to any window flower hands off in.
const DefaultTaskCarry = 8000

// CarryLimit resolves a TaskCarry setting to a limit in characters: 0 gives
// DefaultTaskCarry, a negative setting 0 (carry nothing).
func CarryLimit(setting int) int {
	switch {
	case setting == 0:
		return DefaultTaskCarry
	case setting < 0:
		return 0
	}
	return setting
}

// Frozen is a handoff on its way to the successor.
type Frozen struct {
	// Handoff is the document as written: the writing turn's, or the
	// degraded one built in its place.
	Handoff handoffwriter.Handoff
	Record  *manifest.HandoffRecord
	// Path is the file ("" without a workbench, or when writing failed).
	Path string
}

// Freeze ends gen with the cut: it degrades the handoff if it is incomplete
// or the cut says why it must (adding 交接降级(<why>) to the step's errors),
// writes it to the workbench (archiving the previous generation's file),
// records the receipt on gen, and retires gen's session. A failure to write
// the file is recorded, not returned: the successor still gets the document
// through its prompt. Once gen is the last generation the policy allows,
// Freeze returns a *policy.GenerationLimitError (DESIGN.md «Runaway guard») with the step finished
// and the handoff on disk for a rerun.
func (b Books) Freeze(gen *manifest.Generation, c Cut) (Frozen, error) {
	st := b.Step
	h := c.Handoff
	h.Step = st.Name
	rec := &manifest.HandoffRecord{
		Reason: c.Reason, Context: c.Context, At: b.Policy.At(), Window: b.Policy.Window,
		WindowSource: b.WindowSource, WritingSeconds: c.WritingSeconds, WritingCostUSD: c.WritingCostUSD,
		Outcome: c.Outcome,
	}
	if !h.Complete() || c.Why != "" {
		if c.Why == "" {
			c.Why = "the handoff is missing " + strings.Join(h.Missing(), ", ")
		}
		task, _ := b.Task()
		h = handoffwriter.Degraded(st.Name, task, c.Why) // scene: the task as a person left it
	}
	if h.IsDegraded() {
		rec.Degraded, rec.Why = true, c.Why
		st.DegradedError(c.Why) // DESIGN.md «Degraded handoff»
		if rec.Outcome == "" || rec.Outcome == manifest.OutcomeWritten || rec.Outcome == manifest.OutcomeWrittenOnRetry {
			rec.Outcome = manifest.OutcomeDegraded
		}
	} else if rec.Outcome == "" {
		rec.Outcome = manifest.OutcomeWritten
	}
	if cut, was := h.Fit(workbench.MaxHandoff); was {
		// Cut now, at the cap the successor's launch reads under, so the
		// file a successor and a person read is never over it (DESIGN.md
		// «Input caps»).
		rec.CutFromBytes = len(h.Markdown())
		h = cut
		b.Log.Warn("the handoff as written is over the cap for a handoff: cut to it, marked "+handoffwriter.CutMarker,
			"of_gen", gen.N, "bytes", rec.CutFromBytes, "cap", workbench.MaxHandoff)
	}
	md := []byte(h.Markdown())
	rec.SHA256Written = Digest(md)
	path := b.writeHandoff(md)
	rec.Path, rec.Sections = path, h.Filled()
	// The document as written, for the run's page (DESIGN.md «Run page»).
	b.Log.Info("handoff document as written", append([]any{"of_gen", gen.N, "degraded", rec.Degraded, "path", path}, document(md)...)...)
	if path != "" {
		st.HandoffPath = path
	}
	gen.Handoff = rec
	end := b.Now()
	gen.EndedAt = &end
	st.Retire(gen.SessionID) // DESIGN.md «Manifest»: this session is burned
	if st.SessionID == gen.SessionID {
		st.SessionID = "" // DESIGN.md «Continuation»: never point continuation at a burned session
	}
	b.Save()
	b.Log.Info("handoff written", "gen", gen.N, "reason", c.Reason, "context", c.Context, "degraded", rec.Degraded, "path", path)
	f := Frozen{Handoff: h, Record: rec, Path: path}
	if b.Policy.LastGeneration(gen.N) {
		err := &policy.GenerationLimitError{Max: b.Policy.MaxGenerations, Window: b.Policy.Window, At: b.Policy.At(), Knobs: b.Policy.Knobs}
		st.AddError(err.Error())
		st.Finish(manifest.StatusGenerationLimit, b.Now())
		b.Save()
		return f, err
	}
	return f, nil
}

// Leave writes a degraded handoff for why to the workbench (archiving the
// file before it) without ending a generation: the step's session is not
// burned, and stays the one continuation resumes. It is the document a
// person finds on disk when a step stops with its session live and unable
// to write (a limit that outlasts --max-wait; DESIGN.md «Unattended:
// limits, budget, deadline»). The step's errors get the 交接降级(why)
// entry as for any degraded handoff. It returns the file's path; "" when
// it could not be written (recorded, as by Freeze).
func (b Books) Leave(why string) string {
	st := b.Step
	task, _ := b.Task()
	h := handoffwriter.Degraded(st.Name, task, why)
	st.DegradedError(why) // DESIGN.md «Degraded handoff»
	md := []byte(h.Markdown())
	path := b.writeHandoff(md)
	if path != "" {
		st.HandoffPath = path
	}
	b.Save()
	b.Log.Info("degraded handoff left on disk; the session stays live", append([]any{"path", path, "why", why}, document(md)...)...)
	return path
}

// LogDocument bounds how much of a handoff document one log line carries:
// a handoff of a few KiB goes whole, for the run's page; past it the line
// gets a preview, the document's size and document_cut (DESIGN.md «Input
// caps»).
const LogDocument = 64 << 10

// document is the log attributes of a handoff document: all of it up to
// LogDocument bytes, else its first part (on a character boundary).
func document(md []byte) []any {
	if len(md) <= LogDocument {
		return []any{"document", string(md)}
	}
	end := LogDocument
	for end > 0 && !utf8.RuneStart(md[end]) {
		end--
	}
	return []any{"document", string(md[:end]), "document_bytes", len(md), "document_cut", true}
}

// Keep archives the step's current handoff file while the writing turn
// runs, so that Freeze, on the way to the successor's prompt, need not
// (workbench.KeepHandoff). A failure is only logged: Freeze then archives
// it as before, or says why it cannot.
func (b Books) Keep() {
	if err := b.Workbench.KeepHandoff(b.Step.Name, b.Now()); err != nil {
		b.Log.Warn("could not archive the current handoff ahead of the freeze; the freeze does it", "err", err)
	}
}

// writeHandoff writes the step's handoff file; a failure is recorded on the
// step and said, and the path is "".
func (b Books) writeHandoff(md []byte) string {
	path, err := b.Workbench.Freeze(b.Step.Name, md, b.Now())
	if err != nil {
		b.Step.AddError("write handoff: " + err.Error())
		b.Log.Error("write handoff", "err", err)
		b.failed("handoff file", err)
		return ""
	}
	return path
}

// Launch returns the successor's first prompt from the handoff as it is on
// disk now (DESIGN.md «Launch from disk»): a person may have edited the file since Freeze. An
// unreadable file, or one an edit left without doing or next, is recorded
// and the document as written is used instead. The receipt gets the sha256
// of what was read. The prompt is SuccessorPrompt's: the handoff, then the
// task as it was given.
func (b Books) Launch(f Frozen) string {
	st := b.Step
	launch := f.Handoff
	if f.Path != "" {
		data, err := workbench.ReadNote(f.Path, workbench.MaxHandoff, "a handoff")
		if err == nil && workbench.NearCap(len(data), workbench.MaxHandoff) {
			b.Log.Warn("the handoff is near its cap", "path", f.Path, "bytes", len(data), "cap", workbench.MaxHandoff)
		}
		switch {
		case err != nil:
			st.AddError(fmt.Sprintf("read handoff %s: %v; the successor gets the document as written", f.Path, err))
		default:
			f.Record.SHA256Launched = Digest(data)
			if f.Record.SHA256Launched != f.Record.SHA256Written {
				// A person edited the file: the page shows the edit (DESIGN.md «Run page»).
				b.Log.Info("handoff launched as edited", append([]any{"path", f.Path}, document(data)...)...)
			}
			if onDisk := handoffwriter.Parse(string(data)); onDisk.Complete() {
				onDisk.Step = st.Name
				launch = onDisk
			} else {
				st.AddError(fmt.Sprintf("handoff %s lacks %s on disk; the successor gets the document as written", f.Path, strings.Join(onDisk.Missing(), ", ")))
			}
		}
		b.Save()
	}
	return b.SuccessorPrompt(launch, f.Record)
}

// SuccessorPrompt is the first prompt of every fresh session that takes a
// step over from a handoff h (a launch after Freeze, or a continue or rerun
// starting afresh): h's prompt block, then the task in the person's words,
// read from disk now and marked "the task, as it was given". A task of at
// most the carry limit goes in whole; a longer one as its first part, with
// the path of the full file and a sentence telling the successor to read it.
// The handoff alone carries the work's state; the task is carried because a
// chain of paraphrases loses its exact wording, limits and criteria.
//
// When rec is non-nil it records the task's sha256 as read, where it was
// read, and how much went in. With carrying off the prompt is h's block
// alone and nothing is read or recorded.
func (b Books) SuccessorPrompt(h handoffwriter.Handoff, rec *manifest.HandoffRecord) string {
	prompt := h.PromptBlock()
	limit := CarryLimit(b.TaskCarry)
	if limit == 0 {
		return prompt
	}
	task, path := b.Task()
	where := path
	if where == "" {
		where = "the run's manifest.json (the step's \"task\" field)"
		if b.ManifestPath != "" {
			where = fmt.Sprintf("the \"task\" field of step %q in %s", b.Step.Name, b.ManifestPath)
		}
	}
	block, whole := handoffwriter.TaskBlock(task, where, limit)
	if block == "" {
		return prompt
	}
	if rec != nil {
		rec.TaskSHA256, rec.TaskPath, rec.TaskCarried = Digest([]byte(task)), path, manifest.TaskCarriedPart
		if whole {
			rec.TaskCarried = manifest.TaskCarriedWhole
		}
		b.Save()
	}
	return prompt + "\n" + block
}

// FreezeTask writes the step's task, as it was given, to the workbench at
// the step's start (an earlier, different task file is archived, never
// overwritten) and records the file's path and the task's sha256 on the
// step. Without a workbench, or when the write fails (recorded in the
// step's errors, not returned), the manifest's copy is the task's only home
// and the path is "". A step with no task yet (an interactive one whose
// person has not typed it) writes nothing.
func (b Books) FreezeTask() string {
	st := b.Step
	if st.Task == "" {
		return ""
	}
	st.TaskSHA256 = Digest([]byte(st.Task))
	path, err := b.Workbench.FreezeTask(st.Name, []byte(st.Task), b.Now())
	if err != nil {
		st.AddError("write task: " + err.Error() + "; successors get the task from the manifest")
		b.Log.Error("write task", "err", err)
		b.failed("task file", err)
	}
	st.TaskPath = path
	b.Save()
	return path
}

// Task returns the step's task as it is now and where it was read: the
// workbench file, as a person may have edited it, or the manifest's copy
// (path "") without one. A frozen task file that has since gone missing,
// cannot be read or was emptied is said in the step's errors (once) and the
// manifest's copy is used.
func (b Books) Task() (task, path string) {
	st := b.Step
	path = st.TaskPath
	if path == "" {
		if st.TaskSHA256 != "" {
			return st.Task, "" // frozen without a file: the manifest is its home
		}
		// Never frozen in this run (a rerun of a step new to it): the file
		// an earlier run froze is the task, if there is one.
		if p := b.Workbench.TaskPath(st.Name); p != "" {
			if data, err := workbench.ReadNote(p, workbench.MaxTask, "a task"); err == nil && strings.TrimSpace(string(data)) != "" {
				return string(data), p
			}
		}
		return st.Task, ""
	}
	data, err := workbench.ReadNote(path, workbench.MaxTask, "a task")
	problem := ""
	switch {
	case err != nil:
		problem = err.Error()
	case strings.TrimSpace(string(data)) == "":
		problem = "the file is empty"
	default:
		return string(data), path
	}
	msg := fmt.Sprintf("read task %s: %s; successors get the task as recorded in the manifest", path, problem)
	if !slices.Contains(st.Errors, msg) {
		st.AddError(msg)
		b.Log.Warn(msg)
		b.Save()
	}
	return st.Task, ""
}

// WritingPrompt is the handoff prompt for the writing turn. When the
// successor will get the task verbatim (carrying on and a task to carry)
// it tells the session so, and its document can leave the task to the task;
// otherwise it is handoffwriter.HandoffPrompt, which says nothing of it.
func WritingPrompt(used, window int, task string, carry int) string {
	if CarryLimit(carry) > 0 && strings.TrimSpace(task) != "" {
		return handoffwriter.HandoffPromptCarryingTask(used, window)
	}
	return handoffwriter.HandoffPrompt(used, window)
}

func (b Books) failed(what string, err error) {
	if b.Failed != nil {
		b.Failed(what, err)
	}
}

// Digest is the hex sha256 the receipts carry.
func Digest(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
