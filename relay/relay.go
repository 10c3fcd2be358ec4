// Package relay owns the Agent SDK front: flower started by an application
// in the harness's place (the SDK's pathToClaudeCodeExecutable, the Python
// SDK's cli_path) speaks the harness's streaming protocol on its own stdin
// and stdout, and relays it to a real harness beneath, one process per
// attempt of a generation. The engine (package supervisor) decides every
// rule of a handoff, as for any front; the relay translates, both ways:
//
//   - Harness to engine: every record of the harness's output goes through
//     a front.Translator into facts, but for the control protocol's lines
//     and the partial-message stream events, which are the application's
//     alone. Nothing else becomes a fact: the relay makes up no record and
//     hides none of the harness's from the engine. The application's user messages, which
//     the harness does not echo, become UserMessage facts: the prompts the
//     harness was given.
//   - Engine to harness: a turn (Begin, Send) is a user line on the
//     harness's stdin; Cut, StopTool and Cancel are its interrupt request
//     (the translator told first, so that the turn ends interrupted);
//     EndAfterTurn closes its stdin; Probe is its get_context_usage
//     request.
//   - Application to harness: the application's lines go to the live
//     harness; its user messages wait in a queue until that harness is
//     idle; its initialize and lasting settings are replayed to every
//     successor and retry; its answers go to the harness that asked.
//   - Harness to application: the live harness's lines go back, a line the
//     engine may act on (a turn's result, an API error shown as a message)
//     only once the engine has decided on it: Next reads the harness's
//     next line only when the engine asks for a fact. Of a
//     session the engine retired (Cut, Cancel, the writing turn) nothing
//     more reaches the application, and flower answers the callbacks it
//     causes. Results carry the step's cost and flower's summary; the
//     handoff and a retry are system lines of flower's own; and where the
//     application's turn got no harness's result, Finish writes one, since
//     the SDK waits for one per turn.
//
// The relay keeps no phase of the engine's: the commands say their purpose
// and a turn says its kind. See docs/DESIGN.md «Agent SDK relay».
package relay

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"sync"

	"github.com/tidwall/gjson"

	"github.com/flowerhq/flower/event"
	"github.com/flowerhq/flower/front"
	"github.com/flowerhq/flower/harness"
	"github.com/flowerhq/flower/transcript"
)

// Subtypes of the system lines the relay makes up for the application.
const (
	SubtypeHandoff = "flower_handoff"
	SubtypeRetry   = "flower_retry"
)

// stateSetting are the control requests whose effect lasts beyond their
// answer: a successor must be told them again (DESIGN.md «Agent SDK relay»).
var stateSetting = map[string]bool{
	"set_permission_mode": true, "set_model": true, "set_max_thinking_tokens": true,
	"apply_flag_settings": true, "mcp_set_servers": true, "mcp_toggle": true,
}

// Config says where the application is.
type Config struct {
	// In and Out are the application's side of the protocol; Out carries
	// the protocol only.
	In  io.Reader
	Out io.Writer
	// Args are the arguments the application started flower with (the
	// harness's own), given to every harness with the session flags
	// adjusted per generation.
	Args   []string
	Logger *slog.Logger
	// Gone is called once when the application can no longer be written
	// to: it is gone, and so should the run be.
	Gone func(error)
}

// Relay is the front between one application and the harnesses of one
// step. It is a front.Launcher; its Event method takes the engine's events.
type Relay struct {
	cfg Config
	log *slog.Logger

	outMu  sync.Mutex
	out    io.Writer
	goneMu sync.Once

	mu   sync.Mutex
	live *session // where the application's traffic goes; nil between harnesses
	last *session // the latest session launched
	// init is the application's initialize request body once a harness
	// has had it; settings are the state-setting requests since, in order.
	init      json.RawMessage
	settings  []json.RawMessage
	pending   [][]byte // control requests waiting for a harness that can take them
	interrupt [][]byte // the application's interrupts waiting for a successor's first turn
	queue     [][]byte // user messages waiting for an idle harness
	busy      bool     // the live harness runs a turn
	eof       bool     // the application closed its input
	asked     map[string]*session
	// keptResult is the harness's result of the application's latest
	// turn while it has not reached the application (the engine cut the
	// session under it); nil once a result did.
	keptResult []byte

	gen         int
	costBefore  float64 // cost of the harness processes that ended
	usedTurns   int     // turns the application's cut turns used
	usedCost    float64 // what the retired and failed processes cost, writing turns excepted
	retired     []string
	handoffPath string
	done        *event.Event // a done handoff waiting for its successor's session id
}

