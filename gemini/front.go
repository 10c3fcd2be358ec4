package gemini

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/flowerhq/flower/acp"
	"github.com/flowerhq/flower/envinject"
	"github.com/flowerhq/flower/front"
)

// PinnedVersion is the Gemini CLI version make test installs (the
// Makefile's GEMINI_VERSION) and every Gemini test runs on.
const PinnedVersion = "0.61.0"

// TestedVersions are the Gemini CLI versions flower's Gemini suites
// passed on (make compat GEMINI_VERSION=X), oldest first.
var TestedVersions = front.Versions{PinnedVersion}

// Untested is the line a run says on a Gemini CLI newer than any of
// TestedVersions.
var Untested = TestedVersions.Untested("the Gemini CLI")

// Launcher starts each session as a `gemini --acp` process. Its Spec.Args
// are the person's own arguments (an approval mode, a model), after the
// trust gate's (--skip-trust for a workspace it opens).
type Launcher struct{}

var (
	_ front.Launcher = Launcher{}
	_ front.Session  = (*session)(nil)
)

// Capabilities: the ACP agent waits for its first prompt, so it can be
// started early; the engine starts every turn; the CLI keeps each session
// in its home, so a session resumes by its id.
func (Launcher) Capabilities() front.Capabilities {
	return front.Capabilities{StartEarly: true, Overlap: true, Resumes: true, CredentialFix: CredentialFix,
		Untested: Untested, Prepare: prepare}
}

// CredentialFix names what to fix when the API refuses the CLI's
// credentials: the key GEMINI_API_KEY gives it, masked, or its login.
func CredentialFix(env []string) string {
	for _, k := range []string{"GEMINI_API_KEY", "GOOGLE_API_KEY"} {
		if v := envLookup(env, k); v != "" {
			return "check " + k + " (" + envinject.Mask(v) + "), or log in with `gemini`"
		}
	}
	return "set GEMINI_API_KEY, or log in with `gemini`"
}

// Window is the context window of a Gemini model: 1 048 576 tokens for
// every model the CLI names but Gemma 4's 256 000 (its tokenLimit, read
// on 0.61.0).
func Window(model string) int {
	if strings.HasPrefix(model, "gemma-4") {
		return 256000
	}
	return 1048576
}

// prepare reads the person's Gemini settings once, before anything
// starts (a broken settings file fails the run here, as it would fail the
// CLI), and gives the window of the run's model.
func prepare(r front.Run) (front.Prepared, error) {
	settings, err := personSettings(personHome(r.Env))
	if err != nil {
		return front.Prepared{}, err
	}
	return front.Prepared{Window: Window(modelOf(r.Model, r.Args, settings))}, nil
}

// modelOf is the model a run uses: the one asked for, the person's -m, or
// their settings' model.name ("" for the CLI's own choice).
func modelOf(asked string, args []string, settings map[string]any) string {
	if asked != "" {
		return asked
	}
	for i, a := range args {
		if (a == "-m" || a == "--model") && i+1 < len(args) {
			return args[i+1]
		}
		if v, ok := strings.CutPrefix(a, "--model="); ok {
			return v
		}
	}
	if m, ok := settings["model"].(map[string]any); ok {
		if n, ok := m["name"].(string); ok {
			return n
		}
	}
	return ""
}

// startTimeout bounds the agent's start: its handshake and the session's
// opening.
const startTimeout = 90 * time.Second

// Launch starts the agent in flower's Gemini home and opens the session:
// a new one, or Spec.Resume's.
func (Launcher) Launch(ctx context.Context, s front.Spec) (front.Session, error) {
	log := s.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	h, err := newHome(s.Env, s.Hold != nil)
	if err != nil {
		return nil, err
	}
	ss, err := launch(ctx, s, h, log)
	if err != nil {
		h.remove()
		return nil, err
	}
	return ss, nil
}

