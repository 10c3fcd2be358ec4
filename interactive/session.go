package interactive

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/tidwall/gjson"

	"github.com/flowerhq/flower/front"
	"github.com/flowerhq/flower/handoffwriter"
	"github.com/flowerhq/flower/harness"
	"github.com/flowerhq/flower/transcript"
)

// Timings of the harness's screen, from its observed behaviour (package doc).
const (
	pollEvery = 200 * time.Millisecond
	// escAgain: a turn still running this long after Esc gets another one
	// (far enough apart not to read as a double press).
	escAgain = 3 * time.Second
	// idleTurnEnd: the state file saying "idle" this long ends a turn whose
	// end the transcript did not mark.
	idleTurnEnd = 1500 * time.Millisecond
	// clearWait outlasts the harness's Ctrl-C double-press window (~0.8 s).
	clearWait = 1200 * time.Millisecond
	pasteGap  = 40 * time.Millisecond
	settle    = 300 * time.Millisecond
	// startTyping: how long after the harness is up a long first prompt
	// is typed.
	startTyping = 1500 * time.Millisecond
	// keysAfter: a harness that writes no state file gets the person's keys
	// this long after it started.
	keysAfter = 3 * time.Second
	// keysAfterPrompt: a harness started with its first prompt gets the
	// person's keys once that prompt is in (its transcript appears), or
	// this long after it started. Its state file comes earlier in its
	// start-up than its input box does: keys released on the state file
	// alone were lost on a loaded machine.
	keysAfterPrompt = 20 * time.Second
)

// turnState is where the session stands in what the engine asked of it. It
// decides only how the screen's signs translate into records; the engine
// holds the handoff's phases.
type turnState int

const (
	stateWorking   turnState = iota // the person's turns: results are made up at turn ends
	stateCutting                    // Cut (or StopTool, Cancel) was called: the turn's end becomes a result
	stateWaiting                    // the cut turn ended; nothing more until Send
	stateSubmitted                  // a prompt is being typed or has not arrived yet
	stateWriting                    // the sent prompt arrived; its turn's end becomes a result
)

func (s turnState) String() string {
	return [...]string{"working", "cutting", "waiting", "submitted", "writing"}[s]
}

type sessionConfig struct {
	configDir string
	cwd       string
	typed     string // a first prompt too long for the command line
	argPrompt bool   // the harness got its first prompt as an argument
	resumed   string
	loc       locator
	probe     harness.Config // the same harness in stream-json mode (Probe)
}

// session is one harness on the person's terminal as a front.Session. One
// goroutine (follow) reads the transcript file, the harness's state file and
// its exit, and makes records of them; the engine's calls change the state
// under mu.
type session struct {
	f   *Front
	p   *proc
	log *slog.Logger
	cfg sessionConfig
	ctx context.Context

	out  chan transcript.Event
	done chan struct{} // follow has returned

	// follow's own state
	fol       *transcript.Follower
	folCancel context.CancelFunc
	following string // the session whose transcript fol reads
	drained   bool
	sessionID string
	lastMsg   string
	turns     int // main-thread API replies not yet in a result
	ready     bool
	released  bool
	idleSince time.Time

	mu         sync.Mutex
	state      turnState
	lastStop   string    // stop_reason of the latest main-thread reply
	cost       float64   // the process's cost so far (cost-state lines)
	booked     float64   // the cost the last result carried
	cutStart   time.Time // when Cut (or StopTool, Cancel) was called
	escAt      time.Time // when to press Esc again; zero for never
	submitBy   time.Time // a sent prompt must have arrived by then; zero while typing
	writeStart time.Time
	replies    int // replies in the writing turn
	typed      string
	endAfter   bool // EndAfterTurn waits for the turn to end

	stopOnce sync.Once
}

var (
	_ front.Session = (*session)(nil)
	_ front.Prober  = (*session)(nil)
)

func newSession(ctx context.Context, f *Front, p *proc, log *slog.Logger, cfg sessionConfig) *session {
	s := &session{f: f, p: p, log: log, cfg: cfg, ctx: ctx, typed: cfg.typed,
		out: make(chan transcript.Event, 64), done: make(chan struct{}), sessionID: cfg.resumed}
	go f.guard(s.follow)
	return s
}

// Records implements front.Session.
func (s *session) Records() <-chan transcript.Event { return s.out }

// Begin implements front.Session: the first prompt went to the harness at
// start (or is typed once its screen is up).
func (s *session) Begin() error { return nil }

