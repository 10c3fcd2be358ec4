// Package fronttest is an in-memory front for the engine's tests: a
// front.Launcher whose harness sessions are scripted in Go. No process, pty
// or file of its own is involved; a session is one goroutine that plays a
// Model, the way a scripted Messages API plays the model behind the real
// harness. Every wait a session makes (an API round's latency, a tool's run
// time, an answer to the context-usage request) is a timer, so under
// testing/synctest the engine and its sessions run on the fake clock and a
// test runs in milliseconds without a sleep (DESIGN.md «Deterministic
// engine tests»).
//
// Scripts speak of what a harness does (a round of 150k on the main thread,
// a tool that runs for ten minutes, a writing turn that answers with a
// document, an overflow, a crash), never of the facts the seam carries:
// this package alone translates them into the seam's vocabulary, with a
// real front's own translation: a session writes the stream-json lines the
// harness would, which the headless front's read loop (front.Records)
// turns into facts; or, where a person types the turns
// (Launcher.PersonTypes), the transcript lines and state-file statuses the
// harness writes at its own screen, which the interactive front's
// translation (interactive.Translation) turns into facts as its Next does.
// A change of the seam thus changes the translation and not the scripts.
// The engine's commands are taken at their word: a Send's kind says
// whether a request belongs to the writing turn (Request.Writing).
package fronttest

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/tidwall/gjson"

	"github.com/flowerhq/flower/front"
	"github.com/flowerhq/flower/harness"
	"github.com/flowerhq/flower/interactive"
	"github.com/flowerhq/flower/jsonenc"
	"github.com/flowerhq/flower/levers"
	"github.com/flowerhq/flower/transcript"
)

// version is the harness's version its records give.
const version = "2.1.328"

// Model answers the main thread's requests of every session a Launcher
// starts: one Round per request, as an API answers one response per
// request. It is called from the sessions' goroutines, one call at a time.
type Model func(r Request) Round

// Request is one main-thread API request as the model sees it.
type Request struct {
	// Seq numbers the requests of the Launcher from 1.
	Seq int
	// Session is the session's id; Proc the 1-based number of the
	// harness (the Launch) that asks.
	Session string
	Proc    int
	// Turn numbers the session's turns from 1, across resumes; Round the
	// requests of this turn from 1 (a tool's result asks again).
	Turn, Round int
	// Prompt is the turn's prompt; Writing: the engine sent it as the
	// handoff-writing turn (front.TurnWriting).
	Prompt  string
	Writing bool
	// History is what the request carries, in order: the prompts the
	// session was sent ("user: …", this turn's included) and its own
	// replies ("assistant: …", "tool: <command>"), resumes included: a
	// resumed session carries its crashed turn's history here.
	History []string
}

// Round is the harness's answer to one request: one main-thread response,
// and what comes with it.
type Round struct {
	// Context is the response's context (its prompt tokens), the figure
	// the engine meters.
	Context int
	// Text is the response's text; a writing turn's handoff document
	// goes here.
	Text string
	// Tool, when set, is a tool call: the turn goes on with another
	// request once the tool has run. Without one the turn ends (end_turn).
	Tool *Tool
	// Subagents are rounds of a subagent (their contexts) that the
	// harness reports before this response; they never move the meter.
	Subagents []int
	// Took is the request's latency; an interrupt in it ends the turn
	// before the response.
	Took time.Duration
	// Stopped: once the round's tool has run, the harness ends the turn
	// without asking again, as a Stop hook makes it (terminal reason
	// hook_stopped): no turn sent while this one ran is taken into it.
	Stopped bool
	// Split: the reply is written as the real harness writes it, a line
	// per content block (its text's, then its tool call's, one message
	// id), rather than in one line.
	Split bool
	// Compacted: the harness compacted its context before this round (a
	// compact_boundary, trigger auto, from the previous round's context).
	Compacted bool
	// PreCompact are compactions the harness tries before this round
	// ("auto", "manual"): each runs flower's PreCompact hook, which
	// reports it to the step's inbox, waits for flower to take it, and
	// blocks it; the round then goes on.
	PreCompact []string
	// Overflow: the API refused the request as too long; the turn ends
	// in the harness's "Prompt is too long" result.
	Overflow bool
	// Limit: the API refuses the request with a limit (HTTP 429); the
	// turn ends in the harness's limit result, as the real one's records
	// say it (DESIGN.md «Limits»).
	Limit *Limit
	// Malformed are lines that are not records, written before the
	// response: a front drops and counts them (front.Exit.Skipped).
	Malformed []string
	// Unmarked: at its own screen (Launcher.PersonTypes), the harness
	// writes no turn_duration line for the turn this round ends, as it
	// leaves it out while background work it started runs: only its state
	// file's idle says the turn is over.
	Unmarked bool
	// Crash: the harness dies instead of answering (half a line, exit
	// status 3). Hang: it never answers, ignoring interrupts, until it
	// is stopped.
	Crash, Hang bool
	// What the person at a harness a person types into (Launcher.PersonTypes),
	// or the application that sends the turns (Launcher.Outside), does once this round has ended its turn: types PersonNext as the
	// next turn, or, with PersonExits, ends the harness in an orderly way.
	PersonNext  string
	PersonExits bool
}

