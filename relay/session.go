package relay

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/flowerhq/flower/front"
	"github.com/flowerhq/flower/harness"
	"github.com/flowerhq/flower/transcript"
)

// session is one harness process under the relay: a front.Session for the
// engine, and a source of lines for the application.
type session struct {
	r    *Relay
	p    *harness.Process
	spec front.Spec
	kind launchKind
	log  *slog.Logger
	ctx  context.Context

	// Guarded by r.mu.
	begun       bool
	retiring    bool // Cut, Cancel or the writing turn: nothing of it reaches the application any more
	stopped     bool
	ended       bool    // its cost is booked in r.costBefore
	inputClosed bool    // closed because the application closed its input
	cut         bool    // the engine cut it (Cut)
	writing     bool    // the engine sent the writing turn (Send of a TurnWriting)
	cost        float64 // total_cost_usd so far (cumulative per process)
	// workCost and workTurns are the cost so far and the turns of the
	// last turn whose result came before the writing turn: what counts
	// against the application's --max-budget-usd and --max-turns.
	workCost  float64
	workTurns int
	sessionID string // the latest the harness reported
	held      [][]byte

	// tr translates the harness's records into facts. The reader feeds
	// it; Interrupting comes from the engine's goroutine (Cut, StopTool,
	// Cancel) or the reader's (the writing turn under --json-schema).
	trMu sync.Mutex
	tr   front.Translator

	eq       *queue
	ackMu    sync.Mutex
	acks     int
	ackCh    chan struct{}
	stopCh   chan struct{}
	stopOnce sync.Once
}

var (
	_ front.Session      = (*session)(nil)
	_ front.Prober       = (*session)(nil)
	_ front.Acknowledger = (*session)(nil)
)

func newSession(ctx context.Context, r *Relay, p *harness.Process, spec front.Spec, kind launchKind, log *slog.Logger) *session {
	s := &session{r: r, p: p, spec: spec, kind: kind, log: log, ctx: ctx, eq: newQueue(),
		ackCh: make(chan struct{}, 1), stopCh: make(chan struct{})}
	go s.eq.pump()
	return s
}

// hidden: nothing of the session reaches the application. Called with r.mu held.
func (s *session) hidden() bool { return s.retiring || s.stopped }

// forward writes one of the application's lines to the harness.
func (s *session) forward(line []byte) {
	if err := s.p.WriteLine(line); err != nil {
		s.log.Warn("pass a line of the application to the harness", "err", err)
	}
}

// user passes one of the application's user messages on, and tells the
// engine of the prompt the harness was given (the harness does not echo
// it): the engine learns the step's task from the first. Called with r.mu
// held.
func (s *session) user(line []byte) {
	s.forward(line)
	if ev, err := transcript.Decode(line); err == nil {
		ev.Raw = line
		s.eq.push(front.UserMessage{MainThread: ev.MainThread(), Text: transcript.UserText(&ev)})
	}
}

// translate gives the engine the facts of one of the harness's records and
// returns the number of the last.
func (s *session) translate(ev *transcript.Event) int {
	var facts []front.Fact
	s.trMu.Lock()
	s.tr.Facts(ev, func(f front.Fact) { facts = append(facts, f) })
	s.trMu.Unlock()
	return s.eq.push(facts...)
}

// pump reads the harness and passes each line to the application, the
// engine, or both. A line the engine may act on is passed on only once the
// engine has had its say, so that nothing of a cut session reaches the
// application.
func (s *session) pump() {
	defer s.eq.close()
	for ev := range s.p.Events() {
		s.take(ev)
	}
}

