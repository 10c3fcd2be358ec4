// Package handoff owns what happens between two generations of a step: the
// cut session's handoff is degraded if it must be (SPEC R23–R25), frozen to
// the workbench (R28–R29), recorded on the step (R31–R33), and read back from
// disk for the successor (R30). The headless supervisor and the interactive
// mode both hand off through it.
package handoff

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

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
	// Why, when non-empty, is why the handoff degrades (R23).
	Why string
	// Reason is manifest.ReasonThreshold, ReasonOverflow or ReasonCompaction.
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
	// Workbench is where the file goes; nil means no file (R29).
	Workbench *workbench.Workbench
	Now       func() time.Time
	// Save writes the manifest; it is called after every change.
	Save func()
	Log  *slog.Logger
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
// Freeze returns a *policy.GenerationLimitError (R27) with the step finished
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
		h = handoffwriter.Degraded(st.Name, st.Task, c.Why)
	}
	if h.IsDegraded() {
		rec.Degraded, rec.Why = true, c.Why
		st.DegradedError(c.Why) // R25
		if rec.Outcome == "" || rec.Outcome == manifest.OutcomeWritten || rec.Outcome == manifest.OutcomeWrittenOnRetry {
			rec.Outcome = manifest.OutcomeDegraded
		}
	} else if rec.Outcome == "" {
		rec.Outcome = manifest.OutcomeWritten
	}
	md := []byte(h.Markdown())
	rec.SHA256Written = Digest(md)
	path, err := b.Workbench.Freeze(st.Name, md, b.Now())
	if err != nil {
		st.AddError("write handoff: " + err.Error())
		b.Log.Error("write handoff", "err", err)
		path = ""
	}
	rec.Path, rec.Sections = path, h.Filled()
	if path != "" {
		st.HandoffPath = path
	}
	gen.Handoff = rec
	end := b.Now()
	gen.EndedAt = &end
	st.Retire(gen.SessionID) // R32: this session is burned
	if st.SessionID == gen.SessionID {
		st.SessionID = "" // R33: never point continuation at a burned session
	}
	b.Save()
	b.Log.Info("handoff written", "gen", gen.N, "reason", c.Reason, "context", c.Context, "degraded", rec.Degraded, "path", path)
	f := Frozen{Handoff: h, Record: rec, Path: path}
	if gen.N >= b.Policy.MaxGenerations {
		err := &policy.GenerationLimitError{Max: b.Policy.MaxGenerations, Window: b.Policy.Window, At: b.Policy.At()}
		st.AddError(err.Error())
		st.Finish(manifest.StatusGenerationLimit, b.Now())
		b.Save()
		return f, err
	}
	return f, nil
}

// Launch returns the successor's first prompt from the handoff as it is on
// disk now (R30): a person may have edited the file since Freeze. An
// unreadable file, or one an edit left without doing or next, is recorded
// and the document as written is used instead. The receipt gets the sha256
// of what was read.
func (b Books) Launch(f Frozen) string {
	st := b.Step
	launch := f.Handoff
	if f.Path != "" {
		data, err := os.ReadFile(f.Path)
		switch {
		case err != nil:
			st.AddError(fmt.Sprintf("read handoff %s: %v; the successor gets the document as written", f.Path, err))
		default:
			f.Record.SHA256Launched = Digest(data)
			if onDisk := handoffwriter.Parse(string(data)); onDisk.Complete() {
				onDisk.Step = st.Name
				launch = onDisk
			} else {
				st.AddError(fmt.Sprintf("handoff %s lacks %s on disk; the successor gets the document as written", f.Path, strings.Join(onDisk.Missing(), ", ")))
			}
		}
		b.Save()
	}
	return launch.PromptBlock()
}

// Digest is the hex sha256 the receipts carry.
func Digest(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