// Limit is a limit the API answers a request with.
type Limit struct {
	// Usage: a subscription's usage limit (a rejected rate_limit_event
	// with its reset, then the harness's "usage_limit_reached" 429);
	// otherwise an API key's rate limit, which the harness retried after
	// RetryAfter and then gave up on, saying no reset.
	Usage bool
	// ResetIn is when a usage limit resets, from now.
	ResetIn    time.Duration
	RetryAfter time.Duration
}

// Tool is a tool call of a round.
type Tool struct {
	// Name defaults to "Bash"; Command is its input's command.
	Name, Command string
	// Took is how long the tool runs (1s when zero: an instant tool would
	// race the engine's interrupt, which a real tool never loses).
	Took time.Duration
	// Until, when set, runs the tool until it is closed instead.
	Until <-chan struct{}
	// Started, when set, is called as the tool starts, with its harness
	// (to kill it, to post to the step's inbox, to tell the test).
	Started func(p *Proc)
}

// Launcher is a front.Launcher of scripted sessions. Its zero value is not
// usable: set Model.
type Launcher struct {
	Model Model
	// Window is the window the context-usage request answers (maxTokens),
	// Floor its start-up floor, AutoCompact its isAutoCompactEnabled.
	// Window 0: the sessions cannot be probed (not front.Prober).
	Window, Floor int
	AutoCompact   bool
	// ProbeTook is how long the context-usage answer takes.
	ProbeTook time.Duration
	// ResultWindow is the contextWindow a turn's result reports in its
	// modelUsage; 0 reports none.
	ResultWindow int
	// ModelName is the model the sessions run (init lines, the
	// context-usage answer); "claude-mem-1" when empty.
	ModelName string
	// Late: the front cannot start a harness before its first prompt
	// (Capabilities.StartEarly is false). PersonTypes: a person types the
	// turns (Capabilities.OutsideTurns and PersonTypes), as at the
	// harness's own screen, and the sessions are read as the interactive
	// front reads that screen's harness (Screen). Outside: an application
	// sends the turns (Capabilities.OutsideTurns alone), as through the
	// relay. NoResume: the front cannot resume a session
	// (Capabilities.Resumes is false).
	Late, PersonTypes, Outside, NoResume bool
	// Codex: the sessions are read by the Codex front's own session
	// (package codex) over a scripted app-server: what the harness writes
	// reaches it as the notifications Codex sends (codex.go), and its
	// turn/start and turn/interrupt are the harness's prompts and
	// interrupt.
	Codex bool
	// Gemini: the sessions are read by the Gemini front's own session
	// (package gemini) over a scripted ACP agent: what the harness writes
	// reaches it as the Gemini CLI's record lines and ACP messages
	// (gemini.go), and its prompts and cancel are the harness's prompts
	// and interrupt.
	Gemini bool
	// Refuse, when set, is asked before harness proc is given turn t (its
	// first, by Begin, as a TurnWork); an error refuses the turn, as a
	// harness whose input is gone refuses it, and Log records "refused N".
	Refuse func(proc int, t front.Turn) error
	// ExitCost is what each harness says it cost as it exits
	// (front.Exit.CostUSD), as the harness's own screen does; 0 says
	// nothing.
	ExitCost float64
	// Behind: the front reads the harness's records on a reader of its
	// own, which hands each on this long after it was written, as the
	// headless front reads its harness's stdout apart from Next: the
	// harness writes without waiting for the front, so a hook's request
	// can reach the engine before the records written before it are read.
	// The sessions sync (front.Syncer) as the headless front's do. 0: the
	// front reads in step with the engine.
	Behind time.Duration

	mu       sync.Mutex
	modelMu  sync.Mutex
	procs    []*Proc
	seq      int
	requests []Request
	order    []string            // sessions in the order of their first request
	history  map[string][]string // each session's history
	turns    map[string]int
	nextID   int
	log      []string // what happened, in order (Log)
}

var (
	_ front.Launcher = (*Launcher)(nil)
	_ front.Session  = (*session)(nil)
	_ front.Prober   = (*probingSession)(nil)
	_ front.Syncer   = (*session)(nil)
)

// Capabilities implements front.Launcher.
func (l *Launcher) Capabilities() front.Capabilities {
	return front.Capabilities{StartEarly: !l.Late, Overlap: !l.Outside, OutsideTurns: l.PersonTypes || l.Outside, PersonTypes: l.PersonTypes,
		Resumes: !l.NoResume, Queues: l.queues()}
}

// queues reports whether the sessions take a turn sent while one runs into
// it, and echo each prompt as they take it, as the stream-json harness
// started by the headless front does.
// A stream-json session queues as the real harness does (its
// --replay-user-messages: DESIGN.md «Queued cut»); the harness's own
// screen, the relay and the Codex front do not.
func (l *Launcher) queues() bool { return !l.PersonTypes && !l.Outside && !l.Codex && !l.Gemini }

