package manifest

import (
	"strconv"
	"time"

	"github.com/flowerhq/flower/jsonenc"
)

// The manifest is written on every decision of a step (DESIGN.md
// «Manifest»), and a long step's holds hundreds of generations: encoding
// it by reflection cost more than its write. This encoder writes the same
// bytes as encoding/json's Marshal of the same value (compact, HTML-safe
// strings, []/null as the struct tags say), field by field, with no
// reflection (its strings, numbers and times by jsonenc); TestEncoderIsEncodingJSON fills every field of every type at
// random and holds the two together, so a field added to a type and not
// here fails it.

// jsonw appends one JSON value to b; first says no member was written yet
// in the object being written.
type jsonw struct {
	b     []byte
	first bool
	err   error
}

func (w *jsonw) open() {
	w.b = append(w.b, '{')
	w.first = true
}

func (w *jsonw) close() {
	w.b = append(w.b, '}')
	w.first = false
}

func (w *jsonw) key(k string) {
	if !w.first {
		w.b = append(w.b, ',')
	}
	w.first = false
	w.b = append(w.b, '"')
	w.b = append(w.b, k...)
	w.b = append(w.b, '"', ':')
}

func (w *jsonw) str(k, v string) {
	w.key(k)
	w.b = jsonenc.AppendString(w.b, v)
}

func (w *jsonw) strOmit(k, v string) {
	if v != "" {
		w.str(k, v)
	}
}

func (w *jsonw) int(k string, v int) {
	w.key(k)
	w.b = strconv.AppendInt(w.b, int64(v), 10)
}

func (w *jsonw) intOmit(k string, v int) {
	if v != 0 {
		w.int(k, v)
	}
}

func (w *jsonw) float(k string, v float64) {
	w.key(k)
	w.appendFloat(v)
}

func (w *jsonw) floatOmit(k string, v float64) {
	if v != 0 {
		w.float(k, v)
	}
}

func (w *jsonw) boolOmit(k string, v bool) {
	if v {
		w.bool(k, v)
	}
}

func (w *jsonw) bool(k string, v bool) {
	w.key(k)
	w.b = strconv.AppendBool(w.b, v)
}

func (w *jsonw) boolPtrOmit(k string, v *bool) {
	if v != nil {
		w.bool(k, *v)
	}
}

func (w *jsonw) time(k string, t time.Time) {
	w.key(k)
	w.appendTime(t)
}

func (w *jsonw) timePtrOmit(k string, t *time.Time) {
	if t != nil {
		w.time(k, *t)
	}
}

// strs writes a list that has no omitempty: nil is null.
func (w *jsonw) strs(k string, v []string) {
	w.key(k)
	w.b, _ = jsonenc.AppendValue(w.b, v) // a list of strings cannot fail
}

func (w *jsonw) strsOmit(k string, v []string) {
	if len(v) > 0 {
		w.strs(k, v)
	}
}

// list writes n elements by each, under k; a nil list is null unless
// omit, where an empty one is left out.
func list[T any](w *jsonw, k string, v []T, omit bool, each func(*jsonw, *T)) {
	if omit && len(v) == 0 {
		return
	}
	w.key(k)
	if v == nil {
		w.b = append(w.b, "null"...)
		return
	}
	w.b = append(w.b, '[')
	for i := range v {
		if i > 0 {
			w.b = append(w.b, ',')
		}
		each(w, &v[i])
	}
	w.b = append(w.b, ']')
}

func (w *jsonw) appendTime(t time.Time) {
	b, err := jsonenc.AppendTime(w.b, t)
	if err != nil {
		w.fail(err)
		return
	}
	w.b = b
}

func (w *jsonw) appendFloat(f float64) {
	b, err := jsonenc.AppendFloat(w.b, f)
	if err != nil {
		w.fail(err)
		return
	}
	w.b = b
}

func (w *jsonw) fail(err error) {
	if w.err == nil {
		w.err = err
	}
	w.b = append(w.b, "null"...)
}

// manifest is m as Save writes it; the steps must be normalized.
func (w *jsonw) manifest(m *Manifest) {
	w.open()
	w.int("version", m.Version)
	w.str("run_dir", m.RunDir)
	w.str("workspace", m.Workspace)
	w.time("created_at", m.CreatedAt)
	w.time("updated_at", m.UpdatedAt)
	w.strOmit("harness_kind", m.HarnessKind)
	if m.Probe != nil {
		w.key("probe")
		w.probe(m.Probe)
	}
	w.key("steps")
	if m.Steps == nil {
		w.b = append(w.b, "null"...)
	} else {
		w.b = append(w.b, '[')
		for i, s := range m.Steps {
			if i > 0 {
				w.b = append(w.b, ',')
			}
			if s == nil {
				w.b = append(w.b, "null"...)
				continue
			}
			w.step(s)
		}
		w.b = append(w.b, ']')
	}
	w.close()
}