// Probe implements front.Prober. The harness's screen cannot be asked what
// it knows of its context, but the same harness can: started with the same
// executable, flags, model, directory and environment in stream-json mode,
// it answers the context-usage request before any turn, without calling the
// API (DESIGN.md «Context usage request»), and is stopped again. Its window
// and auto-compact are this session's; its start-up floor is a fresh
// session's with the same tools, which is what the futile guard weighs.
func (s *session) Probe(ctx context.Context) (gjson.Result, error) {
	p, err := harness.Start(ctx, s.cfg.probe)
	if err != nil {
		return gjson.Result{}, fmt.Errorf("start the probe: %w", err)
	}
	defer p.Stop()
	return p.Control(ctx, "get_context_usage")
}

// Cut ends the running turn at the message boundary as a person would:
// Esc, pressed again while the turn runs on. From here on the person's
// keys wait, so that nothing they type lands in flower's prompt.
func (s *session) Cut() error { return s.esc() }

// StopTool and Cancel are carried out as the cut is: the harness's screen
// has one way to end a turn, Esc.
func (s *session) StopTool() error { return s.esc() }
func (s *session) Cancel() error   { return s.esc() }

// esc ends the running turn with Esc, pressed again while it runs on.
func (s *session) esc() error {
	s.f.gate.Hold()
	now := time.Now()
	s.mu.Lock()
	s.state, s.cutStart, s.escAt = stateCutting, now, time.Time{}
	ended := s.lastStop == "end_turn"
	if !ended {
		s.escAt = now.Add(escAgain)
	}
	s.mu.Unlock()
	if ended {
		// The turn ends with the reply just seen: no key needed.
		return nil
	}
	return s.f.gate.Type([]byte(keyEsc))
}

// Send types a prompt as the person would. One Ctrl-C first empties
// whatever sits in the input (a prompt the harness put back after the
// interrupt, keys typed before the gate closed); then the double-press
// window is waited out so no later key reads as the second press.
func (s *session) Send(prompt string) error {
	s.f.gate.Hold()
	s.mu.Lock()
	s.state, s.submitBy, s.replies = stateSubmitted, time.Time{}, 0
	s.mu.Unlock()
	err := s.f.gate.Type([]byte(keyCtrlC))
	if err == nil {
		err = sleep(s.ctx, clearWait)
	}
	if err == nil {
		err = Typist{Type: s.f.gate.Type, Gap: pasteGap, Settle: settle}.Submit(s.ctx, prompt)
	}
	if err != nil {
		return fmt.Errorf("type the prompt: %w", err)
	}
	s.mu.Lock()
	if s.state == stateSubmitted {
		s.submitBy = time.Now().Add(s.f.opts.SubmitTimeout)
	}
	s.mu.Unlock()
	return nil
}

// EndAfterTurn ends the harness as a person would, once its turn is over:
// Ctrl-C twice. Pressed while a turn runs, the first Ctrl-C would only end
// the turn and the harness would stay; so a busy harness gets the keys from
// tick when its state file says idle.
func (s *session) EndAfterTurn() error {
	if st, err := readState(s.cfg.configDir, s.p.PID()); err == nil && st.Status == "busy" {
		s.mu.Lock()
		s.endAfter = true
		s.mu.Unlock()
		return nil
	}
	return s.exitKeys()
}

func (s *session) exitKeys() error {
	if err := s.f.gate.Type([]byte(keyCtrlC)); err != nil {
		return err
	}
	time.Sleep(150 * time.Millisecond)
	return s.f.gate.Type([]byte(keyCtrlC))
}

// Stop ends the harness (Ctrl-C twice, then signals) and gives the terminal
// back. follow then reads the transcript to its end and closes Records.
func (s *session) Stop() {
	s.stopOnce.Do(func() {
		s.f.gate.Hold()
		s.p.Stop(s.exitKeys)
		s.f.detach(s.p)
	})
}

// Exit implements front.Session. A harness a person ended (status 0, or the
// interrupt or hangup that reached it while it exited) ended in order.
func (s *session) Exit() front.Exit {
	<-s.p.Exited()
	why := "the harness exited"
	err := s.p.Err()
	if err != nil {
		why += " (" + err.Error() + ")"
	}
	return front.Exit{Why: why, ByPerson: err == nil || endedByPerson(err)}
}

// emit hands a record to the engine. It waits for the engine to take it:
// the engine always reads Records to their end.
func (s *session) emit(ev transcript.Event) { s.out <- ev }

// result makes up the result record that ends a turn on the screen (the
// transcript file has none): the process's cost so far and the replies
// since the last result.
func (s *session) result(isError bool, text, terminal string) {
	s.mu.Lock()
	cost := s.cost
	s.booked = cost
	s.mu.Unlock()
	subtypeName := "success"
	if isError {
		subtypeName = "error_during_execution"
	}
	s.emit(transcript.Event{Kind: transcript.KindResult, Type: "result", Subtype: subtypeName, SessionID: s.sessionID,
		IsError: isError, Result: text, TerminalReason: terminal, TotalCostUSD: cost, NumTurns: s.turns})
	s.turns = 0
}

