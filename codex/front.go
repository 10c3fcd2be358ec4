package codex

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/flowerhq/flower/codexrpc"
	"github.com/flowerhq/flower/envinject"
	"github.com/flowerhq/flower/front"
	"github.com/flowerhq/flower/levers"
	"github.com/flowerhq/flower/transcript"
)

// Launcher starts each session as a `codex app-server` process. Its
// Spec.Args are the person's own arguments for app-server (-c key=value),
// given after flower's: a key flower holds is still flower's only if the
// person does not set it again. It readies nothing for a run (no Prepare):
// flower's holds go in with each start (Overrides).
type Launcher struct{}

var (
	_ front.Launcher = Launcher{}
	_ front.Session  = (*session)(nil)
	_ front.Prober   = (*session)(nil)
)

// Capabilities: an app-server waits for its first turn/start, so it can
// be started early; the engine starts every turn; Codex keeps each thread
// in CODEX_HOME, so a session resumes by its thread id.
func (Launcher) Capabilities() front.Capabilities {
	return front.Capabilities{StartEarly: true, Overlap: true, Resumes: true, CredentialFix: CredentialFix, Untested: codexrpc.Untested}
}

// CredentialFix names what to fix when the API refuses the Codex CLI's
// credentials: the OpenAI key env gives it, masked, or its login; a
// provider of the person's own reads the variable its env_key names.
func CredentialFix(env []string) string {
	for i := len(env) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(env[i], "OPENAI_API_KEY="); ok && v != "" {
			return "check OPENAI_API_KEY (" + envinject.Mask(v) + ") or the env_key of your model provider in $CODEX_HOME/config.toml, or log in with `codex login`"
		}
	}
	return "log in with `codex login`, or set OPENAI_API_KEY (or the env_key of your model provider in $CODEX_HOME/config.toml)"
}

// startTimeout bounds the app-server's start: its handshake and the
// thread's opening.
const startTimeout = 60 * time.Second

// Launch starts the app-server and opens the session's thread: a new one,
// or Spec.Resume's.
func (Launcher) Launch(ctx context.Context, s front.Spec) (front.Session, error) {
	log := s.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	tail := &front.Tail{Log: log, Msg: "codex stderr"}
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	c, err := codexrpc.Start(ctx, codexrpc.Config{Binary: s.Path, Dir: s.Dir, Overrides: Overrides(s),
		Args: s.Args, BaseEnv: s.Env, Log: tail, Grace: s.Grace, Logger: log})
	if err != nil {
		return nil, tail.Wrap(err)
	}
	th, endpoint, err := openThread(ctx, c, s)
	if err != nil {
		_ = c.Close()
		return nil, tail.Wrap(err)
	}
	log.Info("codex thread open", "thread", th.ID, "model", th.Model, "resumed", s.Resume != "", "held", s.Hold != nil, "endpoint", endpoint)
	ss := newSession(c, th, s, log, tail)
	ss.tr.endpoint = endpoint
	return ss, nil
}

// NewSession is the Codex front's session of thread th on c, started for
// s, its first fact the thread's Init: what Launch returns, on an
// app-server of the caller's. shown, when not nil, is what a screen
// sharing c shows of a turn of a kind in place of its prompt ("" for the
// prompt itself); a first prompt of flower's own (Spec.Ours, a
// successor's) is a turn of kind front.TurnFirst.
func NewSession(c Conn, th codexrpc.Thread, s front.Spec, shown func(front.TurnKind) string) front.Session {
	log := s.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ss := newSession(c, th, s, log, &front.Tail{Log: log, Msg: "codex stderr"})
	ss.shown = shown
	if s.Ours {
		ss.first = front.TurnFirst
	}
	return ss
}

// newSession is the session of thread th on c, its first fact the
// thread's Init.
func newSession(c Conn, th codexrpc.Thread, s front.Spec, log *slog.Logger, tail *front.Tail) *session {
	ss := &session{c: c, prompt: s.Prompt, first: front.TurnWork, log: log, tail: tail, windowKnown: make(chan struct{}),
		tr: translator{thread: th.ID, model: th.Model, held: s.Hold != nil}}
	ss.pull.Add(front.Init{SessionID: th.ID, Model: th.Model, Version: versionOf(c)})
	return ss
}

