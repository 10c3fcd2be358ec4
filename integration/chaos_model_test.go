package integration_test

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/flowerhq/flower/handoffwriter"
	"github.com/flowerhq/flower/scriptedapi"
)

// chaosTaskMark opens the campaign's task, so a first request can be told
// to carry it.
const chaosTaskMark = "CHAOS-TASK-MARK"

// chaosModel is the scripted model of the campaign's job. It decides from
// the request alone (the session it comes from and the conversation it
// carries), never from a count of its own, so that kills, retries and
// continuations cannot make it lose its place:
//   - the first two sessions the API sees work towards the threshold: each
//     reply runs a Bash command and reports 60k, 90k, 120k, 140k, then
//     155k tokens (the handoff is due at 150k of 200k), by how many
//     commands the conversation already holds;
//   - from the third session on, the job finishes: three commands, then
//     text;
//   - a handoff-writing turn gets a complete handoff, after chaosWriting,
//     whose doing and next carry marks naming the request, so a
//     successor's prompt can be traced to the handoff it came from.
//
// API faults are planned by main-thread request ordinal (the n-th request
// with tools that is not a subagent's, retries included).
type chaosModel struct {
	mu       sync.Mutex
	faults   map[int]*fault // by main ordinal
	main     int            // main-thread requests so far
	writings int            // handoff-writing requests so far
	sessions []string       // in order of first appearance
	// written maps a handoff reply's marks to the session that wrote it.
	written map[int]string
	// done holds the sessions told the job is done.
	done map[string]bool
}

func newChaosModel(faults []*fault) *chaosModel {
	m := &chaosModel{faults: map[int]*fault{}, written: map[int]string{}, done: map[string]bool{}}
	for _, f := range faults {
		if !f.kind.api() {
			continue
		}
		for i := 0; i < max(f.times, 1); i++ {
			m.faults[f.at+i] = f
		}
	}
	return m
}

// isMain tells a main-thread request. The harness's non-streamed retry
// after a stalled stream (seen on 2.1.328) is one too, though
// scriptedapi classes it as a side call: it offers the tools.
func isMain(r *scriptedapi.Request) bool {
	return r.Kind != scriptedapi.KindSubagent && len(r.Tools) > 0
}

func (m *chaosModel) reply(r *scriptedapi.Request) scriptedapi.Reply {
	if !isMain(r) {
		return scriptedapi.Harmless(r)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.main++
	ord := m.main
	if r.SessionID != "" && !slices.Contains(m.sessions, r.SessionID) {
		m.sessions = append(m.sessions, r.SessionID)
	}
	sessionN := slices.Index(m.sessions, r.SessionID) + 1
	if f := m.faults[ord]; f != nil {
		f.hits++
		if f.hits == 1 {
			f.firstSeq = r.Seq
		}
		f.session, f.lastSeq = r.SessionID, r.Seq
		return f.kind.reply()
	}
	if strings.Contains(r.LastUserText, handoffwriter.PromptTag) {
		m.writings++
		m.written[ord] = r.SessionID
		return chaosHandoff(sessionN, ord)
	}
	// Commands take a moment (tail, as the harness refuses a standalone
	// sleep), and one per session two seconds, so that a kill can land
	// while a tool runs, and a tool left running would outlive flower by
	// more than a second.
	slow := func(n int) string {
		if n == 2 {
			return "timeout 2 tail -f /dev/null; "
		}
		return "timeout 0.3 tail -f /dev/null; "
	}
	if sessionN >= 3 {
		n := strings.Count(r.AllText, "; echo final")
		if n >= 3 {
			m.done[r.SessionID] = true
			return done(40_000)
		}
		return bash(30_000, fmt.Sprintf("%secho final-%d >> work.txt", slow(n), n))
	}
	n := strings.Count(r.AllText, "; echo s")
	ramp := []int{60_000, 90_000, 120_000, 140_000, 155_000}
	return bash(ramp[min(n, len(ramp)-1)], fmt.Sprintf("%secho s%d-%d >> work.txt", slow(n), sessionN, n))
}

// mainRequests is how many main-thread requests arrived.
func (m *chaosModel) mainRequests() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.main
}

// finished reports whether the newest session the API saw was told the
// job is done.
func (m *chaosModel) finished() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.sessions) > 0 && m.done[m.sessions[len(m.sessions)-1]]
}

// reached reports whether a process fault's moment has come (before its
// delay).
func (m *chaosModel) reached(f *fault) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if f.writing > 0 {
		return m.writings >= f.writing
	}
	return m.main >= f.at
}

// chaosWriting is how long the model takes to write a handoff.
const chaosWriting = 300 * time.Millisecond

func chaosHandoff(session, ord int) scriptedapi.Reply {
	return scriptedapi.Reply{Usage: usage(156_000), Delay: chaosWriting, Text: fmt.Sprintf(`## 现在在做 (doing)
Session %[1]d was appending lines to work.txt DOING-MARK-%[2]d.

## 已定的事 (decided)
- One line per command: the task says so.

## 走不通的 (deadends)
- Writing work.txt in one go lost lines (DEADEND-MARK-%[2]d).

## 下一步 (next)
Append the next line NEXT-MARK-%[2]d.

## 现场 (scene)
- work.txt
`, session, ord)}
}

// handoffMarks returns the doing and next marks a handoff document
// carries, or the degraded marker.
func handoffMarks(doc string) []string {
	h := handoffwriter.Parse(doc)
	if h.IsDegraded() {
		return []string{handoffwriter.DegradedMarker}
	}
	var out []string
	for _, sec := range []string{h.Doing, h.Next} {
		for _, w := range strings.Fields(sec) {
			if strings.HasPrefix(w, "DOING-MARK-") || strings.HasPrefix(w, "NEXT-MARK-") || strings.HasPrefix(w, "PERSON-EDIT-") {
				out = append(out, strings.TrimRight(w, ".:"))
			}
		}
	}
	return out
}
