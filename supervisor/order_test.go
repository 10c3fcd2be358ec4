package supervisor

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/flowerhq/flower/front"
	"github.com/flowerhq/flower/front/fronttest"
	"github.com/flowerhq/flower/interactive"
	"github.com/flowerhq/flower/manifest"
	"github.com/flowerhq/flower/transcript"
)

// TestDecidedBeforeNextFact: the engine has decided on a fact before the
// front translates the next record (DESIGN.md «Fronts»). The harness here
// has written a whole work turn before the engine reads any of it, as a
// harness under load has: the round over the threshold, then the turn's
// result, which does not say it was interrupted (is_error false, no stop
// reason). The engine cuts on the round; the result, translated only once
// the engine asks for it, is then the cut turn's interrupted end, and the
// writing turn follows. A front that translated the result before the
// engine had decided on the round would read it as the turn's own end, and
// the step would end there with nothing handed off. The front also counts
// a fact asked for while the round awaits its cut: the engine must not ask
// before it has decided.
//
// The same holds of the interactive front's translation (the harness's own
// screen, fronttest's too): its harness has written the turn to its
// transcript, the round over the threshold and then the error reply the
// screen shows for a request cut short. Translated after the engine's cut
// (its Esc), that reply is the cut turn's interrupted end; translated
// before, the turn's error.
func TestDecidedBeforeNextFact(t *testing.T) {
	for _, screen := range []bool{false, true} {
		name := "stream-json records"
		if screen {
			name = "the harness's own screen"
		}
		t.Run(name, func(t *testing.T) { decidedBeforeNextFact(t, screen) })
	}
}

func decidedBeforeNextFact(t *testing.T, screen bool) {
	synctest.Test(t, func(t *testing.T) {
		ws := filepath.Join(memTempDir(t), "ws")
		if err := os.MkdirAll(ws, 0o755); err != nil {
			t.Fatal(err)
		}
		fr := &aheadFront{screen: screen}
		rt, err := New(Options{Workspace: ws, RunDir: filepath.Join(ws, ".flower", "runs", "order"), Workbench: true,
			Front: fr, HarnessPath: "claude", Env: []string{"HOME=" + ws}, InboxPostsOnly: true, Handoff: window(200_000)})
		if err != nil {
			t.Fatal(err)
		}
		st, err := rt.RunStep(t.Context(), memStep, memTask)
		if err != nil {
			t.Fatalf("RunStep: %v", err)
		}
		if len(st.Generations) != 2 || st.Generations[0].Handoff == nil {
			t.Fatalf("%d generations, first handoff %+v: want the cut turn's result read as interrupted and a handoff", len(st.Generations), st.Generations[0].Handoff)
		}
		if h := st.Generations[0].Handoff; h.Reason != manifest.ReasonThreshold || h.Degraded {
			t.Errorf("handoff %+v: want a whole one at the threshold", h)
		}
		if fr.cuts != 1 {
			t.Errorf("%d interrupts, want the one cut", fr.cuts)
		}
		if fr.early != 0 {
			t.Errorf("the engine asked for %d fact(s) before it had decided on the round over the threshold", fr.early)
		}
	})
}

// aheadFront is a stream-json front, read with front.Records, whose
// harness writes each turn's records at once, before the engine reads
// them; with screen, the front of the harness's own screen, read with the
// interactive front's translation, whose harness writes each turn to its
// transcript at once (fronttest.Screen).
type aheadFront struct {
	screen   bool
	mu       sync.Mutex
	launched int
	cuts     int
	// early counts the facts asked for before the engine had decided on
	// the round over the threshold.
	early int
}

func (f *aheadFront) Capabilities() front.Capabilities {
	return front.Capabilities{Resumes: true, OutsideTurns: f.screen, PersonTypes: f.screen}
}

func (f *aheadFront) Launch(ctx context.Context, s front.Spec) (front.Session, error) {
	f.mu.Lock()
	f.launched++
	n := f.launched
	f.mu.Unlock()
	ch := make(chan transcript.Event, 64)
	as := &aheadSession{f: f, n: n, sid: fmt.Sprintf("ahead-%d", n), prompt: s.Prompt, ch: ch, rec: front.NewRecords(ch, s.Now)}
	if f.screen {
		// An Esc the translation presses itself (for a turn cut while its
		// prompt was on its way) is a cut too.
		as.scr = interactive.NewTranslation(front.WallClock{}, slog.New(slog.DiscardHandler), interactive.DefaultSubmitTimeout, "", as.esc)
	}
	return as, nil
}

type aheadSession struct {
	f *aheadFront
	// crossing: the round over the threshold was given to the engine.
	crossing bool
	n        int
	sid      string
	prompt   string // the first prompt, given at launch
	ch       chan transcript.Event
	rec      *front.Records
	scr      *interactive.Translation // the screen's, or nil
	closed   sync.Once
}

// Next returns the next fact, and notes a call that comes while the round
// over the threshold awaits the engine's decision (its cut).
func (s *aheadSession) Next(ctx context.Context) (front.Fact, error) {
	s.f.mu.Lock()
	if s.crossing && s.f.cuts == 0 {
		s.f.early++
	}
	s.f.mu.Unlock()
	var f front.Fact
	var err error
	if s.scr != nil {
		f, err = s.scr.Next(ctx)
	} else {
		f, err = s.rec.Next(ctx)
	}
	if r, ok := f.(front.Round); ok && r.Context >= 160_000 && s.n == 1 {
		s.f.mu.Lock()
		s.crossing = true
		s.f.mu.Unlock()
	}
	return f, err
}