func (s *session) take(ev transcript.Event) {
	r := s.r
	if ev.SessionID != "" && ev.Kind != transcript.KindControlResponse {
		r.mu.Lock()
		s.sessionID = ev.SessionID
		r.mu.Unlock()
	}
	switch {
	case ev.Type == "control_request":
		r.mu.Lock()
		hidden := s.hidden()
		if passThrough[gjson.GetBytes(ev.Raw, "request.subtype").String()] {
			hidden = s.stopped
		}
		if !hidden {
			r.asked[gjson.GetBytes(ev.Raw, "request_id").String()] = s
		}
		r.mu.Unlock()
		if hidden {
			s.answer(ev.Raw)
			return
		}
		r.write(ev.Raw)
		return
	case ev.Kind == transcript.KindControlResponse:
		// Flower's own requests are answered to flower (harness.Request);
		// this one is the application's.
		r.write(ev.Raw)
		return
	case ev.Type == "control_cancel_request" || ev.Type == "stream_event":
		r.mu.Lock()
		hidden := s.hidden()
		r.mu.Unlock()
		if !hidden {
			r.write(ev.Raw)
		}
		return
	}
	if ev.Kind == transcript.KindResult {
		r.book(s, ev)
		s.waitAck(s.translate(&ev))
		r.result(s, ev)
		return
	}
	r.mu.Lock()
	switch {
	case s.hidden():
		s.log.Debug("kept from the application", "line", preview(ev.Raw))
	case ev.Kind == transcript.KindAssistant && ev.Synthetic():
		// An API error as a message ("Prompt is too long"): the engine may
		// hand off on the result that follows, and then the application
		// must not see it either.
		s.held = append(s.held, ev.Raw)
	default:
		idle := ev.Subtype == "session_state_changed" && gjson.GetBytes(ev.Raw, "state").String() == "idle"
		switch {
		case idle && (r.busy || len(r.queue) > 0 || r.done != nil):
			// A queued message is on its way, or a successor: the
			// application's run is not over.
		default:
			if ev.Kind == transcript.KindInit {
				r.doneLine(ev.SessionID)
			}
			r.write(ev.Raw)
			if ev.Kind == transcript.KindAssistant {
				s.passInterrupts()
			}
		}
	}
	r.mu.Unlock()
	seq := s.translate(&ev)
	s.enforced(&ev)
	s.waitAck(seq)
}

// book counts a turn's result before the engine hears of it (the engine's
// writing turn follows the cut turn's result): its cost, what a work turn
// used, and the result of the application's turn, kept in case the engine
// ends the step on a turn it cut (see Finish).
func (r *Relay) book(s *session, ev transcript.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s.cost = max(s.cost, ev.TotalCostUSD)
	if !s.writing {
		s.workCost, s.workTurns = s.cost, ev.NumTurns
		r.keptResult = ev.Raw
	}
}

// result passes a turn's result on, once the engine let the session go on:
// with the cost of every harness so far and flower's own summary. The
// results of a retiring session are kept back.
func (r *Relay) result(s *session, ev transcript.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	held := s.held
	s.held = nil
	if s.hidden() {
		return
	}
	for _, line := range held {
		r.write(line)
	}
	s.passInterrupts() // the turn ended before a reply: they find nothing to stop
	r.write(patchResult(ev.Raw, r.costBefore+s.cost, r.summary()))
	r.keptResult = nil
	if s == r.live {
		r.busy = false
		r.dispatch()
	}
}

// patchResult is the harness's result line as the application sees it: the
// step's cost so far in place of the session's own, and flower's summary
// added. The line is patched in place, so every other field keeps the
// harness's order and spelling; a line that is not a JSON object passes
// as it came.
func patchResult(raw []byte, cost float64, summary map[string]any) []byte {
	if !gjson.ValidBytes(raw) || !gjson.ParseBytes(raw).IsObject() {
		return raw
	}
	b, err := sjson.SetBytes(raw, "total_cost_usd", cost)
	if err != nil {
		return raw
	}
	if p, err := sjson.SetBytes(b, "flower", summary); err == nil {
		b = p
	}
	return b
}

// passThrough are the harness's requests the application answers even
// during the writing turn: credentials, without which the writing turn
// itself would fail.
var passThrough = map[string]bool{"oauth_token_refresh": true, "host_auth_token_refresh": true}