// follow watches the harness and its transcript until the harness is gone,
// then reads the transcript to its end and closes Records.
func (s *session) follow() {
	defer close(s.done)
	defer close(s.out)
	tick := time.NewTicker(pollEvery)
	defer tick.Stop()
	for {
		var events <-chan transcript.Event
		if s.fol != nil {
			events = s.fol.Events()
		}
		select {
		case <-s.p.Exited():
			s.drain()
			if s.turns > 0 || s.costUnbooked() {
				// What the last turns cost is booked like any other.
				s.result(false, "", "")
			}
			return
		case ev, ok := <-events:
			if !ok {
				// A read error; the next tick starts over from the top.
				s.log.Warn("transcript follower stopped", "err", s.fol.Err())
				s.folCancel()
				s.fol, s.following = nil, ""
				continue
			}
			s.translate(&ev)
		case <-tick.C:
			s.tick()
		}
	}
}

// costUnbooked: a cost-state line moved the cost since the last result.
func (s *session) costUnbooked() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cost > s.booked
}

// drain stops following and translates the lines still unread.
func (s *session) drain() {
	if s.drained {
		return
	}
	if s.fol == nil {
		s.locate() // a harness that exited at once may still have left a file
	}
	s.drained = true
	if s.fol == nil {
		return
	}
	s.folCancel()
	for ev := range s.fol.Events() {
		s.translate(&ev)
	}
	s.fol = nil
}