// Launch starts a scripted harness for s. A spec that resumes a session
// the Launcher never saw is refused the way the harness refuses it.
func (l *Launcher) Launch(ctx context.Context, s front.Spec) (front.Session, error) {
	l.mu.Lock()
	p := &Proc{N: len(l.procs) + 1, Spec: s, l: l}
	l.procs = append(l.procs, p)
	if s.Resume != "" {
		p.session = s.Resume
	} else {
		l.nextID++
		p.session = fmt.Sprintf("mem-session-%d", l.nextID)
	}
	l.logf("launch %d", p.N)
	l.mu.Unlock()
	ss := &session{l: l, p: p, events: make(chan transcript.Event), prompts: make(chan front.Turn, 16),
		intr: make(chan struct{}, 1), endInput: make(chan struct{}), kill: make(chan struct{}), done: make(chan struct{})}
	ss.exit.CostUSD = l.ExitCost
	if l.PersonTypes {
		// The interactive front's translation, on the engine's clock (the
		// bubble's, under testing/synctest); its Esc is the interrupt.
		ss.scr = interactive.NewTranslation(front.WallClock{}, slog.New(slog.DiscardHandler), interactive.DefaultSubmitTimeout,
			s.Resume, func() { _ = ss.interrupt() })
	} else {
		ss.rec = front.NewRecords(ss.events, s.Now)
		if l.Behind > 0 {
			ss.lag = newLagPipe(l.Behind)
			go ss.read()
		}
	}
	p.s = ss
	if l.Codex {
		if s.Resume != "" && !l.knows(s.Resume) {
			return nil, fmt.Errorf("thread/resume: no thread %s", s.Resume)
		}
		sess := l.codexSession(ss, s)
		go ss.run(ctx)
		return sess, nil
	}
	if l.Gemini {
		if s.Resume != "" && !l.knows(s.Resume) {
			return nil, fmt.Errorf("agent session/load: Session not found: %s", s.Resume)
		}
		sess, err := l.geminiSession(ss, s)
		if err != nil {
			return nil, err
		}
		go ss.run(ctx)
		return sess, nil
	}
	go ss.run(ctx)
	if l.Window > 0 {
		return &probingSession{ss}, nil
	}
	return ss, nil
}

// knows reports whether a session ran a turn (Codex keeps its thread).
func (l *Launcher) knows(session string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	_, ok := l.history[session]
	return ok
}

func (l *Launcher) logf(format string, args ...any) {
	l.log = append(l.log, fmt.Sprintf(format, args...))
}

// Log lists what the harnesses did, in order: "launch N", "prompt N"
// (harness N was sent a prompt), "request N <session> turn T round R",
// "taken N" (harness N took a prompt sent while its turn ran into that
// turn), "result N", "cut N", "stop-tool N", "cancel N" (the engine's commands
// to end a turn), "ended N <how>" (the front told the engine harness N's
// turn ended, and how: front.Ending's words), "stop N" (stopped by the
// engine), "kill N", "exit N".
func (l *Launcher) Log() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.log...)
}

// Procs lists the harnesses launched, in order.
func (l *Launcher) Procs() []*Proc {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]*Proc(nil), l.procs...)
}

// Requests lists the main-thread requests the model answered, in order.
func (l *Launcher) Requests() []Request {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]Request(nil), l.requests...)
}

// Sessions lists the sessions that made a request, in the order of their
// first one (what the API of a real harness sees).
func (l *Launcher) Sessions() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.order...)
}

// FirstRequest is the first request a session made: its first prompt,
// and no history.
func (l *Launcher) FirstRequest(session string) (Request, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, r := range l.requests {
		if r.Session == session {
			return r, true
		}
	}
	return Request{}, false
}

// Proc is one launched harness.
type Proc struct {
	// N numbers the Launcher's harnesses from 1; Spec is what it was
	// launched with.
	N    int
	Spec front.Spec

	l       *Launcher
	s       *session
	session string
	prompts []string
	stopped bool // the engine stopped it
	killed  bool
}

// Session is the session the harness runs.
func (p *Proc) Session() string { return p.session }

// Prompts are the prompts the harness was sent, in order.
func (p *Proc) Prompts() []string {
	p.l.mu.Lock()
	defer p.l.mu.Unlock()
	return append([]string(nil), p.prompts...)
}

// Stopped reports whether the engine stopped the harness.
func (p *Proc) Stopped() bool {
	p.l.mu.Lock()
	defer p.l.mu.Unlock()
	return p.stopped
}

// Kill makes the harness die now, as a SIGKILL does: what it did not say
// yet is lost. It does not wait.
func (p *Proc) Kill() {
	p.l.mu.Lock()
	if !p.killed && !p.stopped {
		p.killed = true
		p.l.logf("kill %d", p.N)
	}
	p.l.mu.Unlock()
	p.s.killOnce.Do(func() { close(p.s.kill) })
}

