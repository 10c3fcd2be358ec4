package interactive

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/flowerhq/flower/front"
	"github.com/flowerhq/flower/transcript"
)

// Lines as the pinned harness writes them to its transcript (package doc).
func promptLine(text string) string {
	return fmt.Sprintf(`{"type":"user","sessionId":"s1","isSidechain":false,"message":{"role":"user","content":%q}}`, text)
}

func replyLine(id, text, stop string) string {
	return fmt.Sprintf(`{"type":"assistant","sessionId":"s1","isSidechain":false,"message":{"id":%q,"model":"m","stop_reason":%q,`+
		`"content":[{"type":"text","text":%q}],"usage":{"input_tokens":100,"cache_read_input_tokens":9000,"output_tokens":5}}}`, id, stop, text)
}

const (
	turnDurationLine = `{"type":"system","subtype":"turn_duration","sessionId":"s1"}`
	interruptedLine  = `{"type":"user","sessionId":"s1","isSidechain":false,"message":{"role":"user","content":[{"type":"text","text":"[Request interrupted by user for tool use]"}]}}`
	overflowLine     = `{"type":"assistant","sessionId":"s1","isSidechain":false,"isApiErrorMessage":true,"error":"invalid_request","message":{"id":"synthetic","model":"<synthetic>","content":[{"type":"text","text":"Prompt is too long"}],"usage":{"input_tokens":0}}}`
)

// step is one thing the harness states, or the front does, at a moment of
// the row's fake clock.
type step struct {
	at     time.Duration
	line   string // a transcript line
	status string // the state file's status
	send   string // a prompt the front typed (Send), now typed
	cut    bool   // the engine's Cut (or StopTool, Cancel)
	exit   bool   // the harness exited
	// wantEsc: the step presses Esc (a cut, or the prompt of a turn cut
	// while on its way).
	wantEsc bool
}

// ended is a TurnEnded and the moment it came, on the row's clock.
type ended struct {
	at   time.Duration
	how  front.Ending
	text string // contained in TurnEnded.Text
}

// runTurns drives the translator with the row's steps, as follow does: what
// waits on the clock (turns.due) runs at the moment it waits for, before a
// later step.
func runTurns(t *testing.T, steps []step) []ended {
	t0 := time.Date(2026, 12, 1, 3, 0, 0, 0, time.UTC)
	u := &turns{log: slog.New(slog.DiscardHandler), submitWithin: DefaultSubmitTimeout}
	var got []ended
	take := func(at time.Time, facts []front.Fact) {
		for _, f := range facts {
			if e, ok := f.(front.TurnEnded); ok {
				got = append(got, ended{at.Sub(t0), e.How, e.Text})
			}
		}
	}
	until := func(at time.Time) {
		for n := u.next(); !n.IsZero() && !n.After(at); n = u.next() {
			take(n, u.due(n))
		}
	}
	for i, s := range steps {
		now := t0.Add(s.at)
		until(now)
		esc := false
		switch {
		case s.line != "":
			ev, err := transcript.Decode([]byte(s.line))
			if err != nil {
				t.Fatalf("step %d: %v", i, err)
			}
			var facts []front.Fact
			facts, esc = u.line(&ev, now)
			take(now, facts)
		case s.status != "":
			u.sawStatus(s.status, now)
		case s.send != "":
			p := &pendingPrompt{kind: front.TurnWork, text: promptText(s.send)}
			u.pending = p
			u.typed(p, nil, now)
		case s.cut:
			esc = u.interrupt() == ""
		case s.exit:
			take(now, u.exited())
		}
		if esc != s.wantEsc {
			t.Errorf("step %d (%+v): Esc %v, want %v", i, s, esc, s.wantEsc)
		}
	}
	until(t0.Add(time.Hour))
	return got
}