// locate starts following the transcript once it can be found.
func (s *session) locate() {
	if s.drained {
		return
	}
	path, sid, ok := s.cfg.loc.find()
	if !ok {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	fol, err := transcript.Follow(ctx, path, transcript.FollowOptions{Logger: s.log})
	if err != nil {
		cancel()
		s.log.Warn("follow transcript", "path", path, "err", err)
		return
	}
	s.fol, s.folCancel, s.following = fol, cancel, sid
	s.cfg.loc.used[path] = true
	s.log.Info("transcript found", "path", path)
}

// switchSession follows the harness to a new session in the same process
// (/clear starts one, with a transcript of its own), and tells the engine
// with a record of its own.
func (s *session) switchSession(sid string) {
	if !exists(transcript.FilePath(s.cfg.configDir, s.cfg.cwd, sid)) {
		if m, _ := filepath.Glob(filepath.Join(s.cfg.configDir, "projects", "*", sid+".jsonl")); len(m) == 0 {
			return // not written yet; look again at the next tick
		}
	}
	s.log.Info("the harness switched sessions", "from", s.following, "to", sid)
	s.folCancel()
	for ev := range s.fol.Events() {
		s.translate(&ev)
	}
	s.fol, s.following, s.lastMsg = nil, "", ""
	s.sessionID = sid
	s.emit(transcript.Event{Kind: transcript.KindSystem, Type: "system", Subtype: front.SubtypeSessionSwitch, SessionID: sid})
	s.locate()
}

// translate passes a transcript line on, and makes up the result records
// that end turns.
func (s *session) translate(ev *transcript.Event) {
	if ev.SessionID != "" {
		s.sessionID = ev.SessionID
	}
	s.mu.Lock()
	state := s.state
	s.mu.Unlock()
	switch {
	case ev.Type == "cost-state":
		s.mu.Lock()
		s.cost = gjson.GetBytes(ev.Raw, "totalCostUSD").Float()
		s.mu.Unlock()
		return
	case ev.Kind == transcript.KindAssistant && ev.MainThread() && !ev.Synthetic():
		if state == stateSubmitted {
			return // the end of the cut turn, not the reply to flower's prompt
		}
		if ev.MessageID == "" || ev.MessageID != s.lastMsg {
			s.turns++
			s.lastMsg = ev.MessageID
			if state == stateWriting {
				s.mu.Lock()
				s.replies++
				s.mu.Unlock()
			}
		}
		s.mu.Lock()
		s.lastStop = ev.StopReason
		s.mu.Unlock()
	}
	s.emit(*ev)

	switch ev.Kind {
	case transcript.KindAssistant:
		if ev.MainThread() && ev.Synthetic() && state != stateSubmitted {
			// The harness turned an API error into a reply: the turn ended
			// in that error (the engine tells an overflow from the rest).
			if state != stateWorking {
				s.setState(stateWaiting)
			}
			s.result(true, ev.Text, "")
		}
	case transcript.KindUser:
		if !ev.MainThread() {
			return
		}
		text := transcript.UserText(ev)
		switch {
		case state == stateSubmitted && strings.Contains(text, handoffwriter.PromptTag):
			s.mu.Lock()
			s.state, s.writeStart, s.replies, s.submitBy = stateWriting, time.Now(), 0, time.Time{}
			s.mu.Unlock()
			s.log.Info("the prompt arrived; its turn runs")
		case ev.Interrupted && state == stateCutting:
			s.endCut()
		case ev.Interrupted && state == stateWriting:
			s.setState(stateWaiting)
			s.result(true, "the writing turn was interrupted", "")
		}
	case transcript.KindSystem:
		if ev.Subtype != "turn_duration" {
			return
		}
		switch state {
		case stateWorking:
			s.result(false, "", "")
		case stateCutting:
			s.endCut()
		case stateWriting:
			s.setState(stateWaiting)
			s.result(false, "", "")
		}
	}
}

func (s *session) setState(st turnState) {
	s.mu.Lock()
	s.state = st
	s.mu.Unlock()
}

// endCut ends the cut turn: its result tells the engine the boundary is
// reached.
func (s *session) endCut() {
	s.mu.Lock()
	s.state, s.escAt = stateWaiting, time.Time{}
	s.mu.Unlock()
	s.result(false, "", "")
}

// tick does what waits on time rather than on lines: the person's keys, a
// long first prompt, the turn ends the transcript does not mark, Esc again,
// and a prompt that never arrived.
func (s *session) tick() {
	now := time.Now()
	state, err := readState(s.cfg.configDir, s.p.PID())
	if err == nil {
		s.ready = true
		if state.Status == "idle" {
			if s.idleSince.IsZero() {
				s.idleSince = now
			}
		} else {
			s.idleSince = time.Time{}
		}
	}
	s.mu.Lock()
	st, cutStart, escAt, submitBy, writeStart, replies, typed := s.state, s.cutStart, s.escAt, s.submitBy, s.writeStart, s.replies, s.typed
	endNow := s.endAfter && err == nil && state.Status == "idle"
	if endNow {
		s.endAfter = false
	}
	s.mu.Unlock()
	if endNow {
		s.log.Info("the turn is over; ending the harness")
		if err := s.exitKeys(); err != nil {
			s.log.Debug("exit keys", "err", err)
		}
	}

	keysReady, wait := s.ready, keysAfter
	if s.cfg.argPrompt {
		keysReady, wait = s.following != "", keysAfterPrompt
	}
	if !s.released && st == stateWorking && typed == "" && (keysReady || now.Sub(s.p.start) >= wait) {
		// The harness is up: the person's keys go straight to it now.
		s.released = true
		if err := s.f.gate.Release(); err != nil {
			s.log.Debug("deliver held keys", "err", err)
		}
	}
	if err == nil && st == stateWorking && s.following != "" && state.SessionID != "" && state.SessionID != s.following {
		s.switchSession(state.SessionID)
	}
	if s.fol == nil {
		s.locate()
	}
	idle := !s.idleSince.IsZero() && now.Sub(s.idleSince) >= idleTurnEnd
	switch st {
	case stateWorking:
		if typed != "" && s.ready && now.Sub(s.p.start) >= startTyping {
			s.typeFirst(typed)
		}
	case stateCutting:
		if idle && now.Sub(cutStart) >= time.Second {
			s.endCut()
			return
		}
		if !escAt.IsZero() && now.After(escAt) {
			s.log.Info("turn still running; pressing Esc again")
			_ = s.f.gate.Type([]byte(keyEsc))
			s.mu.Lock()
			s.escAt = now.Add(escAgain)
			s.mu.Unlock()
		}
	case stateSubmitted:
		if !submitBy.IsZero() && now.After(submitBy) {
			s.setState(stateWaiting)
			s.result(true, fmt.Sprintf("the prompt did not reach the session within %v", s.f.opts.SubmitTimeout), "")
		}
	case stateWriting:
		if idle && replies > 0 && s.idleSince.After(writeStart) {
			s.log.Info("the turn ended (the harness is idle; no turn_duration line)")
			s.setState(stateWaiting)
			s.result(false, "", "")
		}
	}
}

// typeFirst types a first prompt too long for the command line.
func (s *session) typeFirst(prompt string) {
	s.f.gate.Hold()
	err := Typist{Type: s.f.gate.Type, Gap: pasteGap, Settle: settle}.Submit(s.ctx, prompt)
	s.mu.Lock()
	s.typed = ""
	s.mu.Unlock()
	s.released = true
	_ = s.f.gate.Release()
	if err != nil {
		s.log.Error("type the first prompt", "err", err)
		s.p.Stop(nil) // the generation cannot start: the engine sees the exit
	}
}

// endedByPerson tells a harness a person stopped (an interrupt or hangup
// that reached it while it was exiting, say) from one that failed.
func endedByPerson(err error) bool {
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return false
	}
	ws, ok := ee.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && (ws.Signal() == syscall.SIGINT || ws.Signal() == syscall.SIGHUP)
}
