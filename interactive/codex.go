package interactive

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/flowerhq/flower/codex"
	"github.com/flowerhq/flower/codexrpc"
	"github.com/flowerhq/flower/front"
	"github.com/flowerhq/flower/transcript"
	"github.com/flowerhq/flower/wsock"
)

// Codex is the front of the Codex CLI's own screen on the person's
// terminal, as the Front runs Claude Code's (DESIGN.md «Codex screen»).
// Each generation is an app-server of flower's and the Codex CLI's screen
// on a pty, started with --remote on a socket of flower's: flower stands
// between the two, so the screen's messages pass to the app-server as
// they are, and flower reads the notifications of the screen's thread as
// the headless Codex front reads its own (package codex), and starts and
// interrupts turns in it, which the screen shows as the person's. Nothing
// is typed and nothing read off the screen. The screen's footer takes
// none of flower's figures, so meter (flower's status line) is the
// window's title, set anew with each event.
func (f *Front) Codex(meter func() string) front.Launcher {
	f.meter = meter
	return codexScreen{f}
}

type codexScreen struct{ f *Front }

// Capabilities: the person types the work turns; a session is resumed
// by its thread id (`codex resume`, on the screen), and the successor's
// screen starts once the burned one is gone.
func (codexScreen) Capabilities() front.Capabilities {
	return front.Capabilities{OutsideTurns: true, PersonTypes: true, Resumes: true, CredentialFix: codex.CredentialFix, Untested: codexrpc.Untested}
}

// codexScreenStart bounds a screen's start: the app-server's, the
// screen's connection, and its thread's opening.
const codexScreenStart = 60 * time.Second