// session is one scripted harness: a goroutine that answers its prompts
// with the Launcher's Model.
type session struct {
	l *Launcher
	p *Proc

	// events is the in-memory pipe of the harness's records; rec reads
	// it with the headless front's own loop (front.Records). Or, at the
	// harness's own screen, scr translates what it writes to its files
	// (Screen), as the interactive front does, and rec is nil.
	events   chan transcript.Event
	rec      *front.Records
	lag      *lagPipe // the pipe before events of a front that is behind (Launcher.Behind)
	scr      *interactive.Translation
	cdx      *codexPipe
	gem      *geminiPipe
	prompts  chan front.Turn
	intr     chan struct{}
	endInput chan struct{}
	endOnce  sync.Once
	kill     chan struct{}
	killOnce sync.Once
	done     chan struct{}

	// Owned by run until done is closed. outside is the last prompt the
	// person or the application sent (Round.PersonNext).
	outside string
	// unmarked: the turn ending now gets no turn_duration line (screen).
	unmarked bool
	exit     front.Exit
	cost     float64
	context  int
	msgSeq   int
}

type probingSession struct{ *session }

// Next is the front's translation's next fact; Log records each turn's
// end.
func (s *session) Next(ctx context.Context) (f front.Fact, err error) {
	if s.scr != nil {
		f, err = s.scr.Next(ctx)
	} else {
		f, err = s.rec.Next(ctx)
	}
	if e, ok := f.(front.TurnEnded); ok {
		s.l.mu.Lock()
		s.l.logf("ended %d %s", s.p.N, e.How)
		s.l.mu.Unlock()
	}
	return f, err
}

// Begin gives the harness its first prompt, as its launch does.
func (s *session) Begin() error {
	t := front.Turn{Kind: front.TurnWork, Prompt: s.p.Spec.Prompt}
	if err := s.refused(t); err != nil {
		return err
	}
	return s.queue(t)
}

// refused is Launcher.Refuse's word on turn t.
func (s *session) refused(t front.Turn) error {
	if s.l.Refuse == nil {
		return nil
	}
	err := s.l.Refuse(s.p.N, t)
	if err != nil {
		s.l.mu.Lock()
		s.l.logf("refused %d", s.p.N)
		s.l.mu.Unlock()
	}
	return err
}

// Send gives the harness a prompt. At its own screen the front types it,
// and the translation awaits it in the transcript.
func (s *session) Send(t front.Turn) error {
	if err := s.refused(t); err != nil {
		return err
	}
	if s.scr != nil {
		s.scr.Typing(t.Kind, t.Prompt)(nil)
	}
	return s.queue(t)
}

// queue is the prompt's way to the harness.
func (s *session) queue(t front.Turn) error {
	select {
	case <-s.done:
		return harness.ErrExited
	default:
	}
	select {
	case s.prompts <- t:
		return nil
	default:
		return fmt.Errorf("fronttest: too many prompts queued")
	}
}

// Cut, StopTool and Cancel are the harness's one interrupt, as for the
// stream-json harness; Log records each by its name.
func (s *session) Cut() error      { return s.command("cut") }
func (s *session) StopTool() error { return s.command("stop-tool") }
func (s *session) Cancel() error   { return s.command("cancel") }

// command is honoured at the next message boundary of a running turn:
// during a request's latency or a tool's run. One sent while no turn runs
// is ignored, as the harness ignores it.
func (s *session) command(what string) error {
	s.l.mu.Lock()
	s.l.logf("%s %d", what, s.p.N)
	s.l.mu.Unlock()
	if s.scr != nil {
		// The screen's one interrupt, Esc, pressed when the translation
		// says one is due (interactive.Translation.Interrupt).
		if s.scr.Interrupt() == "" {
			return s.interrupt()
		}
		return nil
	}
	// Told and sent under one lock: a turn starting now either drops the
	// interrupt as sent while no turn ran, or is interrupted and knows it.
	return s.rec.Interrupt(s.interrupt)
}

// interrupt is the harness's interrupt.
func (s *session) interrupt() error {
	select {
	case s.intr <- struct{}{}:
	default:
	}
	return nil
}

func (s *session) EndAfterTurn() error {
	s.endOnce.Do(func() { close(s.endInput) })
	return nil
}

func (s *session) Stop() {
	s.l.mu.Lock()
	if !s.p.stopped && !s.p.killed {
		s.p.stopped = true
		s.l.logf("stop %d", s.p.N)
	}
	s.l.mu.Unlock()
	s.killOnce.Do(func() { close(s.kill) })
	<-s.done
}

func (s *session) Exit() front.Exit {
	<-s.done
	return s.exit
}

