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
	retiring    bool // the engine cut it: nothing of it reaches the application any more
	stopped     bool
	ended       bool // its cost is booked in r.costBefore
	inputClosed bool // closed because the application closed its input
	cutSeen     bool // the cut turn's result came
	writing     bool // the engine sent the writing turn
	cutTurns    int
	cutCost     float64
	cost        float64 // total_cost_usd so far (cumulative per process)
	sessionID   string  // the latest the harness reported
	held        [][]byte
	swallow     int // results of turns whose end was made up, to keep from the engine

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

// user passes one of the application's user messages on, and shows it to
// the engine, which learns the step's task from the first. Called with
// r.mu held.
func (s *session) user(line []byte) {
	s.forward(line)
	if ev, err := transcript.Decode(line); err == nil {
		ev.SessionID = "" // the application's, not the harness's
		ev.Raw = line
		s.eq.push(ev)
	}
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
		r.mu.Lock()
		swallow := s.swallow > 0
		if swallow {
			s.swallow--
			s.cost = max(s.cost, ev.TotalCostUSD)
		}
		r.mu.Unlock()
		if swallow {
			return // the turn's end was made up already (see enforced)
		}
		s.waitAck(s.eq.push(ev))
		r.result(s, ev)
		return
	}
	if s.enforced(ev) {
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
	s.waitAck(s.eq.push(ev))
}

// result passes a turn's result on, once the engine let the session go on:
// with the cost of every harness so far and flower's own summary. The
// results of a cut session are kept back.
func (r *Relay) result(s *session, ev transcript.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s.cost = max(s.cost, ev.TotalCostUSD)
	held := s.held
	s.held = nil
	if s.hidden() {
		if s.retiring && !s.cutSeen {
			s.cutSeen, s.cutTurns, s.cutCost = true, ev.NumTurns, ev.TotalCostUSD
		}
		return
	}
	for _, line := range held {
		r.write(line)
	}
	s.passInterrupts() // the turn ended before a reply: they find nothing to stop
	r.write(patchResult(ev.Raw, r.costBefore+s.cost, r.summary()))
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

// enforced translates the end of the writing turn's reply under
// --json-schema: the harness would force a StructuredOutput call on the
// handoff document and run on. The model's reply is over, so the turn is,
// as far as the engine goes: a result is made up for it, and the harness
// is interrupted (its own result for the turn is kept from the engine).
func (s *session) enforced(ev transcript.Event) bool {
	if ev.Kind != transcript.KindUser || !strings.HasPrefix(strings.TrimSpace(transcript.UserText(&ev)), enforceMark) {
		return false
	}
	s.r.mu.Lock()
	writing := s.writing && !s.stopped
	if writing {
		s.swallow++
	}
	s.r.mu.Unlock()
	if !writing {
		return false
	}
	s.log.Info("the writing turn's reply ended; the harness would force a StructuredOutput call: ending the turn")
	_ = s.p.Interrupt()
	s.waitAck(s.eq.push(transcript.Event{Kind: transcript.KindResult, Type: "result", Subtype: "success",
		SessionID: ev.SessionID, TerminalReason: "completed"}))
	return true
}

// waitAck waits until the engine has handled the record numbered seq, or
// the session is over.
func (s *session) waitAck(seq int) {
	for {
		s.ackMu.Lock()
		n := s.acks
		s.ackMu.Unlock()
		if n >= seq {
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

// Handled: the engine went on after the record it received last.
func (s *session) Handled() {
	s.ackMu.Lock()
	s.acks++
	s.ackMu.Unlock()
	select {
	case s.ackCh <- struct{}{}:
	default:
	}
}

// replayTimeout bounds the answer to one replayed request.
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

func (s *session) Records() <-chan transcript.Event { return s.eq.out }

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

// Send is the engine's turn: the relay starts no harness early and the
// application sends the work turns, so the engine's only turn is the
// writing turn, after a cut. Nothing of it reaches the application.
func (s *session) Send(prompt string) error {
	s.r.mu.Lock()
	s.writing = true
	s.r.mu.Unlock()
	return s.p.SendUser(prompt)
}

// Cut is the engine's cut: from here on the session is retiring, and
// nothing of it reaches the application.
func (s *session) Cut() error { return s.retire() }

// Cancel ends the attempt without a handoff: the session retires as on a
// cut, since the engine gives up on it.
func (s *session) Cancel() error { return s.retire() }

// StopTool interrupts the writing turn, whose session is retiring already.
func (s *session) StopTool() error { return s.p.Interrupt() }

func (s *session) retire() error {
	s.r.mu.Lock()
	s.retiring = true
	s.r.mu.Unlock()
	return s.p.Interrupt()
}

func (s *session) EndAfterTurn() error { return s.p.CloseInput() }

// Stop ends the harness; its cost and, for a cut session, what its cut turn
// used are booked for the results and budgets that follow.
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
		if s.retiring && s.cutSeen {
			r.usedTurns += s.cutTurns
			r.usedCost += s.cutCost
		} else {
			r.usedCost += s.cost
		}
	}
	r.mu.Unlock()
}

func (s *session) Probe(ctx context.Context) (gjson.Result, error) {
	return s.p.Control(ctx, "get_context_usage")
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