// Launch starts the app-server, then the screen on the person's terminal,
// and opens the session on the thread the screen starts: its first turn
// is s.Prompt, sent by flower (the screen shows it as typed).
func (c codexScreen) Launch(ctx context.Context, s front.Spec) (front.Session, error) {
	f := c.f
	log := s.Logger
	if log == nil {
		log = f.log
	}
	f.mu.Lock()
	f.evLog = log
	f.mu.Unlock()
	dir, err := os.MkdirTemp("", "flower-codex-")
	if err != nil {
		return nil, fmt.Errorf("codex screen socket: %w", err)
	}
	g := &codexSession{f: f, dir: dir, log: log}
	ok := false
	defer func() {
		if !ok {
			g.Stop()
		}
	}()
	sock := filepath.Join(dir, "app-server.sock")
	if g.l, err = net.Listen("unix", sock); err != nil {
		return nil, fmt.Errorf("codex screen socket: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, codexScreenStart)
	defer cancel()
	grace := s.Grace
	if grace <= 0 {
		grace = DefaultGrace
	}
	if g.c, err = codexrpc.Start(ctx, codexrpc.Config{Binary: s.Path, Dir: s.Dir, Overrides: codex.Overrides(s),
		Args: s.Args, BaseEnv: s.Env, Log: &stderrLog{log: log}, Grace: grace, Logger: log, Screen: true}); err != nil {
		return nil, err
	}
	// The screen runs the model's commands itself, in a sandbox of its
	// own.
	env, err := codexrpc.SandboxEnv(append([]string(nil), s.Env...))
	if err != nil {
		return nil, err
	}
	if err := f.takeScreen(); err != nil {
		return nil, err
	}
	cfg := procConfig{Path: s.Path, Args: codexScreenArgs(sock, s.Resume), Dir: s.Dir, Env: env, Grace: grace, Logger: log,
		Size: f.term.Size()}
	if g.p, err = startProc(context.WithoutCancel(ctx), cfg, f.screen); err != nil {
		_ = f.term.Restore()
		return nil, err
	}
	g.p.start, g.p.clock = f.opts.Clock.Now(), f.opts.Clock
	f.setRunning(g.p, s.Inbox)
	log.Info("codex screen started", "pid", g.p.PID(), "interactive", true)
	conn, err := g.accept(ctx)
	if err != nil {
		return nil, err
	}
	if err := g.c.Screen(conn, func(ctx context.Context) (map[string]any, error) {
		config, _, err := codex.ThreadConfig(ctx, g.c, s)
		return config, err
	}); err != nil {
		return nil, err
	}
	th, err := g.c.ScreenThread(ctx)
	if err != nil {
		return nil, err
	}
	log.Info("codex screen thread open", "thread", th.ID, "model", th.Model, "held", s.Hold != nil)
	g.Session = codex.NewSession(g.c, th, s, codexShown)
	// The screen is up: the person's keys reach it from now on.
	if err := f.gate.Release(); err != nil {
		log.Debug("deliver held keys", "err", err)
	}
	go g.watch()
	ok = true
	return g, nil
}

// codexShown is the line the screen shows in place of a prompt of
// flower's own, which reaches the model whole (DESIGN.md «Codex screen»);
// a work turn's (the person's task, a continue's words) shows as it is.
func codexShown(k front.TurnKind) string {
	switch k {
	case front.TurnWriting:
		return "flower: your context window is nearly full. Write your handoff document now, as flower's request (sent whole to the model) says."
	case front.TurnFirst:
		return "flower: you are taking over this task from an earlier session of yourself; your handoff and the task went to the model whole."
	}
	return ""
}

// codexScreenArgs are the screen's: flower's app-server, no update check
// of its own (DESIGN.md «Held harness»), and the window's title left to
// flower's meter (for this start only: nothing is written); with resume,
// that thread reopened (`codex resume`).
func codexScreenArgs(sock, resume string) []string {
	args := []string{"--remote", "unix://" + sock, "-c", "check_for_update_on_startup=false", "-c", "tui.terminal_title=[]"}
	if resume != "" {
		args = append(append([]string{"resume"}, args...), resume)
	}
	return args
}

// codexSession is one generation on the Codex CLI's screen: the headless
// Codex front's session on the screen's thread, and the screen.
type codexSession struct {
	front.Session
	f    *Front
	log  *slog.Logger
	dir  string // the socket's folder, flower's alone
	l    net.Listener
	c    *codexrpc.Client
	p    *proc
	once sync.Once
	// stopping: flower ends the screen (Stop), not the person.
	stopping atomic.Bool
}

// accept waits for the screen to connect, as long as it runs and ctx lasts.
func (g *codexSession) accept(ctx context.Context) (*wsock.Conn, error) {
	type accepted struct {
		c   net.Conn
		err error
	}
	got := make(chan accepted, 1)
	go func() {
		c, err := g.l.Accept()
		got <- accepted{c, err}
	}()
	select {
	case a := <-got:
		if a.err != nil {
			return nil, fmt.Errorf("codex screen: %w", a.err)
		}
		return wsock.Accept(a.c)
	case <-g.p.Exited():
		return nil, fmt.Errorf("the Codex CLI's screen exited before it connected (%v)", g.p.Err())
	case <-ctx.Done():
		return nil, fmt.Errorf("the Codex CLI's screen did not connect to flower's app-server: %w", ctx.Err())
	}
}

// watch ends the app-server once the screen is gone (the person quit it):
// the session's facts end there, and its Exit says so.
func (g *codexSession) watch() {
	<-g.p.Exited()
	g.log.Info("codex screen exited", "err", g.p.Err())
	g.f.detach(g.p)
	g.Session.Stop()
}

// Cut holds the person's keys until the next screen is up (nothing they
// type then lands in the thread flower is handing off), then interrupts
// the turn. StopTool and Cancel interrupt it alone: the person goes on
// typing into the same screen.
func (g *codexSession) Cut() error { g.f.gate.Hold(); return g.Session.Cut() }

// Stop ends the screen (its exit keys, then signals), then the app-server,
// and removes the socket's folder.
func (g *codexSession) Stop() {
	g.stopping.Store(true)
	g.once.Do(func() {
		if g.p != nil {
			g.p.Stop(g.p.typeExit)
			g.f.detach(g.p)
		}
		if g.Session != nil {
			g.Session.Stop()
		} else if g.c != nil {
			_ = g.c.Close()
		}
		if g.l != nil {
			_ = g.l.Close()
		}
		_ = os.RemoveAll(g.dir)
	})
}

// Exit says how the generation ended: the screen's exit, once the
// app-server is gone too. A screen that ended well with nobody stopping
// it was quit by the person: the step's orderly end.
func (g *codexSession) Exit() front.Exit {
	<-g.p.Exited()
	e := g.Session.Exit()
	e.Why = "the Codex CLI's screen exited"
	err := g.p.Err()
	if err != nil {
		e.Why += " (" + err.Error() + ")"
	}
	e.ByPerson = err == nil && !g.stopping.Load()
	return e
}

// Probe is the headless Codex front's: the window, once Codex said it.
func (g *codexSession) Probe(ctx context.Context) (transcript.ContextUsage, error) {
	if p, ok := g.Session.(front.Prober); ok {
		return p.Probe(ctx)
	}
	return transcript.ContextUsage{}, errors.New("the Codex session says no window")
}

// stderrLog logs the app-server's stderr, line by line.
type stderrLog struct {
	log  *slog.Logger
	mu   sync.Mutex
	part string
}

func (l *stderrLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.part += string(p)
	for {
		line, rest, ok := strings.Cut(l.part, "\n")
		if !ok {
			break
		}
		if line = strings.TrimSpace(line); line != "" {
			l.log.Info("codex app-server", "line", line)
		}
		l.part = rest
	}
	return len(p), nil
}