func launch(ctx context.Context, s front.Spec, h *home, log *slog.Logger) (*session, error) {
	tail := &front.Tail{Log: log, Msg: "gemini stderr"}
	if s.Resume != "" {
		if err := waitOutStartMinute(ctx, h.Dir, s.Resume, s.Now, log); err != nil {
			return nil, err
		}
	}
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	args := append([]string{"--acp"}, s.Args...)
	if s.Model != "" {
		args = append(args, "--model", s.Model)
	}
	env := append(slices.Clip(s.Env), "GEMINI_CLI_HOME="+h.Dir)
	c, err := acp.Start(ctx, acp.Config{Binary: s.Path, Args: args, Dir: s.Dir, Env: env, Log: tail, Grace: s.Grace, Logger: log})
	if err != nil {
		return nil, tail.Wrap(err)
	}
	var sess acp.Session
	if s.Resume != "" {
		sess, err = c.LoadSession(ctx, s.Resume, s.Dir)
	} else {
		sess, err = c.NewSession(ctx, s.Dir)
	}
	var rec *record
	if err == nil {
		var path string
		if path, err = findRecord(h.Dir, sess.ID); err == nil {
			rec, err = openRecord(path, s.Resume != "")
		}
	}
	if err != nil {
		_ = c.Close()
		return nil, tail.Wrap(err)
	}
	log.Info("gemini session open", "session", sess.ID, "model", sess.Model, "resumed", s.Resume != "", "held", s.Hold != nil, "record", rec.path)
	ss := newSession(c, sess, c.Agent().Version, rec, s, log, tail)
	ss.home = h
	return ss, nil
}

// Conn is what a session uses of its agent: an *acp.Client, or a scripted
// one (the engine's in-memory tests, package fronttest).
type Conn interface {
	Next(ctx context.Context) (acp.Message, error)
	Prompt(session, text string) error
	Cancel(session string) error
	Close() error
	Done() <-chan struct{}
	Err() error
	Exited() <-chan struct{}
	ExitErr() error
}

// NewSession is the Gemini front's session sess (of the CLI at version)
// on c, its meter the record at recordPath read from its start, started
// for s: what Launch returns, on an agent of the caller's.
func NewSession(c Conn, sess acp.Session, version, recordPath string, s front.Spec) (front.Session, error) {
	rec, err := openRecord(recordPath, false)
	if err != nil {
		return nil, err
	}
	log := s.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return newSession(c, sess, version, rec, s, log, &front.Tail{Log: log, Msg: "gemini stderr"}), nil
}

func newSession(c Conn, sess acp.Session, version string, rec *record, s front.Spec, log *slog.Logger, tail *front.Tail) *session {
	ss := &session{c: c, rec: rec, prompt: s.Prompt, log: log, tail: tail,
		tr: translator{session: sess.ID, model: sess.Model, window: Window(sess.Model)}}
	ss.pull.Add(front.Init{SessionID: sess.ID, Model: sess.Model, Version: version})
	return ss
}