// Probe answers the context-usage request: the Launcher's window and
// floor, the session's messages on top.
func (s *probingSession) Probe(ctx context.Context) (transcript.ContextUsage, error) {
	if s.l.ProbeTook > 0 {
		t := time.NewTimer(s.l.ProbeTook)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return transcript.ContextUsage{}, ctx.Err()
		case <-s.done:
			return transcript.ContextUsage{}, harness.ErrExited
		}
	}
	select {
	case <-s.done:
		return transcript.ContextUsage{}, harness.ErrExited
	default:
	}
	s.l.mu.Lock()
	msgs := max(s.context-s.l.Floor, 0)
	s.l.mu.Unlock()
	b, _ := jsonenc.Marshal(map[string]any{"totalTokens": s.l.Floor + msgs, "maxTokens": s.l.Window,
		"isAutoCompactEnabled": s.l.AutoCompact, "model": s.model(),
		"categories": []any{
			map[string]any{"id": "system_prompt", "tokens": s.l.Floor},
			map[string]any{"id": "messages", "tokens": msgs},
		}})
	return transcript.ContextUsageOf(gjson.ParseBytes(b)), nil
}

func (s *session) model() string {
	if s.l.ModelName != "" {
		return s.l.ModelName
	}
	return "claude-mem-1"
}

// errKilled ends run when the harness is stopped or killed.
type errKilled struct{}

func (s *session) run(ctx context.Context) {
	defer close(s.done)
	defer s.closeOutput()
	defer func() {
		s.l.mu.Lock()
		s.l.logf("exit %d", s.p.N)
		switch {
		case s.p.killed:
			s.exit.Why = "the harness exited before the turn ended (signal: killed)"
		case s.p.stopped:
			s.exit.Why = "the harness was stopped"
		case s.exit.Why == "":
			s.exit.Why = "the harness exited before the turn ended"
		}
		s.l.mu.Unlock()
	}()
	defer func() {
		if r := recover(); r != nil {
			if _, ok := r.(errKilled); !ok {
				panic(r)
			}
		}
	}()
	if ctx.Done() != nil {
		// The context's end is the harness's SIGINT, which it takes as an
		// interrupt; it is killed if still there a grace period later (as
		// harness.Start's Cmd.Cancel and WaitDelay do).
		stop := context.AfterFunc(ctx, func() {
			_ = s.interrupt()
			t := time.NewTimer(cmp.Or(s.p.Spec.Grace, 5*time.Second))
			defer t.Stop()
			select {
			case <-t.C:
				s.killOnce.Do(func() { close(s.kill) })
			case <-s.done:
			}
		})
		defer stop()
	}
	s.l.mu.Lock()
	resume := s.p.Spec.Resume
	_, known := s.l.history[resume]
	s.l.mu.Unlock()
	if resume != "" && !known {
		// The harness's refusal: a result before any init line, then exit 1.
		s.emit(map[string]any{"type": "result", "subtype": "error_during_execution", "is_error": true, "result": "",
			"session_id": "", "num_turns": 0, "total_cost_usd": 0})
		s.exit.Why = "the harness exited before the turn ended (exit status 1): No conversation found with session ID: " + resume
		return
	}
	for {
		// Prompts queued before the input was closed are still taken.
		var pr front.Turn
		select {
		case pr = <-s.prompts:
		default:
			select {
			case pr = <-s.prompts:
			case <-s.endInput:
				s.exit.Why = "the harness exited (input closed)"
				return
			case <-s.kill:
				return
			}
		}
		last := s.turn(pr)
		switch {
		case last.PersonExits:
			s.exit.ByPerson, s.exit.Why = true, "the person ended the harness"
			return
		case last.PersonNext != "":
			s.outside = last.PersonNext
			_ = s.queue(front.Turn{Kind: front.TurnWork, Prompt: last.PersonNext})
		}
	}
}

// emit writes one record to the in-memory pipe, a stream-json line as the
// harness writes it, decoded as the harness package decodes its stdout;
// the front reads and translates it as the headless front does
// (front.Records). The pipe is unbuffered and the front reads a record
// only when the engine asks for a fact, after it decided on the one
// before, so the session runs in step with the engine (unless the front
// is behind, Launcher.Behind). A kill ends the harness, with what it did
// not write lost.
func (s *session) emit(v map[string]any) {
	if s.cdx != nil {
		s.cdx.emit(v)
		return
	}
	if s.gem != nil {
		s.gem.emit(v)
		return
	}
	if s.scr != nil {
		s.screen(v)
		return
	}
	if s.lag != nil {
		s.lag.write(record(v))
		return
	}
	select {
	case s.events <- record(v):
	case <-s.kill:
		panic(errKilled{})
	}
}

// record is v as the harness package decodes a line of it.
func record(v map[string]any) transcript.Event {
	b, err := jsonenc.Marshal(v)
	if err != nil {
		panic(err)
	}
	ev, err := transcript.Decode(b)
	if err != nil {
		panic(err)
	}
	return ev
}

// closeOutput says the harness is gone: the pipe closes, or the
// translation of its files hears its exit.
func (s *session) closeOutput() {
	if s.cdx != nil {
		s.cdx.queue.Close()
		return
	}
	if s.gem != nil {
		s.gem.close()
		return
	}
	if s.scr != nil {
		s.scr.Exited()
		return
	}
	if s.lag != nil {
		s.lag.close() // the reader closes events once it has read all
		return
	}
	close(s.events)
}

