package interactive

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"strings"

	"github.com/flowerhq/flower/handoffwriter"
	"github.com/flowerhq/flower/manifest"
	"github.com/flowerhq/flower/policy"
	"github.com/flowerhq/flower/supervisor"
)

// cut is what a generation that ended in a handoff hands to the
// bookkeeping: the document the writing turn produced (empty when there was
// none) and, when non-empty, why it degrades.
type cut struct {
	handoff        handoffwriter.Handoff
	why            string
	reason         string // manifest.ReasonThreshold or ReasonOverflow
	context        int
	writingSeconds float64
}

// handOff degrades the handoff if it must (R23–R25), freezes it (R28–R29),
// records the generation's end (R31–R33), and returns the successor's first
// prompt as read back from disk (R30). It is the headless runtime's handOff
// (supervisor/runtime.go) on this package's state; the two should become one
// exported supervisor function once the headless side settles (see the
// report that came with this package).
func (r *run) handOff(gen *manifest.Generation, c cut) (string, error) {
	st, now := r.st, r.opts.Now
	h := c.handoff
	h.Step = st.Name
	rec := &manifest.HandoffRecord{
		Reason: c.reason, Context: c.context, At: r.opts.Policy.At(), Window: r.opts.Policy.Window,
		WritingSeconds: c.writingSeconds,
	}
	if !h.Complete() || c.why != "" {
		if c.why == "" {
			c.why = "handoff is missing " + strings.Join(h.Missing(), ", ")
		}
		h = handoffwriter.Degraded(st.Name, st.Task, c.why)
	}
	if h.IsDegraded() {
		rec.Degraded, rec.Why = true, c.why
		st.DegradedError(c.why)
	}
	md := []byte(h.Markdown())
	rec.SHA256Written = digest(md)
	path, err := r.opts.Workbench.Freeze(st.Name, md, now())
	if err != nil {
		st.AddError("write handoff: " + err.Error())
		r.log.Error("write handoff", "err", err)
		path = ""
	}
	rec.Path, rec.Sections = path, h.Filled()
	if path != "" {
		st.HandoffPath = path
	}
	gen.Handoff = rec
	end := now()
	gen.EndedAt = &end
	st.Retire(gen.SessionID)
	if st.SessionID == gen.SessionID {
		st.SessionID = ""
	}
	r.save()
	r.log.Info("handoff written", "gen", gen.N, "reason", c.reason, "context", c.context, "degraded", rec.Degraded, "path", path)
	hc := h
	r.show(supervisor.Event{Kind: supervisor.KindHandoff, Phase: supervisor.PhaseDone, Step: st.Name, Generation: gen.N,
		SessionID: gen.SessionID, Context: c.context, Window: r.opts.Policy.Window, At: r.opts.Policy.At(),
		Degraded: rec.Degraded, Why: rec.Why, Path: path, Sections: rec.Sections, Reason: c.reason, Handoff: &hc,
		CostUSD: st.CostUSD})

	if gen.N >= r.opts.Policy.MaxGenerations {
		err := &policy.GenerationLimitError{Max: r.opts.Policy.MaxGenerations, Window: r.opts.Policy.Window, At: r.opts.Policy.At()}
		st.AddError(err.Error())
		st.Finish(manifest.StatusGenerationLimit, now())
		r.save()
		return "", err
	}
	if r.opts.AfterFreeze != nil && path != "" {
		r.opts.AfterFreeze(path)
	}
	launch := h
	if path != "" {
		b, err := os.ReadFile(path)
		switch {
		case err != nil:
			st.AddError(fmt.Sprintf("read handoff %s: %v; the successor gets the document as written", path, err))
		default:
			rec.SHA256Launched = digest(b)
			if onDisk := handoffwriter.Parse(string(b)); onDisk.Complete() {
				onDisk.Step = st.Name
				launch = onDisk
			} else {
				st.AddError(fmt.Sprintf("handoff %s lacks %s on disk; the successor gets the document as written", path, strings.Join(onDisk.Missing(), ", ")))
			}
		}
		r.save()
	}
	return launch.PromptBlock(), nil
}

func digest(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