// Begin writes the first turn; on the screen its prompt was given at
// launch.
func (s *aheadSession) Begin() error {
	if s.scr != nil {
		return s.turn(front.Turn{Kind: front.TurnWork, Prompt: s.prompt})
	}
	return s.Send(front.Turn{Kind: front.TurnWork})
}

// Send writes the whole turn; the front of the screen types its prompt.
func (s *aheadSession) Send(t front.Turn) error {
	if s.scr != nil {
		s.scr.Typing(t.Kind, t.Prompt)(nil)
		return s.turn(t)
	}
	return s.rec.Turn(func() error { return s.turn(t) })
}

// turn writes the whole turn t: the first generation's work turn crosses
// the threshold in a tool call and its result follows at once; its writing
// turn writes the handoff; the successor's turn ends the task, and on the
// screen the person then ends the harness. The screen's transcript has the
// prompt, and, where the request over the threshold was cut short, the
// error reply the screen shows for it.
func (s *aheadSession) turn(t front.Turn) error {
	s.write(map[string]any{"type": "system", "subtype": "init", "session_id": s.sid, "model": "claude-mem-1"})
	if s.scr != nil {
		s.write(map[string]any{"type": "user", "session_id": s.sid, "parent_tool_use_id": nil,
			"message": map[string]any{"role": "user", "content": t.Prompt}})
	}
	switch {
	case t.Kind == front.TurnWriting:
		s.write(s.reply("w", 160_500, memHandoff(0).Text, "end_turn", nil))
		s.write(s.result("end_turn"))
	case s.n == 1:
		s.write(s.reply("a", 20_000, "looking", "tool_use", bash("toolu_1", "ls")))
		s.write(map[string]any{"type": "user", "session_id": s.sid, "parent_tool_use_id": nil,
			"message": map[string]any{"role": "user", "content": []any{map[string]any{"type": "tool_result", "tool_use_id": "toolu_1", "content": "ok"}}}})
		s.write(s.reply("b", 160_000, "running make", "tool_use", bash("toolu_2", "make")))
		if s.scr != nil {
			s.write(map[string]any{"type": "assistant", "session_id": s.sid, "parent_tool_use_id": nil, "is_api_error_message": true,
				"error": "unknown", "message": map[string]any{"id": "synthetic", "model": "<synthetic>",
					"content": []any{map[string]any{"type": "text", "text": "API Error: Request was aborted."}}}})
		}
		s.write(s.result(nil))
	default:
		s.write(s.reply("c", 20_000, "All done: the task is complete.", "end_turn", nil))
		s.write(s.result("end_turn"))
		if s.scr != nil {
			s.close()
		}
	}
	return nil
}

func bash(id, cmd string) []any {
	return []any{map[string]any{"type": "tool_use", "id": id, "name": "Bash", "input": map[string]any{"command": cmd}}}
}

func (s *aheadSession) reply(id string, ctx int, text, stop string, tools []any) map[string]any {
	content := append([]any{map[string]any{"type": "text", "text": text}}, tools...)
	return map[string]any{"type": "assistant", "session_id": s.sid, "parent_tool_use_id": nil,
		"message": map[string]any{"id": fmt.Sprintf("msg_%d_%s", s.n, id), "model": "claude-mem-1", "content": content,
			"stop_reason": stop, "usage": map[string]any{"input_tokens": 100, "cache_read_input_tokens": ctx - 100, "output_tokens": 50}}}
}

func (s *aheadSession) result(stop any) map[string]any {
	r := map[string]any{"type": "result", "subtype": "success", "is_error": false, "result": "", "session_id": s.sid,
		"total_cost_usd": 0.01, "num_turns": 1, "stop_reason": stop}
	if stop == "end_turn" {
		r["terminal_reason"] = "completed"
	}
	return r
}

func (s *aheadSession) write(v map[string]any) {
	if s.scr != nil {
		fronttest.Screen(s.scr, v, true)
		return
	}
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	ev, err := transcript.Decode(b)
	if err != nil {
		panic(err)
	}
	s.ch <- ev
}

func (s *aheadSession) Cut() error      { return s.interrupt() }
func (s *aheadSession) StopTool() error { return s.interrupt() }
func (s *aheadSession) Cancel() error   { return s.interrupt() }

func (s *aheadSession) interrupt() error {
	if s.scr != nil {
		if s.scr.Interrupt() == "" {
			s.esc()
		}
		return nil
	}
	return s.rec.Interrupt(func() error {
		s.esc()
		return nil
	})
}

// esc is the harness's interrupt, counted.
func (s *aheadSession) esc() {
	s.f.mu.Lock()
	s.f.cuts++
	s.f.mu.Unlock()
}

func (s *aheadSession) EndAfterTurn() error { s.close(); return nil }
func (s *aheadSession) Stop()               { s.close() }
func (s *aheadSession) close() {
	s.closed.Do(func() {
		if s.scr != nil {
			s.scr.Exited()
			return
		}
		close(s.ch)
	})
}

// Exit: on the screen, the person ended the harness.
func (s *aheadSession) Exit() front.Exit {
	return front.Exit{Why: "the harness exited", ByPerson: s.scr != nil}
}