// wait waits d (or until until is closed); false: the turn was
// interrupted. A kill ends the harness.
func (s *session) wait(d time.Duration, until <-chan struct{}) bool {
	var timer <-chan time.Time
	if until == nil {
		t := time.NewTimer(d)
		defer t.Stop()
		timer = t.C
	}
	select {
	case <-timer:
		return true
	case <-until:
		return true
	case <-s.intr:
		return false
	case <-s.kill:
		panic(errKilled{})
	}
}

// turn plays one turn and returns the round that ended it.
func (s *session) turn(t front.Turn) (last Round) {
	p, prompt := s.p, t.Prompt
	sid := p.session
	if !s.begin(prompt) {
		s.compact(prompt)
		return Round{}
	}
	turnN := s.l.turnOf(sid, prompt)
	turns := 0
	for round := 1; ; round++ {
		turns++
		if round > 1 {
			t = s.takeQueued(t)
			prompt = t.Prompt
		}
		r := s.l.ask(Request{Session: sid, Proc: p.N, Turn: turnN, Round: round, Prompt: prompt, Writing: t.Kind == front.TurnWriting})
		if r.Took > 0 && !s.wait(r.Took, nil) {
			s.interrupted(turns)
			return
		}
		for _, trigger := range r.PreCompact {
			s.preCompact(trigger)
		}
		s.exit.Skipped += len(r.Malformed)
		switch {
		case r.Crash:
			s.exit.Why = "the harness exited before the turn ended (exit status 3)"
			panic(errKilled{})
		case r.Hang:
			<-s.kill
			panic(errKilled{})
		}
		s.before(r)
		switch {
		case r.Overflow:
			s.emit(map[string]any{"type": "assistant", "session_id": sid, "parent_tool_use_id": nil, "error": "invalid_request",
				"is_api_error_message": true, "message": map[string]any{"id": "msg_synthetic", "model": "<synthetic>",
					"content": []any{map[string]any{"type": "text", "text": "Prompt is too long"}}}})
			s.result(true, "Prompt is too long", "prompt_too_long", "", turns)
			return
		case r.Limit != nil:
			s.limited(*r.Limit, turns)
			return r // what the person does next applies
		}
		s.reply(r)
		if r.Tool == nil {
			s.unmarked = r.Unmarked
			s.result(false, r.Text, "completed", "end_turn", turns)
			return r
		}
		if r.Tool.Started != nil {
			r.Tool.Started(p)
		}
		if !s.wait(cmp.Or(r.Tool.Took, time.Second), r.Tool.Until) {
			s.interrupted(turns)
			return
		}
		s.emit(map[string]any{"type": "user", "session_id": sid, "parent_tool_use_id": nil,
			"message": map[string]any{"role": "user", "content": []any{map[string]any{"type": "tool_result",
				"tool_use_id": fmt.Sprintf("toolu_%d", s.msgSeq), "content": "ok"}}}})
		if r.Stopped {
			s.result(false, "", "hook_stopped", "tool_use", turns)
			return r
		}
	}
}

// begin starts a turn on prompt as the harness does: an interrupt sent
// while no turn ran is dropped, the prompt is recorded, and the init line
// (and the prompt's own line, where the harness writes one) goes out.
// false: the prompt is a /compact, which makes no request.
func (s *session) begin(prompt string) bool {
	l, p := s.l, s.p
	drop := func() error {
		select {
		case <-s.intr: // an interrupt sent while no turn ran
		default:
		}
		return nil
	}
	if s.rec != nil {
		_ = s.rec.Turn(drop)
	} else {
		_ = drop()
	}
	l.mu.Lock()
	p.prompts = append(p.prompts, prompt)
	l.logf("prompt %d", p.N)
	l.mu.Unlock()
	sid := p.session
	s.emit(map[string]any{"type": "system", "subtype": "init", "session_id": sid, "model": s.model(), "claude_code_version": version})
	switch {
	case l.PersonTypes || (l.Outside && prompt == s.outside):
		// The harness's own screen shows what the person typed (its
		// transcript file has the line), and the relay tells of what the
		// application sent.
		s.emit(map[string]any{"type": "user", "session_id": sid, "parent_tool_use_id": nil,
			"message": map[string]any{"role": "user", "content": prompt}})
	case l.queues():
		s.replay(prompt) // a stream-json harness echoes what it takes
	}
	return !strings.HasPrefix(strings.TrimSpace(prompt), "/compact")
}

// takeQueued is the harness's look for a turn sent while t ran, before its
// next request: one there is taken into the running turn, echoed, and
// carried by the request beside the tool's result; its kind is the
// request's from then on. A harness that does not queue leaves it for
// its own turn.
func (s *session) takeQueued(t front.Turn) front.Turn {
	if !s.l.queues() {
		return t
	}
	select {
	case q := <-s.prompts:
		l, p := s.l, s.p
		l.mu.Lock()
		p.prompts = append(p.prompts, q.Prompt)
		l.history[p.session] = append(l.history[p.session], "user: "+q.Prompt)
		l.logf("taken %d", p.N)
		l.mu.Unlock()
		s.replay(q.Prompt)
		return q
	default:
		return t
	}
}