// versionOf is the Codex CLI's version, when c knows it (a
// *codexrpc.Client does, once initialized).
func versionOf(c Conn) string {
	if v, ok := c.(interface{ Version() string }); ok {
		return v.Version()
	}
	return ""
}

// Overrides are flower's -c settings for a session of s: the model asked
// for, and with compaction held, codexrpc.HoldOverrides with flower's
// hook. flower doctor starts Codex with them, as a run does.
func Overrides(s front.Spec) []string {
	var out []string
	if s.Model != "" {
		out = append(out, "model="+strconv.Quote(s.Model))
	}
	if s.Hold != nil {
		out = append(out, codexrpc.HoldOverrides(hookCommand(s.Hold))...)
	}
	return out
}

// hookCommand is the shell command of flower's PreCompact hook for Codex:
// the engine's hook answering as Codex obeys, or, with no hook to record
// the attempt, the answer alone.
func hookCommand(h *front.Hold) string {
	if len(h.Hook) == 0 {
		return "printf '%s\\n' " + levers.Quote(levers.StopDecision())
	}
	return levers.Quote(append(append([]string(nil), h.Hook...), "--codex")...)
}

// openThread opens the session's thread with flower's settings for it
// (ThreadConfig).
func openThread(ctx context.Context, c *codexrpc.Client, s front.Spec) (codexrpc.Thread, string, error) {
	config, p, err := ThreadConfig(ctx, c, s)
	if err != nil {
		return codexrpc.Thread{}, "", err
	}
	c.SetTurnSandbox(p.Sandbox)
	// The thread opens read-only, so Codex marks nothing trusted in the
	// person's config; the sandbox they chose comes with each turn.
	// Nobody answers an approval in an unattended run.
	th, err := c.OpenThread(ctx, codexrpc.ThreadOptions{Cwd: s.Dir, ApprovalPolicy: "never", Sandbox: codexrpc.ThreadSandbox, Config: config}, s.Resume)
	return th, p.Endpoint, err
}

// ThreadConfig is flower's config of a session's thread, and the person's
// Codex settings it was read from: the model's commands go without the
// keys (DESIGN.md «Held harness»), and with compaction held flower's hook
// is trusted (Codex runs only a trusted one).
func ThreadConfig(ctx context.Context, c *codexrpc.Client, s front.Spec) (map[string]any, codexrpc.Person, error) {
	var trust map[string]any
	if s.Hold != nil {
		var err error
		if trust, err = c.SessionHookTrust(ctx); err != nil {
			return nil, codexrpc.Person{}, err
		}
	}
	p, err := c.ReadPerson(ctx)
	if err != nil {
		return nil, codexrpc.Person{}, err
	}
	config := maps.Clone(p.ToolEnv)
	if config == nil {
		config = map[string]any{}
	}
	maps.Copy(config, trust)
	return config, p, nil
}

// Conn is what a session uses of its app-server: a *codexrpc.Client, or a
// scripted one (the engine's in-memory tests, package fronttest).
type Conn interface {
	Next(ctx context.Context) (codexrpc.Notification, error)
	StartTurn(ctx context.Context, threadID, text string) (string, error)
	Interrupt(ctx context.Context, threadID, turnID string) error
	Close() error
	Done() <-chan struct{}
	Err() error
	Exited() <-chan struct{}
	ExitErr() error
}

// shownStarter is a Conn whose screen can show a turn's prompt as a
// short line of flower's (a *codexrpc.Client).
type shownStarter interface {
	StartTurnShown(ctx context.Context, threadID, text, shown string) (string, error)
}

// session is one app-server and its thread.
type session struct {
	c      Conn
	prompt string
	// shown is what a screen shows of a turn of a kind in place of its
	// prompt ("" for the prompt itself); nil: no screen. first is the
	// kind of Begin's turn.
	shown func(front.TurnKind) string
	first front.TurnKind
	log   *slog.Logger
	tail  *front.Tail
	// mu guards the translator and the running turn: Next translates
	// under it; a command changes them under it, so a notification read
	// after the command is translated knowing it (DESIGN.md «Fronts»).
	mu       sync.Mutex
	tr       translator
	turn     string // the running turn's id; "" when none runs
	endAfter bool
	// pull holds the facts made and not yet returned; Next's alone.
	pull front.Pull
	// windowKnown is closed once Codex has said its window.
	windowKnown chan struct{}
	windowOnce  sync.Once
	stopOnce    sync.Once
}

