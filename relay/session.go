package relay

import (
	"context"
	"encoding/json"
	"io"
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

	// Next reads the harness, one line when the engine asks for a fact
	// and none is left; once the session is released, pumpReleased does.
	// stepMu makes each line's reading whole; qMu guards the facts not
	// yet returned (the application's prompts come from its own reader),
	// and after, what waits for the engine's decision on them.
	stepMu sync.Mutex
	back   front.Backlog // the lines Sync took; stepMu guards it
	qMu    sync.Mutex
	q      []front.Fact
	eof    bool
	// pushed and given count the facts queued and returned; after runs
	// once the engine asks past the fact numbered afterAt.
	pushed, given int
	after         func()
	afterAt       int
	added         chan struct{}
	released      chan struct{}
	release       sync.Once
}

var (
	_ front.Session = (*session)(nil)
	_ front.Prober  = (*session)(nil)
	_ front.Syncer  = (*session)(nil)
)

func newSession(ctx context.Context, r *Relay, p *harness.Process, spec front.Spec, kind launchKind, log *slog.Logger) *session {
	s := &session{r: r, p: p, spec: spec, kind: kind, log: log, ctx: ctx,
		added: make(chan struct{}, 1), released: make(chan struct{})}
	// A relay whose context ended decides nothing more on the session.
	context.AfterFunc(ctx, s.releaseFacts)
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
		s.queue(front.UserMessage{MainThread: ev.MainThread(), Text: transcript.UserText(&ev)})
	}
}

// translate is the facts of one of the harness's records.
func (s *session) translate(ev *transcript.Event) []front.Fact {
	var facts []front.Fact
	s.trMu.Lock()
	s.tr.Facts(ev, func(f front.Fact) { facts = append(facts, f) })
	s.trMu.Unlock()
	return facts
}

// Next implements front.Session: it reads the harness's next line only
// when no fact is left, and passes it to the application, the engine, or
// both. The engine asks only once it has decided on the fact before, so
// the line after one the engine may act on is read after its decision:
// nothing of a cut session reaches the application, and a turn's result
// reaches it only then.
func (s *session) Next(ctx context.Context) (front.Fact, error) {
	s.stepMu.Lock()
	defer s.stepMu.Unlock()
	s.decided()
	for {
		if f, ok, eof := s.pop(); ok || eof {
			if eof {
				return nil, io.EOF
			}
			return f, nil
		}
		select {
		case <-s.released:
			return s.nextReleased(ctx)
		default:
		}
		ev, ok, err := s.receive(ctx)
		switch {
		case err != nil:
			return nil, err
		case !ok:
			continue // a prompt of the application's, or the release
		case ev == nil:
			s.qMu.Lock()
			s.eof = true
			s.qMu.Unlock()
			continue
		}
		s.take(*ev)
	}
}

// receive waits for the harness's next line (nil once it is gone, with ok)
// or for another fact or the release (not ok); a line that is there
// already comes first, even when ctx is done.
func (s *session) receive(ctx context.Context) (*transcript.Event, bool, error) {
	if ev, ok := s.back.Held(); ok {
		return &ev, true, nil
	}
	events := s.p.Events()
	select {
	case ev, open := <-events:
		s.back.Took(open)
		return lineOf(ev, open), true, nil
	default:
	}
	select {
	case ev, open := <-events:
		s.back.Took(open)
		return lineOf(ev, open), true, nil
	case <-s.added:
		return nil, false, nil
	case <-s.released:
		return nil, false, nil
	case <-ctx.Done():
		return nil, false, ctx.Err()
	}
}

func lineOf(ev transcript.Event, open bool) *transcript.Event {
	if !open {
		return nil
	}
	return &ev
}

// Sync implements front.Syncer, as the headless front does: the harness's
// stdout reader runs apart from Next, so what the harness wrote before its
// hook ran is taken from it, untranslated, for Next (DESIGN.md «Inbox»).
// Once the session is released nothing waits for it.
func (s *session) Sync(ctx context.Context) error {
	s.stepMu.Lock()
	defer s.stepMu.Unlock()
	select {
	case <-s.released:
		return nil
	default:
	}
	return s.back.Sync(ctx, s.p.Events(), s.p.Drained(), s.released)
}

// nextReleased returns the facts pumpReleased reads, once the engine no
// longer decides on them.
func (s *session) nextReleased(ctx context.Context) (front.Fact, error) {
	s.stepMu.Unlock()
	defer s.stepMu.Lock()
	for {
		if f, ok, eof := s.pop(); ok || eof {
			if eof {
				return nil, io.EOF
			}
			return f, nil
		}
		select {
		case <-s.added:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// queue adds facts for Next and returns the number of the last.
func (s *session) queue(facts ...front.Fact) int {
	s.qMu.Lock()
	s.q = append(s.q, facts...)
	s.pushed += len(facts)
	n := s.pushed
	s.qMu.Unlock()
	select {
	case s.added <- struct{}{}:
	default:
	}
	return n
}

func (s *session) pop() (front.Fact, bool, bool) {
	s.qMu.Lock()
	defer s.qMu.Unlock()
	if len(s.q) == 0 {
		return nil, false, s.eof
	}
	f := s.q[0]
	s.q[0] = nil
	s.q = s.q[1:]
	s.given++
	return f, true, false
}

// decided runs what waited for the engine's decision on the facts it
// took: the engine asks for a fact past them. Called with stepMu held.
func (s *session) decided() { s.runAfter(false) }

// runAfter runs what waits for the engine's decision once it is due, or
// now with all: the engine decides nothing more.
func (s *session) runAfter(all bool) {
	s.qMu.Lock()
	due := s.after != nil && (all || s.given >= s.afterAt)
	s.qMu.Unlock()
	if due {
		f := s.after
		s.after = nil
		f()
	}
}

// releaseFacts: the engine decides nothing more on the session (it stopped
// it, ended it after a cancel, or retired it after its handoff), so its
// lines are read without waiting for it: a retiring harness's callbacks
// are still answered while nobody asks for its facts. What they say is
// kept for a Next that comes.
func (s *session) releaseFacts() {
	s.release.Do(func() {
		close(s.released)
		go s.pumpReleased()
	})
}

func (s *session) pumpReleased() {
	for {
		s.stepMu.Lock()
		s.runAfter(true)
		if ev, ok := s.back.Held(); ok {
			s.take(ev)
			s.stepMu.Unlock()
			continue
		}
		s.stepMu.Unlock()
		ev, open := <-s.p.Events()
		if !open {
			s.qMu.Lock()
			s.eof = true
			s.qMu.Unlock()
			select {
			case s.added <- struct{}{}:
			default:
			}
			return
		}
		s.stepMu.Lock()
		s.take(ev)
		s.stepMu.Unlock()
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
		// The result reaches the application once the engine has
		// decided on the turn's end (decided).
		r.book(s, ev)
		s.afterAt = s.queue(s.translate(&ev)...)
		s.after = func() { r.result(s, ev) }
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
	facts := s.translate(&ev)
	s.enforced(&ev)
	s.queue(facts...)
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
	return s.p.Interrupt()
}

// EndAfterTurn: the engine decides nothing more on the session (it ends it
// after a cancel, or retires it after its handoff), so its reader no
// longer waits for the engine: a retiring harness's callbacks are still
// answered while nobody asks for its facts.
func (s *session) EndAfterTurn() error {
	s.releaseFacts()
	return s.p.CloseInput()
}

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
	s.releaseFacts()
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

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}