var _ front.Launcher = (*Relay)(nil)

// Capabilities implements front.Launcher: the application sends the work
// turns, and nobody types. A harness is started only with its first turn
// known (a successor's is the handoff, read once it is frozen).
func (r *Relay) Capabilities() front.Capabilities {
	return front.Capabilities{OutsideTurns: true, Resumes: true, CredentialFix: harness.CredentialFix, Prepare: harness.Prepare,
		ResumeRefused: harness.ResumeRefused, Untested: harness.Untested}
}

// New makes the relay; Start begins reading the application.
func New(cfg Config) *Relay {
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Relay{cfg: cfg, log: log, out: cfg.Out, asked: map[string]*session{}}
}

// Start reads the application's input until it ends.
func (r *Relay) Start() { go r.readApp() }

// write sends one line to the application. A write that fails means the
// application is gone.
func (r *Relay) write(line []byte) {
	r.outMu.Lock()
	defer r.outMu.Unlock()
	b := append(append(make([]byte, 0, len(line)+1), line...), '\n')
	if _, err := r.out.Write(b); err != nil {
		r.out = io.Discard
		r.goneMu.Do(func() {
			r.log.Warn("the application's output is gone", "err", err)
			if r.cfg.Gone != nil {
				go r.cfg.Gone(err)
			}
		})
	}
}

func (r *Relay) writeJSON(v any) {
	b, err := json.Marshal(v)
	if err != nil {
		r.log.Error("encode a line for the application", "err", err)
		return
	}
	r.write(b)
}

// readApp is the application's side: user messages are queued, control
// requests go to the live harness (and the lasting ones are remembered),
// control responses go to the harness that asked.
func (r *Relay) readApp() {
	lr := transcript.NewLineReader(r.cfg.In, 0)
	for {
		line, err := lr.Next()
		if err != nil {
			if !errors.Is(err, io.EOF) {
				var le *transcript.LineError
				if errors.As(err, &le) {
					r.log.Warn("skipped an input line of the application", "err", err)
					continue
				}
				r.log.Warn("read the application's input", "err", err)
			}
			r.mu.Lock()
			r.eof = true
			r.log.Info("the application closed its input")
			r.dispatch()
			r.mu.Unlock()
			return
		}
		if len(line) == 0 {
			continue
		}
		if !gjson.ValidBytes(line) {
			// The harness exits on such a line (DESIGN.md «Agent SDK relay»); the live
			// session must not end for it.
			r.log.Warn("skipped an input line that is not JSON", "preview", preview(line))
			continue
		}
		line = append([]byte(nil), line...)
		r.fromApp(line)
	}
}

func (r *Relay) fromApp(line []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch gjson.GetBytes(line, "type").String() {
	case "user":
		r.queue = append(r.queue, line)
		r.dispatch()
	case "control_request":
		req := gjson.GetBytes(line, "request")
		sub := req.Get("subtype").String()
		switch {
		case sub == "initialize":
			// A repeated initialize replaces the first in the replay.
			r.init = json.RawMessage(req.Raw)
		case stateSetting[sub]:
			r.settings = append(r.settings, json.RawMessage(req.Raw))
		}
		if s := r.live; s != nil && !s.retiring {
			s.forward(line)
			return
		}
		if sub == "interrupt" {
			// The turn it interrupts goes on in the successor.
			r.interrupt = append(r.interrupt, line)
			return
		}
		r.pending = append(r.pending, line)
	case "control_response":
		id := gjson.GetBytes(line, "response.request_id").String()
		s := r.asked[id]
		delete(r.asked, id)
		if s == nil || s.stopped {
			r.log.Info("dropped a control response for a harness that is gone", "request_id", id)
			return
		}
		s.forward(line)
	default:
		// Whatever else the application says is the live harness's to
		// answer, as it would have been without flower.
		if s := r.live; s != nil && !s.retiring {
			s.forward(line)
			return
		}
		r.pending = append(r.pending, line)
	}
}