// replay is the stream-json harness's echo of a prompt it takes
// (--replay-user-messages).
func (s *session) replay(prompt string) {
	s.emit(map[string]any{"type": "user", "session_id": s.p.session, "parent_tool_use_id": nil, "isReplay": true,
		"message": map[string]any{"role": "user", "content": prompt}})
}

// turnOf counts a turn of session sid on prompt: its number, and the
// prompt in the session's history.
func (l *Launcher) turnOf(sid, prompt string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.history == nil {
		l.history, l.turns = map[string][]string{}, map[string]int{}
	}
	l.turns[sid]++
	l.history[sid] = append(l.history[sid], "user: "+prompt)
	return l.turns[sid]
}

// ask records req (its sequence number and the session's history filled
// in) and returns the model's round for it.
func (l *Launcher) ask(req Request) Round {
	l.modelMu.Lock()
	defer l.modelMu.Unlock()
	l.mu.Lock()
	l.seq++
	req.Seq, req.History = l.seq, slices.Clone(l.history[req.Session])
	l.requests = append(l.requests, req)
	if !slices.Contains(l.order, req.Session) {
		l.order = append(l.order, req.Session)
	}
	l.logf("request %d %s turn %d round %d", req.Proc, req.Session, req.Turn, req.Round)
	l.mu.Unlock()
	return l.Model(req)
}

// before writes what comes ahead of a round's reply: its subagents'
// rounds, and a compaction the harness made.
func (s *session) before(r Round) {
	sid := s.p.session
	for i, c := range r.Subagents {
		s.msgSeq++
		s.emit(map[string]any{"type": "assistant", "session_id": sid, "parent_tool_use_id": "toolu_task",
			"message": s.message(c, fmt.Sprintf("subagent round %d", i+1), nil)})
	}
	if r.Compacted {
		s.emit(map[string]any{"type": "system", "subtype": "compact_boundary", "session_id": sid,
			"compact_metadata": map[string]any{"trigger": "auto", "pre_tokens": s.context, "post_tokens": r.Context}})
	}
}

// reply writes the round's reply, and keeps it in the session's history.
func (s *session) reply(r Round) {
	l, sid := s.l, s.p.session
	s.msgSeq++
	l.mu.Lock()
	s.context = r.Context
	l.history[sid] = append(l.history[sid], "assistant: "+r.Text)
	if r.Tool != nil {
		l.history[sid] = append(l.history[sid], "tool: "+r.Tool.Command)
	}
	l.mu.Unlock()
	if r.Split && r.Text != "" && r.Tool != nil {
		s.emit(map[string]any{"type": "assistant", "session_id": sid, "parent_tool_use_id": nil,
			"message": s.message(r.Context, r.Text, nil)})
		s.emit(map[string]any{"type": "assistant", "session_id": sid, "parent_tool_use_id": nil,
			"message": s.message(r.Context, "", r.Tool)})
		return
	}
	s.emit(map[string]any{"type": "assistant", "session_id": sid, "parent_tool_use_id": nil,
		"message": s.message(r.Context, r.Text, r.Tool)})
}

// compact is the harness's /compact: flower's PreCompact hook runs (it
// posts to the step's inbox and waits for flower to take the request),
// blocks the compaction, and the turn ends without a request.
func (s *session) compact(prompt string) {
	s.preCompact("manual")
	s.result(false, "Compaction blocked by a PreCompact hook", "completed", "", 0)
}

// preCompact runs flower's PreCompact hook (levers.RunHook, what `flower
// hook precompact` runs) for a compaction the harness tries.
func (s *session) preCompact(trigger string) {
	if dir := s.p.Spec.Inbox; dir != "" {
		in, _ := jsonenc.Marshal(map[string]any{"trigger": trigger, "session_id": s.p.session, "hook_event_name": "PreCompact"})
		_ = levers.RunHook(strings.NewReader(string(in)), io.Discard, dir)
	}
}

// limited writes what the harness writes for a request the API refused
// with a limit, and ends the turn in its error result.
func (s *session) limited(lim Limit, turns int) {
	sid := s.p.session
	apiError, text := "rate_limit", "API Error: Request rejected (429) · This request would exceed the rate limit for your organization."
	var params map[string]any
	if lim.Usage {
		apiError, text = "usage_limit_reached", "You've hit your limit."
		reset := time.Now().Add(lim.ResetIn).Unix()
		info := map[string]any{"status": "rejected", "resetsAt": reset, "rateLimitType": "five_hour"}
		s.emit(map[string]any{"type": "rate_limit_event", "session_id": sid, "rate_limit_info": info})
		params = map[string]any{"rate_limit_info": info}
	} else {
		s.emit(map[string]any{"type": "system", "subtype": "api_retry", "session_id": sid, "attempt": 1, "max_retries": 1,
			"retry_delay_ms": lim.RetryAfter.Milliseconds(), "error_status": 429, "error": "rate_limit"})
	}
	s.emit(map[string]any{"type": "assistant", "session_id": sid, "parent_tool_use_id": nil, "error": "rate_limit",
		"is_api_error_message": true, "api_error_status": 429, "api_error": apiError, "api_error_params": params,
		"message": map[string]any{"id": "msg_synthetic", "model": "<synthetic>",
			"content": []any{map[string]any{"type": "text", "text": text}}}})
	line := map[string]any{"type": "result", "subtype": "success", "is_error": true, "result": text,
		"session_id": sid, "total_cost_usd": s.cost, "num_turns": turns, "terminal_reason": "api_error",
		"stop_reason": "stop_sequence", "api_error_status": 429, "api_error": apiError}
	s.emit(line)
	s.l.mu.Lock()
	s.l.logf("limited %d", s.p.N)
	s.l.mu.Unlock()
}