// waitOutStartMinute waits, before session id is resumed, until the
// minute its record's name says it began in is over. The CLI names a
// session's record by the minute it opens it in: a session/load in the
// same minute as the session's start opens the same file anew, and the
// history is lost (measured on 0.61.0). It waits a minute at most.
func waitOutStartMinute(ctx context.Context, geminiHome, id string, now func() time.Time, log *slog.Logger) error {
	if now == nil {
		now = time.Now
	}
	path, err := findRecord(geminiHome, id)
	if err != nil {
		return err
	}
	began, ok := startMinute(path)
	if !ok {
		return nil
	}
	wait := began.Add(time.Minute).Sub(now().UTC())
	if wait <= 0 {
		return nil
	}
	log.Info("gemini resume waits for the session's first minute to end", "session", id, "wait", wait.Round(time.Millisecond))
	t := time.NewTimer(wait + 100*time.Millisecond)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// session is one agent process and its session.
type session struct {
	c Conn
	// home is flower's Gemini home of the session (nil for NewSession's).
	home   *home
	rec    *record
	prompt string
	log    *slog.Logger
	tail   *front.Tail
	// mu guards the translator and the running turn: Next translates
	// under it; a command changes them under it.
	mu       sync.Mutex
	tr       translator
	running  bool
	endAfter bool
	// pull holds the facts made and not yet returned; Next's alone.
	pull     front.Pull
	stopOnce sync.Once
	tidyOnce sync.Once
}

// Next returns the next fact: the record's new lines are read before each
// ACP message is translated, as the CLI wrote them before it said it.
func (s *session) Next(ctx context.Context) (front.Fact, error) { return s.pull.Next(ctx, s.step) }

func (s *session) step(ctx context.Context) error {
	m, err := s.c.Next(ctx)
	if err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.readRecord()
	if err != nil {
		return err // the end, after the record's last lines
	}
	if m.Refused {
		s.log.Warn("gemini asked for a permission; flower refused it (no one is there to grant it)", "request", front.Truncate(string(m.Update), 300))
	}
	s.tr.said(m, s.out)
	return nil
}

func (s *session) readRecord() {
	ls, bad := s.rec.lines()
	if bad > 0 {
		s.log.Warn("lines of the Gemini CLI's record did not decode", "lines", bad, "record", s.rec.path)
	}
	s.tr.recorded(ls, s.rec.seen, s.out)
}

// out keeps a fact for Next; a turn's end clears the running turn, and
// asked to end after it, the agent ends.
func (s *session) out(f front.Fact) {
	if _, ok := f.(front.TurnEnded); ok {
		s.running = false
		if s.endAfter {
			go s.Stop()
		}
	}
	s.pull.Add(f)
}

func (s *session) Begin() error {
	if s.prompt == "" {
		return nil
	}
	return s.Send(front.Turn{Kind: front.TurnWork, Prompt: s.prompt})
}

// Send runs a turn of any kind: the CLI takes each as a session/prompt.
func (s *session) Send(t front.Turn) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.c.Prompt(s.tr.session, t.Prompt); err != nil {
		return s.tail.Wrap(err)
	}
	s.running = true
	return nil
}

// Cut, StopTool and Cancel are each session/cancel: the CLI ends the turn
// at once, the model's text kept and the cancelled call left out of the
// history («Gemini facts»).
func (s *session) Cut() error      { return s.cancel() }
func (s *session) StopTool() error { return s.cancel() }
func (s *session) Cancel() error   { return s.cancel() }

func (s *session) cancel() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.running {
		return nil
	}
	s.tr.interrupting = true
	return s.c.Cancel(s.tr.session)
}

// EndAfterTurn ends the agent once the running turn is over: at once when
// none runs.
func (s *session) EndAfterTurn() error {
	s.mu.Lock()
	s.endAfter = true
	idle := !s.running
	s.mu.Unlock()
	if idle {
		go s.Stop()
	}
	return nil
}

// Stop ends the agent: its input closed, then killed after a grace; then
// flower's home goes.
func (s *session) Stop() {
	s.stopOnce.Do(func() {
		if err := s.c.Close(); err != nil {
			s.log.Warn("gemini did not end cleanly", "err", err)
		}
		s.tidy()
	})
}

// tidy closes the record and removes flower's home, once the agent is
// gone (Close returned, or Exit saw it exit).
func (s *session) tidy() {
	s.tidyOnce.Do(func() {
		s.mu.Lock()
		s.rec.close() // Next reads it under the lock
		s.mu.Unlock()
		if s.home != nil {
			s.home.remove()
		}
	})
}

// Exit says how the agent ended.
func (s *session) Exit() front.Exit {
	<-s.c.Done()
	<-s.c.Exited()
	s.tidy()
	why := "the Gemini CLI exited"
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