// answer replies to a callback the application must not see (one caused by
// the writing turn): a tool is refused, a hook lets things be.
func (s *session) answer(raw []byte) {
	id := gjson.GetBytes(raw, "request_id").String()
	sub := gjson.GetBytes(raw, "request.subtype").String()
	resp := map[string]any{"subtype": "success", "request_id": id}
	switch sub {
	case "can_use_tool":
		resp["response"] = map[string]any{"behavior": "deny", "message": "flower: a handoff is being written; no tools now"}
	case "hook_callback":
		resp["response"] = map[string]any{}
	default:
		resp = map[string]any{"subtype": "error", "request_id": id, "error": "flower: a handoff is being written"}
	}
	b, _ := json.Marshal(map[string]any{"type": "control_response", "response": resp})
	s.log.Info("answered a callback of a cut session", "subtype", sub, "request_id", id)
	s.forward(b)
}

// enforceMark starts the user line the harness adds when a reply ends
// without the StructuredOutput call --json-schema asks for.
const enforceMark = "[structured-output-enforce]"

// enforced ends the writing turn where its reply ends under --json-schema:
// the harness would go on and force a StructuredOutput call on the handoff
// document. The reply, the document, is over, so the relay interrupts the
// harness there; the harness's own result of the turn ends it for the
// engine (DESIGN.md «Agent SDK relay»).
func (s *session) enforced(ev *transcript.Event) {
	if ev.Kind != transcript.KindUser || !strings.HasPrefix(strings.TrimSpace(transcript.UserText(ev)), enforceMark) {
		return
	}
	s.r.mu.Lock()
	writing := s.writing && !s.stopped
	s.r.mu.Unlock()
	if !writing {
		return
	}
	s.log.Info("the writing turn's reply ended; the harness would force a StructuredOutput call: ending the turn")
	if err := s.interrupt(); err != nil {
		s.log.Warn("interrupt the writing turn", "err", err)
	}
}

// waitAck waits until the engine has handled the fact numbered seq, or
// nothing of the session can reach the application any more (the engine
// retired or stopped it: then there is nothing left to hold back), or the
// session is over.
func (s *session) waitAck(seq int) {
	for {
		s.ackMu.Lock()
		n := s.acks
		s.ackMu.Unlock()
		if n >= seq {
			return
		}
		s.r.mu.Lock()
		hidden := s.hidden()
		s.r.mu.Unlock()
		if hidden {
			return
		}
		select {
		case <-s.ackCh:
		case <-s.stopCh:
			return
		case <-s.ctx.Done():
			return
		}
	}
}

// wake makes waitAck look again.
func (s *session) wake() {
	select {
	case s.ackCh <- struct{}{}:
	default:
	}
}

// Handled: the engine went on after the fact it received last.
func (s *session) Handled() {
	s.ackMu.Lock()
	s.acks++
	s.ackMu.Unlock()
	s.wake()
}

// replayTimeout bounds the answer to one replayed request. The SDK
// protocol has no deadline of its own, and Launch, which replays, runs
// before any timer of the engine's: a harness that never answers would
// hold the step forever.
const replayTimeout = 60 * time.Second

// replay tells a new harness what the application told the ones before:
// its initialize and its lasting settings. The answers are flower's.
func (s *session) replay(ctx context.Context, requests []json.RawMessage) {
	for _, req := range requests {
		c, cancel := context.WithTimeout(ctx, replayTimeout)
		_, err := s.p.Request(c, req)
		cancel()
		sub := gjson.GetBytes(req, "subtype").String()
		if err != nil {
			s.log.Warn("replay a request of the application", "subtype", sub, "err", err)
			continue
		}
		s.log.Info("replayed a request of the application", "subtype", sub)
	}
}

func (s *session) Facts() <-chan front.Fact { return s.eq.out }

// Begin starts the generation's first turn: a successor's handoff prompt,
// or a retry's note when the application's turn was running. The
// application's messages waiting for it follow.
func (s *session) Begin() error {
	r := s.r
	r.mu.Lock()
	defer r.mu.Unlock()
	s.begun = true
	var err error
	if prompt := s.spec.Prompt; prompt != "" && (s.kind != kindRetry || r.busy) {
		err = s.p.SendUser(prompt)
		r.busy = true
	}
	r.dispatch()
	return err
}