// Next returns the next fact, translating the next notification when no
// fact is left.
func (s *session) Next(ctx context.Context) (front.Fact, error) {
	return s.pull.Next(ctx, func(ctx context.Context) error {
		n, err := s.c.Next(ctx)
		if err == nil {
			s.translate(n)
		}
		return err
	})
}

func (s *session) translate(n codexrpc.Notification) {
	if n.Err != nil {
		s.log.Warn("codex notification did not decode", "method", n.Method, "err", n.Err)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if v, ok := n.Value.(codexrpc.TurnStarted); ok && s.turn == "" {
		s.turn = v.TurnID // a turn the person started at Codex's screen
	}
	s.tr.facts(n, func(f front.Fact) {
		if _, ok := f.(front.TurnEnded); ok {
			s.turnEnded()
		}
		s.pull.Add(f)
	})
	if s.tr.window > 0 {
		s.windowOnce.Do(func() { close(s.windowKnown) })
	}
}

// turnEnded clears the running turn; asked to end after it, the
// app-server's input is closed, and it exits.
func (s *session) turnEnded() {
	s.turn = ""
	if s.endAfter {
		go s.Stop()
	}
}

func (s *session) Begin() error {
	if s.prompt == "" {
		return nil
	}
	return s.start(s.first, s.prompt)
}

// Send runs a turn of any kind: Codex takes each as a turn/start.
func (s *session) Send(t front.Turn) error { return s.start(t.Kind, t.Prompt) }

// callTimeout bounds one request to the app-server.
const callTimeout = 30 * time.Second

func (s *session) start(kind front.TurnKind, prompt string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tr.writing = kind == front.TurnWriting
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	var id string
	var err error
	if sc, ok := s.c.(shownStarter); ok && s.shown != nil {
		id, err = sc.StartTurnShown(ctx, s.tr.thread, prompt, s.shown(kind))
	} else {
		id, err = s.c.StartTurn(ctx, s.tr.thread, prompt)
	}
	if err != nil {
		return s.tail.Wrap(err)
	}
	s.turn = id
	return nil
}

// Cut, StopTool and Cancel are each turn/interrupt: Codex ends the turn
// at once, the thread whole.
func (s *session) Cut() error      { return s.interrupt() }
func (s *session) StopTool() error { return s.interrupt() }
func (s *session) Cancel() error   { return s.interrupt() }

func (s *session) interrupt() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.turn == "" {
		return nil
	}
	s.tr.interrupting = true
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	return s.c.Interrupt(ctx, s.tr.thread, s.turn)
}

// EndAfterTurn ends the app-server once the running turn is over: at once
// when none runs.
func (s *session) EndAfterTurn() error {
	s.mu.Lock()
	s.endAfter = true
	idle := s.turn == ""
	s.mu.Unlock()
	if idle {
		go s.Stop()
	}
	return nil
}

// Stop ends the app-server: its input closed, then killed after a grace.
func (s *session) Stop() {
	s.stopOnce.Do(func() {
		if err := s.c.Close(); err != nil {
			s.log.Warn("codex app-server did not end cleanly", "err", err)
		}
	})
}

// Exit says how the app-server ended.
func (s *session) Exit() front.Exit {
	<-s.c.Done()
	<-s.c.Exited()
	why := "the Codex app-server exited"
	if err := s.c.ExitErr(); err != nil {
		why += " (" + err.Error() + ")"
	} else if err := s.c.Err(); err != nil && !errors.Is(err, io.EOF) {
		why += " (" + err.Error() + ")"
	}
	if t := s.tail.String(); t != "" {
		why += ": " + t
	}
	return front.Exit{Why: why}
}

// Probe answers with the window once Codex has said it (its first usage
// report): the engine asks after the session's first round.
func (s *session) Probe(ctx context.Context) (transcript.ContextUsage, error) {
	select {
	case <-s.windowKnown:
	case <-ctx.Done():
		return transcript.ContextUsage{}, ctx.Err()
	case <-s.c.Done():
		return transcript.ContextUsage{}, fmt.Errorf("the Codex app-server exited before it said its window")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return transcript.ContextUsage{Model: s.tr.model, Window: s.tr.window,
		Raw: fmt.Sprintf(`{"window":%d,"held":%t}`, s.tr.window, s.tr.held)}, nil
}