func (w *jsonw) probe(p *Probe) {
	w.open()
	w.strOmit("model", p.Model)
	w.strOmit("session_id", p.SessionID)
	w.time("at", p.At)
	w.float("seconds", p.Seconds)
	w.intOmit("window", p.Window)
	w.intOmit("floor", p.Floor)
	w.boolPtrOmit("auto_compact_enabled", p.AutoCompactEnabled)
	w.strOmit("fallback", p.Fallback)
	w.close()
}

func (w *jsonw) step(s *StepResult) {
	w.open()
	w.str("name", s.Name)
	w.str("task", s.Task)
	w.str("status", s.Status)
	w.int("attempts", s.Attempts)
	w.strs("retired", s.Retired)
	w.str("session_id", s.SessionID)
	w.int("context", s.Context)
	w.int("window", s.Window)
	w.str("window_source", s.WindowSource)
	w.float("cost_usd", s.CostUSD)
	w.int("num_turns", s.NumTurns)
	w.strs("errors", s.Errors)
	list(w, "generations", s.Generations, false, (*jsonw).generation)
	w.strOmit("handoff_path", s.HandoffPath)
	w.strOmit("task_path", s.TaskPath)
	w.strOmit("task_sha256", s.TaskSHA256)
	w.time("started_at", s.StartedAt)
	w.timePtrOmit("ended_at", s.EndedAt)
	w.strOmit("model", s.Model)
	w.floatOmit("budget_usd", s.BudgetUSD)
	w.timePtrOmit("deadline", s.Deadline)
	w.close()
}

func (w *jsonw) generation(g *Generation) {
	w.open()
	w.int("n", g.N)
	w.str("session_id", g.SessionID)
	w.time("started_at", g.StartedAt)
	w.timePtrOmit("ended_at", g.EndedAt)
	w.float("cost_usd", g.CostUSD)
	w.int("num_turns", g.NumTurns)
	w.int("context", g.Context)
	w.boolOmit("answered", g.Answered)
	w.intOmit("harness_window", g.HarnessWindow)
	w.intOmit("start_floor", g.StartFloor)
	w.boolPtrOmit("auto_compact_enabled", g.AutoCompactEnabled)
	list(w, "blocked_compactions", g.BlockedCompactions, true, (*jsonw).blocked)
	w.intOmit("blocked_compactions_more", g.BlockedCompactionsMore)
	list(w, "compactions", g.Compactions, true, (*jsonw).compaction)
	list(w, "limit_waits", g.LimitWaits, true, (*jsonw).limitWait)
	if g.Handoff != nil {
		w.key("handoff")
		w.handoff(g.Handoff)
	}
	w.close()
}

func (w *jsonw) blocked(b *BlockedCompaction) {
	w.open()
	w.time("at", b.At)
	w.str("trigger", b.Trigger)
	w.int("context", b.Context)
	w.strOmit("session_id", b.SessionID)
	w.close()
}

func (w *jsonw) compaction(c *Compaction) {
	w.open()
	w.time("at", c.At)
	w.strOmit("trigger", c.Trigger)
	w.intOmit("pre_tokens", c.PreTokens)
	w.intOmit("post_tokens", c.PostTokens)
	w.close()
}

func (w *jsonw) limitWait(l *LimitWait) {
	w.open()
	w.str("kind", l.Kind)
	w.time("start", l.Start)
	w.time("until", l.Until)
	w.timePtrOmit("end", l.End)
	w.timePtrOmit("reset_at", l.ResetAt)
	w.boolOmit("writing", l.Writing)
	w.boolOmit("stopped", l.Stopped)
	w.strOmit("handoff_path", l.HandoffPath)
	w.close()
}

func (w *jsonw) handoff(h *HandoffRecord) {
	w.open()
	w.str("reason", h.Reason)
	w.int("context", h.Context)
	w.int("at", h.At)
	w.int("window", h.Window)
	w.bool("degraded", h.Degraded)
	w.strOmit("why", h.Why)
	w.strOmit("path", h.Path)
	w.strsOmit("sections", h.Sections)
	w.float("writing_seconds", h.WritingSeconds)
	w.float("writing_cost_usd", h.WritingCostUSD)
	w.strOmit("sha256_written", h.SHA256Written)
	w.strOmit("sha256_launched", h.SHA256Launched)
	w.strOmit("task_sha256", h.TaskSHA256)
	w.strOmit("task_path", h.TaskPath)
	w.strOmit("task_carried", h.TaskCarried)
	w.strOmit("window_source", h.WindowSource)
	w.intOmit("cut_from_bytes", h.CutFromBytes)
	w.strOmit("outcome", h.Outcome)
	w.close()
}