func (s *session) interrupted(turns int) {
	sid := s.p.session
	s.emit(map[string]any{"type": "user", "session_id": sid, "parent_tool_use_id": nil,
		"message": map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": "[Request interrupted by user for tool use]"}}}})
	s.result(true, "", "aborted_tools", "", turns)
}

func (s *session) message(ctx int, text string, tool *Tool) map[string]any {
	content := []any{}
	if text != "" {
		content = append(content, map[string]any{"type": "text", "text": text})
	}
	stop := "end_turn"
	if tool != nil {
		stop = "tool_use"
		content = append(content, map[string]any{"type": "tool_use", "id": fmt.Sprintf("toolu_%d", s.msgSeq),
			"name": cmp.Or(tool.Name, "Bash"), "input": map[string]any{"command": tool.Command}})
	}
	return map[string]any{"id": fmt.Sprintf("msg_%d_%d", s.p.N, s.msgSeq), "model": s.model(), "content": content,
		"stop_reason": stop, "usage": map[string]any{"input_tokens": 100, "cache_creation_input_tokens": 0,
			"cache_read_input_tokens": max(ctx-100, 0), "output_tokens": 50}}
}

// result ends a turn. stop is the top-level stop_reason ("" for none, as
// an interrupted or refused turn has).
func (s *session) result(isError bool, text, terminal, stop string, turns int) {
	s.cost += 0.01
	subtype := "success"
	if isError {
		subtype = "error_during_execution"
	}
	line := map[string]any{"type": "result", "subtype": subtype, "is_error": isError, "result": text,
		"session_id": s.p.session, "total_cost_usd": s.cost, "num_turns": turns, "terminal_reason": terminal}
	if stop != "" {
		line["stop_reason"] = stop
	} else {
		line["stop_reason"] = nil
	}
	if w := s.l.ResultWindow; w > 0 {
		line["modelUsage"] = map[string]any{s.model(): map[string]any{"contextWindow": w}}
	}
	s.emit(line)
	s.l.mu.Lock()
	s.l.logf("result %d", s.p.N)
	s.l.mu.Unlock()
}

// screen writes record v as the harness at its own screen states it
// (Screen); a kill ends the harness.
func (s *session) screen(v map[string]any) {
	select {
	case <-s.kill:
		panic(errKilled{}) // a killed harness writes nothing more
	default:
	}
	Screen(s.scr, v, !s.unmarked)
}

// Screen gives tr stdout record v as the harness at its own screen states
// it (package interactive): a line of its transcript file, and its state
// file's status. The file spells the session sessionId and the error
// fields in camel case, and gives each line the harness's version. It has
// no init line (the state file says busy then), no result (the state file
// says idle then, after a turn_duration line for a turn that ended on its
// own; an interrupted or refused turn's end is the line before), and
// none of stdout's own lines (a retry, a rate_limit_event). A subagent's
// lines go to a file of their own, which the front does not read.
// marked false: a turn that ends on its own gets no turn_duration line
// (Round.Unmarked).
func Screen(tr *interactive.Translation, v map[string]any, marked bool) {
	switch {
	case v["subtype"] == "init":
		tr.Status("busy")
	case v["type"] == "result":
		if v["terminal_reason"] == "completed" && v["stop_reason"] == "end_turn" && marked {
			tr.Line(record(fileLine(map[string]any{"type": "system", "subtype": "turn_duration", "session_id": v["session_id"]})))
		}
		tr.Status("idle")
	case v["subtype"] == "api_retry" || v["type"] == "rate_limit_event" || v["parent_tool_use_id"] != nil:
	default:
		tr.Line(record(fileLine(v)))
	}
}

// fileKeys are the transcript file's names of stdout's fields.
var fileKeys = map[string]string{"session_id": "sessionId", "is_api_error_message": "isApiErrorMessage",
	"api_error_status": "apiErrorStatus", "api_error": "apiError", "api_error_params": "apiErrorParams"}

// fileLine is a main-thread stdout record v as its transcript file line.
func fileLine(v map[string]any) map[string]any {
	out := map[string]any{"isSidechain": false, "version": version}
	for k, x := range v {
		switch {
		case k == "parent_tool_use_id":
		case fileKeys[k] != "":
			out[fileKeys[k]] = x
		default:
			out[k] = x
		}
	}
	return out
}