// TestTurnsFromWhatTheHarnessStates: each turn end the interactive front
// reports comes from its harness's transcript, state file or exit, at the
// moment the clock says; a typed prompt that never shows up makes none.
func TestTurnsFromWhatTheHarnessStates(t *testing.T) {
	ms := time.Millisecond
	rows := []struct {
		name  string
		steps []step
		want  []ended
	}{
		{"a turn_duration line ends it on its own", []step{
			{at: 0, status: "busy"}, {at: 10 * ms, line: promptLine("go on")},
			{at: 200 * ms, line: replyLine("m1", "done", "end_turn")}, {at: 210 * ms, line: turnDurationLine},
			{at: 250 * ms, status: "idle"},
		}, []ended{{210 * ms, front.EndedOnOwn, "done"}}},
		{"the state file's idle after the last reply ends it, idleSettle later", []step{
			{at: 0, status: "busy"}, {at: 10 * ms, line: promptLine("go on")},
			{at: 200 * ms, line: replyLine("m1", "done", "end_turn")}, {at: 250 * ms, status: "idle"},
		}, []ended{{250*ms + idleSettle, front.EndedOnOwn, "done"}}},
		{"a line written after the idle moves the idle sign on", []step{
			{at: 0, status: "busy"}, {at: 10 * ms, line: promptLine("go on")},
			{at: 200 * ms, line: replyLine("m1", "first", "end_turn")}, {at: 250 * ms, status: "idle"},
			{at: 1000 * ms, line: replyLine("m1", "first", "end_turn")},
		}, []ended{{1000*ms + idleSettle, front.EndedOnOwn, "first"}}},
		{"a late turn_duration inside the settle says how it ended", []step{
			{at: 0, status: "busy"}, {at: 10 * ms, line: promptLine("go on")},
			{at: 200 * ms, line: replyLine("m1", "done", "end_turn")}, {at: 250 * ms, status: "idle"},
			{at: 1400 * ms, line: turnDurationLine},
		}, []ended{{1400 * ms, front.EndedOnOwn, "done"}}},
		{"idle during a tool with no Esc and no end is an error", []step{
			{at: 0, status: "busy"}, {at: 10 * ms, line: promptLine("go on")},
			{at: 200 * ms, line: replyLine("m1", "running a tool", "tool_use")}, {at: 300 * ms, status: "idle"},
		}, []ended{{300*ms + idleSettle, front.EndedError, "went idle"}}},
		{"a cut: one Esc, the interrupt note ends the turn", []step{
			{at: 0, status: "busy"}, {at: 10 * ms, line: promptLine("go on")},
			{at: 200 * ms, line: replyLine("m1", "running a tool", "tool_use")},
			{at: 300 * ms, cut: true, wantEsc: true}, {at: 310 * ms, cut: true},
			{at: 400 * ms, line: interruptedLine}, {at: 450 * ms, status: "idle"},
		}, []ended{{400 * ms, front.EndedInterrupted, ""}}},
		{"a cut after the last reply ended the turn presses nothing", []step{
			{at: 0, status: "busy"}, {at: 10 * ms, line: promptLine("go on")},
			{at: 200 * ms, line: replyLine("m1", "done", "end_turn")},
			{at: 220 * ms, cut: true}, {at: 230 * ms, line: turnDurationLine},
		}, []ended{{230 * ms, front.EndedOnOwn, "done"}}},
		{"a cut while the prompt is on its way: Esc when it shows, idle after Esc", []step{
			{at: 0, send: "the next task"}, {at: 10 * ms, cut: true},
			{at: 500 * ms, status: "busy"}, {at: 510 * ms, line: promptLine("the next task"), wantEsc: true},
			{at: 800 * ms, status: "idle"},
		}, []ended{{800*ms + idleSettle, front.EndedInterrupted, ""}}},
		{"the writing turn ends on its own with the document", []step{
			{at: 0, send: "write the handoff\n\nin the form below"}, {at: 100 * ms, status: "busy"},
			{at: 120 * ms, line: promptLine("write the handoff\n in the form below")},
			{at: 900 * ms, line: replyLine("m2", "# the handoff", "end_turn")},
			{at: 910 * ms, line: turnDurationLine}, {at: 950 * ms, status: "idle"},
		}, []ended{{910 * ms, front.EndedOnOwn, "# the handoff"}}},
		{"an overflow reply ends it as an overflow", []step{
			{at: 0, status: "busy"}, {at: 10 * ms, line: promptLine("go on")}, {at: 40 * ms, line: overflowLine},
		}, []ended{{40 * ms, front.EndedOverflow, "Prompt is too long"}}},
		{"the exit during a cut turn ends it interrupted", []step{
			{at: 0, status: "busy"}, {at: 10 * ms, line: promptLine("go on")},
			{at: 200 * ms, line: replyLine("m1", "running a tool", "tool_use")},
			{at: 300 * ms, cut: true, wantEsc: true}, {at: 2 * time.Second, exit: true},
		}, []ended{{2 * time.Second, front.EndedInterrupted, "exited"}}},
		{"a prompt after the idle sign ends the turn its transcript did not mark", []step{
			{at: 0, status: "busy"}, {at: 10 * ms, line: promptLine("go on")},
			{at: 200 * ms, line: replyLine("m1", "first", "end_turn")}, {at: 250 * ms, status: "idle"},
			{at: 400 * ms, status: "busy"}, {at: 410 * ms, line: promptLine("and then")},
			{at: 600 * ms, line: replyLine("m2", "second", "end_turn")}, {at: 610 * ms, line: turnDurationLine},
		}, []ended{{410 * ms, front.EndedOnOwn, "first"}, {610 * ms, front.EndedOnOwn, "second"}}},
		{"a prompt with no idle before it is the same turn's", []step{
			{at: 0, status: "busy"}, {at: 10 * ms, line: promptLine("go on")},
			{at: 200 * ms, line: replyLine("m1", "first", "end_turn")}, {at: 410 * ms, line: promptLine("and then")},
			{at: 600 * ms, line: replyLine("m2", "second", "end_turn")}, {at: 610 * ms, line: turnDurationLine},
		}, []ended{{610 * ms, front.EndedOnOwn, "second"}}},
		{"the exit after the last reply, with no end marked, ends it on its own", []step{
			{at: 0, status: "busy"}, {at: 10 * ms, line: promptLine("go on")},
			{at: 200 * ms, line: replyLine("m1", "done", "end_turn")}, {at: 300 * ms, exit: true},
		}, []ended{{300 * ms, front.EndedOnOwn, "done"}}},
		{"a typed prompt that never shows up makes no turn end; shown late, it is a turn", []step{
			{at: 0, send: "LOST"}, {at: time.Minute, status: "busy"},
			{at: time.Minute + 10*ms, line: promptLine("LOST")},
			{at: time.Minute + 20*ms, line: replyLine("m1", "late", "end_turn")},
			{at: time.Minute + 30*ms, line: turnDurationLine},
		}, []ended{{time.Minute + 30*ms, front.EndedOnOwn, "late"}}},
	}
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			got := runTurns(t, r.steps)
			if len(got) != len(r.want) {
				t.Fatalf("turn ends %+v, want %+v", got, r.want)
			}
			for i, w := range r.want {
				if g := got[i]; g.at != w.at || g.how != w.how || !strings.Contains(g.text, w.text) {
					t.Errorf("turn end %d: %+v, want %+v", i, g, w)
				}
			}
		})
	}
}

