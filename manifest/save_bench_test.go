package manifest

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"
)

// long is a manifest of one step with n generations, each cut by a
// handoff, as a long unattended step leaves it.
func long(dir string, n int) *Manifest {
	now := time.Date(2026, 12, 7, 0, 0, 0, 0, time.UTC)
	m := New(dir, "/work/space", now)
	s := m.EnsureStep("main", "a task of a few lines that says what to do", now)
	for i := range n {
		g := s.BeginGeneration(fmt.Sprintf("session-%08d-0000-0000-0000-000000000000", i), now.Add(time.Duration(i)*time.Minute))
		s.AddUsage(0.42, 7)
		s.SetContext(150_000)
		g.Answered = true
		end := now.Add(time.Duration(i)*time.Minute + 50*time.Second)
		g.EndedAt = &end
		g.Handoff = &HandoffRecord{Reason: ReasonThreshold, Context: 150_000, At: 150_000, Window: 200_000,
			Path: dir + fmt.Sprintf("/交接-%d.md", i), Sections: []string{"doing", "decided", "deadends", "next", "scene"},
			WritingSeconds: 3.2, WritingCostUSD: 0.05, SHA256Written: "ab12", SHA256Launched: "ab12", Outcome: OutcomeWritten}
		s.Retire(g.SessionID)
	}
	return m
}

// BenchmarkSave is one decision's save of a step of 300 generations, the
// live one changed since the last: the encoding alone (a save's, and
// encoding/json's of the whole manifest, side by side), and the save with
// the durable write.
func BenchmarkSave(b *testing.B) {
	m := long(b.TempDir(), 300)
	s := m.Steps[0]
	b.Run("encode", func(b *testing.B) {
		for b.Loop() {
			s.SetContext(s.Context + 1)
			if _, err := m.enc.encode(m); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		for b.Loop() {
			if _, err := json.Marshal(m); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("save", func(b *testing.B) {
		for b.Loop() {
			s.SetContext(s.Context + 1)
			if err := m.Save(); err != nil {
				b.Fatal(err)
			}
		}
	})
}