// dispatch passes the next queued user message to the live harness when it
// is idle, and closes its input once the application closed its own and
// nothing is left to pass on. Called with mu held.
func (r *Relay) dispatch() {
	s := r.live
	if s == nil || !s.begun || s.retiring || r.busy {
		return
	}
	if len(r.queue) > 0 {
		line := r.queue[0]
		r.queue = r.queue[1:]
		r.busy = true
		s.user(line)
		return
	}
	if r.eof && !s.inputClosed {
		s.inputClosed = true
		r.log.Info("closing the harness's input: the application closed its own")
		_ = s.p.CloseInput()
	}
}

// Launch starts the harness of one attempt: the application's arguments,
// with the session flags of this attempt. A successor or a retry is told
// the application's initialize and settings again, their answers kept from
// the application.
func (r *Relay) Launch(ctx context.Context, spec front.Spec) (front.Session, error) {
	r.mu.Lock()
	kind := kindFirst
	switch {
	case r.last == nil:
	case spec.Generation > r.gen:
		kind = kindSuccessor
	default:
		kind = kindRetry
	}
	args := r.argsFor(kind, spec)
	r.gen = spec.Generation
	r.mu.Unlock()

	p, err := harness.Start(ctx, harness.Config{Path: spec.Path, Args: args, Exact: true,
		Dir: spec.Dir, Env: spec.Env, Logger: spec.Logger, Grace: spec.Grace})
	if err != nil {
		return nil, err
	}
	log := spec.Logger
	if log == nil {
		log = r.log
	}
	s := newSession(ctx, r, p, spec, kind, log)

	r.mu.Lock()
	var replay []json.RawMessage
	if r.last != nil { // the first harness gets the application's own lines
		if r.init != nil && !pendingInit(r.pending) {
			// (An initialize still waiting goes to this harness as the
			// application sent it, answer and all.)
			replay = append(replay, r.init)
		}
		replay = append(replay, r.settings...)
	}
	r.last = s
	r.mu.Unlock()
	s.replay(ctx, replay)
	r.mu.Lock()
	r.live = s
	pending := r.pending
	r.pending = nil
	for _, line := range pending {
		s.forward(line)
	}
	r.mu.Unlock()
	return s, nil
}

func pendingInit(lines [][]byte) bool {
	for _, l := range lines {
		if gjson.GetBytes(l, "request.subtype").String() == "initialize" {
			return true
		}
	}
	return false
}

type launchKind int

const (
	kindFirst     launchKind = iota // the application's own arguments
	kindSuccessor                   // a fresh session after a handoff
	kindRetry                       // the same generation after a failure
)

// argsFor adjusts the application's arguments for one attempt
// (DESIGN.md «Agent SDK relay»). The engine's Spec.Args, when it gives
// them, are the application's with flower's compaction levers merged in
// (DESIGN.md «Compaction levers»), and take their place. Called with mu held.
func (r *Relay) argsFor(kind launchKind, spec front.Spec) []string {
	args := r.cfg.Args
	if spec.Args != nil {
		args = spec.Args
	}
	if kind == kindFirst {
		return append([]string(nil), args...)
	}
	args = withoutSession(args)
	if spec.Resume != "" {
		args = append(args, "--resume="+spec.Resume)
	}
	if v, ok := Value(args, "--max-turns"); ok {
		args = Replace(args, "--max-turns", leftTurns(v, r.usedTurns))
	}
	if v, ok := Value(args, "--max-budget-usd"); ok {
		args = Replace(args, "--max-budget-usd", leftBudget(v, r.usedCost))
	}
	return args
}