// passInterrupts gives the successor the interrupts the application sent
// during the handoff, once the turn they interrupt has begun in it (the
// model has the handoff): sooner, the harness would drop the handoff prompt
// unseen. Called with r.mu held.
func (s *session) passInterrupts() {
	if !s.begun || s.hidden() || len(s.r.interrupt) == 0 {
		return
	}
	for _, line := range s.r.interrupt {
		s.forward(line)
	}
	s.r.interrupt = nil
}

// Send runs a turn of the engine's, a user line on the harness's stdin.
// The writing turn (the engine's only turn here, since the application
// sends the work turns and no harness starts early) is flower's: from it
// on, nothing of the session reaches the application. A work turn the
// engine might send is shown to the application as Begin's prompt is, the
// continuation of its own turn.
func (s *session) Send(t front.Turn) error {
	r := s.r
	r.mu.Lock()
	if t.Kind == front.TurnWriting {
		s.writing, s.retiring = true, true
	} else {
		r.busy = true
	}
	r.mu.Unlock()
	s.wake()
	return s.p.SendUser(t.Prompt)
}

// Cut ends the running turn for a handoff: the session retires, nothing
// more of it reaches the application, and the turn goes on in the
// successor, whose result answers the application's turn.
func (s *session) Cut() error {
	s.r.mu.Lock()
	s.retiring, s.cut = true, true
	s.r.mu.Unlock()
	return s.interrupt()
}

// Cancel ends the running turn because the attempt ends without a handoff:
// the session retires as on a cut. The step ends then, and Finish gives
// the application the result it waits for; the harness's own, let
// through, would end the application's run before it.
func (s *session) Cancel() error {
	s.r.mu.Lock()
	s.retiring = true
	s.r.mu.Unlock()
	return s.interrupt()
}

// StopTool interrupts the writing turn, whose session is retiring already.
func (s *session) StopTool() error { return s.interrupt() }

// interrupt ends the running turn at the next message boundary: the
// translator first learns that the turn's end is flower's doing, then the
// harness gets its interrupt request.
func (s *session) interrupt() error {
	s.trMu.Lock()
	s.tr.Interrupting()
	s.trMu.Unlock()
	s.wake()
	return s.p.Interrupt()
}

func (s *session) EndAfterTurn() error { return s.p.CloseInput() }

// Stop ends the harness; its cost and what its work turns used are booked
// for the results and budgets that follow (the writing turn is exempt).
func (s *session) Stop() {
	r := s.r
	r.mu.Lock()
	s.stopped = true
	if r.live == s {
		r.live = nil
	}
	r.mu.Unlock()
	s.stopOnce.Do(func() { close(s.stopCh) })
	s.p.Stop()
	r.mu.Lock()
	if !s.ended {
		s.ended = true
		r.costBefore += s.cost
		r.usedCost += s.workCost
		if s.cut {
			r.usedTurns += s.workTurns
		}
	}
	r.mu.Unlock()
}

// Probe asks the harness for its view of the context (get_context_usage).
func (s *session) Probe(ctx context.Context) (transcript.ContextUsage, error) {
	res, err := s.p.Control(ctx, "get_context_usage")
	if err != nil {
		return transcript.ContextUsage{}, err
	}
	return transcript.ContextUsageOf(res), nil
}

// Exit: a harness whose input flower closed because the application closed
// its own ended as the application wished.
func (s *session) Exit() front.Exit {
	<-s.p.Done()
	s.r.mu.Lock()
	byApp := s.inputClosed
	s.r.mu.Unlock()
	why := "the harness exited"
	if !byApp {
		why += " before the application was done"
	}
	if err := s.p.Err(); err != nil {
		why += " (" + err.Error() + ")"
	}
	if tail := lastLine(s.p.Stderr()); tail != "" {
		why += ": " + tail
	}
	return front.Exit{Why: why, ByPerson: byApp, Skipped: s.p.Skipped()}
}