// keyLog is a harness's input that records when each write came, on the
// bubble's clock.
type keyLog struct {
	mu    sync.Mutex
	start time.Time
	keys  []string
}

func (k *keyLog) Write(p []byte) (int, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.keys = append(k.keys, fmt.Sprintf("%v %q", time.Since(k.start), p))
	return len(p), nil
}

func (k *keyLog) got() string {
	k.mu.Lock()
	defer k.mu.Unlock()
	return strings.Join(k.keys, "\n")
}

// sendSession is a session with no harness behind it: Send's keys go to
// k through a Gate, on the clock of the synctest bubble it runs in.
func sendSession(ctx context.Context, g *Gate) *session {
	log := slog.New(slog.DiscardHandler)
	f := &Front{opts: Options{SubmitTimeout: DefaultSubmitTimeout, Clock: front.WallClock{}}, gate: g, log: log}
	s := &session{f: f, log: log, ctx: ctx, wake: make(chan struct{}, 1)}
	s.translate("")
	return s
}

// TestSendTypesAfterTheDoublePressWindow: Send's keys on the fake clock: it
// waits for the state file's idle, empties the input with a Ctrl-C (two for
// the writing turn), each followed by the double-press window, then types
// the prompt as a paste and submits it after the settle; the prompt is
// awaited from then on.
func TestSendTypesAfterTheDoublePressWindow(t *testing.T) {
	for _, r := range []struct {
		kind front.TurnKind
		busy time.Duration // the state file says busy this long after Send
		want []string
	}{
		{front.TurnWork, 0, []string{`0s "\x03"`, `1.2s "\x1b[200~go on\x1b[201~"`, `1.54s "\r"`}},
		{front.TurnWriting, 0, []string{`0s "\x03"`, `1.2s "\x03"`, `2.4s "\x1b[200~go on\x1b[201~"`, `2.74s "\r"`}},
		{front.TurnWork, 5 * time.Second, []string{`5s "\x03"`, `6.2s "\x1b[200~go on\x1b[201~"`, `6.54s "\r"`}},
	} {
		t.Run(fmt.Sprintf("%v after %v busy", r.kind, r.busy), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				k := &keyLog{start: time.Now()}
				g := &Gate{}
				g.Attach(k)
				defer g.Close()
				s := sendSession(t.Context(), g)
				if r.busy > 0 {
					s.busy = make(chan struct{})
					go func() {
						time.Sleep(r.busy)
						s.mu.Lock()
						close(s.busy)
						s.busy = nil
						s.mu.Unlock()
					}()
				}
				if err := s.Send(front.Turn{Kind: r.kind, Prompt: "go on"}); err != nil {
					t.Fatal(err)
				}
				if got, want := k.got(), strings.Join(r.want, "\n"); got != want {
					t.Errorf("keys:\n%s\nwant:\n%s", got, want)
				}
				if p := s.u.pending; p == nil || p.text != "go on" || p.by != time.Now().Add(DefaultSubmitTimeout) {
					t.Errorf("pending prompt %+v, want go on awaited for %v", p, DefaultSubmitTimeout)
				}
			})
		})
	}
}