// Event takes the engine's events: a handoff's writing and done phases and
// a retry become system lines for the application.
func (r *Relay) Event(ev event.Event) {
	switch {
	case ev.Kind == event.KindHandoff && ev.Phase == event.PhaseWriting:
		r.writeJSON(map[string]any{"type": "system", "subtype": SubtypeHandoff, "phase": "writing",
			"session_id": ev.SessionID, "old_session_id": ev.SessionID, "generation": ev.Generation,
			"context": ev.Context, "window": ev.Window})
	case ev.Kind == event.KindHandoff && ev.Phase == event.PhaseDone:
		r.mu.Lock()
		if ev.SessionID != "" {
			r.retired = append(r.retired, ev.SessionID)
		}
		if ev.Path != "" {
			r.handoffPath = ev.Path
		}
		e := ev
		r.done = &e
		r.mu.Unlock()
	case ev.Kind == event.KindRetry:
		r.mu.Lock()
		sid := ev.SessionID
		if sid == "" && r.last != nil {
			sid = r.last.sessionID
		}
		r.mu.Unlock()
		r.writeJSON(map[string]any{"type": "system", "subtype": SubtypeRetry, "session_id": sid,
			"generation": ev.Generation, "reason": ev.Text})
	}
}

// doneLine is the handoff's done line, sent once the successor's session
// id is known (newID) or the step ended without one. Called with mu held.
func (r *Relay) doneLine(newID string) {
	ev := r.done
	if ev == nil {
		return
	}
	r.done = nil
	r.writeJSON(map[string]any{"type": "system", "subtype": SubtypeHandoff, "phase": "done",
		"session_id": firstNonEmpty(newID, ev.SessionID), "old_session_id": ev.SessionID, "new_session_id": newID,
		"generation": ev.Generation + 1, "context": ev.Context, "window": ev.Window, "path": ev.Path,
		"degraded": ev.Degraded, "why": ev.Why, "reason": ev.Reason})
}

// summary is the "flower" field of a result the application sees.
func (r *Relay) summary() map[string]any {
	return map[string]any{"generations": r.gen, "retired": append([]string{}, r.retired...), "handoff_path": r.handoffPath}
}

// Finish ends the application's view of the step: a handoff still waiting
// for its successor is reported, and a turn of the application still open
// gets its result. The SDK waits for one result per turn it started, and
// ends its run on it; a result of flower's own is the relay's protocol
// toward its client, never a record to the engine. A step that failed (the
// generation limit, attempts used up, a cancel) ends in an error result. A
// step the engine ended on a turn it had cut ends with that turn's own
// result, kept back at the cut and patched as any other.
func (r *Relay) Finish(sessionID string, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.doneLine("")
	cost := r.costBefore
	if s := r.last; s != nil && !s.ended {
		cost += s.cost
	}
	if err == nil {
		if r.busy && r.keptResult != nil {
			r.write(patchResult(r.keptResult, cost, r.summary()))
			r.keptResult, r.busy = nil, false
		}
		return
	}
	r.writeJSON(map[string]any{"type": "result", "subtype": "error_during_execution", "is_error": true,
		"result": err.Error(), "session_id": sessionID, "total_cost_usd": cost, "num_turns": 0,
		"duration_ms": 0, "duration_api_ms": 0, "stop_reason": nil, "terminal_reason": "flower",
		"usage":      map[string]int{"input_tokens": 0, "output_tokens": 0, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0},
		"modelUsage": map[string]any{}, "permission_denials": []any{}, "errors": []string{err.Error()},
		"flower": r.summary()})
}

func firstNonEmpty(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}

func preview(b []byte) string {
	const n = 120
	if len(b) > n {
		return string(b[:n]) + "…"
	}
	return string(b)
}
