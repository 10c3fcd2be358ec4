package interactive

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/flowerhq/flower/front"
	"github.com/flowerhq/flower/transcript"
)

const apiErrorLine = `{"type":"assistant","sessionId":"s1","isSidechain":false,"isApiErrorMessage":true,"error":"unknown","message":{"id":"synthetic","model":"<synthetic>","content":[{"type":"text","text":"API Error: Request was aborted."}],"usage":{"input_tokens":0}}}`

// TestNextTranslatesAfterTheDecision: the harness has stated a whole turn
// (its prompt, a reply that runs a tool, then an error reply) before the
// engine reads any of it. The engine cuts on the reply; the error reply
// reads as the cut turn's interrupted end, with one Esc pressed, only
// because Next translates it after the cut. A front that translated ahead
// would have ended the turn as an error before the cut, and pressed no Esc.
func TestNextTranslatesAfterTheDecision(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		k := &keyLog{start: time.Now()}
		g := &Gate{}
		g.Attach(k)
		defer g.Close()
		s := sendSession(t.Context(), g)
		now := time.Now()
		for _, l := range []string{promptLine("go on"), replyLine("m1", "running a tool", "tool_use"), apiErrorLine} {
			ev, err := transcript.Decode([]byte(l))
			if err != nil {
				t.Fatal(err)
			}
			s.in.add(input{at: now, ev: &ev})
		}
		s.in.add(input{at: now, exit: true})
		s.in.close()
		var ends []front.TurnEnded
		for {
			f, err := s.Next(context.Background())
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			switch f := f.(type) {
			case front.Round:
				if err := s.Cut(); err != nil {
					t.Fatal(err)
				}
			case front.TurnEnded:
				ends = append(ends, f)
			}
		}
		if len(ends) != 1 || ends[0].How != front.EndedInterrupted {
			t.Errorf("turn ends %+v, want one, interrupted", ends)
		}
		if got := k.got(); got != `0s "\x1b"` {
			t.Errorf("keys %q, want one Esc", got)
		}
	})
}

// TestNextEndsOnTheIdleSignOnTheClock: with nothing more written, Next
// itself returns the turn's end once the idle sign has settled, on the
// bubble's clock, and not a moment before.
func TestNextEndsOnTheIdleSignOnTheClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := sendSession(t.Context(), &Gate{})
		start := time.Now()
		for _, l := range []string{promptLine("go on"), replyLine("m1", "done", "end_turn")} {
			ev, _ := transcript.Decode([]byte(l))
			s.in.add(input{at: start, ev: &ev})
		}
		s.in.add(input{at: start, status: "idle"})
		for {
			f, err := s.Next(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if e, ok := f.(front.TurnEnded); ok {
				if e.How != front.EndedOnOwn || e.Text != "done" {
					t.Errorf("turn end %+v, want on its own with its reply", e)
				}
				if d := time.Since(start); d != idleSettle {
					t.Errorf("the turn ended %v after the idle, want %v", d, idleSettle)
				}
				return
			}
		}
	})
}

// TestNextNamesTheSessionFromTheStateFile: the session the state file
// names before any line is the translation's first fact; once a session is
// named, the state file naming another changes nothing (a person's /clear
// is a SessionSwitched, once its transcript exists).
func TestNextNamesTheSessionFromTheStateFile(t *testing.T) {
	tr := NewTranslation(front.WallClock{}, slog.New(slog.DiscardHandler), DefaultSubmitTimeout, "", nil)
	tr.Named("s1")
	ev, err := transcript.Decode([]byte(promptLine("go on")))
	if err != nil {
		t.Fatal(err)
	}
	tr.Line(ev)
	tr.Named("s2")
	tr.Exited()
	var got []string
	for {
		f, err := tr.Next(context.Background())
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		switch f := f.(type) {
		case front.Init:
			got = append(got, "Init "+f.SessionID)
		case front.UserMessage:
			got = append(got, "UserMessage "+f.Text)
		case front.TurnEnded:
			got = append(got, "TurnEnded "+f.SessionID)
		}
	}
	want := []string{"Init s1", "UserMessage go on", "TurnEnded s1"}
	if strings.Join(got, "; ") != strings.Join(want, "; ") {
		t.Errorf("facts %q, want %q", got, want)
	}
}