var _ io.Writer = (*keyLog)(nil)

// The main thread's request written again with no reply between is a
// retry of the harness's own: a blind Retrying each time, counted from 1;
// a reply starts the count over, and a subagent's or another request's
// line is none. The harness's refusal of the key (its error reply, no
// status in the file) ends the turn saying NoCredentials.
func TestTurnsSeeTheHarnessRetry(t *testing.T) {
	u := &turns{log: slog.New(slog.DiscardHandler), submitWithin: DefaultSubmitTimeout}
	now := time.Date(2026, 12, 1, 3, 0, 0, 0, time.UTC)
	request := func(source, digest string) string {
		return fmt.Sprintf(`{"type":"api-request","sessionId":"s1","querySource":%q,"requestDigest":%q}`, source, digest)
	}
	var retries []int
	var ends []front.TurnEnded
	feed := func(line string) {
		ev, err := transcript.Decode([]byte(line))
		if err != nil {
			t.Fatal(err)
		}
		facts, _ := u.line(&ev, now)
		for _, f := range facts {
			switch f := f.(type) {
			case front.Retrying:
				if !f.Blind || f.Status != 0 {
					t.Errorf("retry %+v: want blind, no status", f)
				}
				retries = append(retries, f.Attempt)
			case front.TurnEnded:
				ends = append(ends, f)
			}
		}
	}
	feed(promptLine("say hello"))
	for _, l := range []string{request("repl_main_thread", "d1"), request("repl_main_thread", "d1"), request("agent:x", "d1"),
		request("repl_main_thread", "d1"), replyLine("m1", "Hello.", "tool_use"), request("repl_main_thread", "d1"),
		request("repl_main_thread", "d2"), request("repl_main_thread", "d2")} {
		feed(l)
	}
	if want := []int{1, 2, 1}; fmt.Sprint(retries) != fmt.Sprint(want) {
		t.Errorf("retries %v, want %v", retries, want)
	}
	feed(`{"type":"assistant","sessionId":"s1","isSidechain":false,"isApiErrorMessage":true,"error":"authentication_failed","message":{"id":"x","model":"<synthetic>","content":[{"type":"text","text":"Invalid API key · Fix external API key"}],"usage":{"input_tokens":0}}}`)
	if len(ends) != 1 || ends[0].How != front.EndedError || !ends[0].NoCredentials {
		t.Errorf("turn ends %+v: want one error saying NoCredentials", ends)
	}
}
