package checkup

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/creack/pty"

	"github.com/flowerhq/flower/child"
	"github.com/flowerhq/flower/interactive"
	"github.com/flowerhq/flower/scriptedapi"
)

// hello is the scripted model's answer in the interactive check.
const hello = "DOCTOR-SAYS-HELLO"

// resumeHint is the harness's goodbye as flower expects it: a header, then
// a command that resumes the session.
var resumeHint = regexp.MustCompile(`Resume this session with:(?s:.*)claude [^\r\n]*--resume [0-9a-fA-F-]{36}`)

// checkExitHint runs the harness's own screen in a pty, as the interactive
// front does, in both of its renderers: a person's /exit must print the
// resume hint in the shape flower's goodbye filter drops, and the filter
// must leave none of it.
func checkExitHint(ctx context.Context, c *Checkup) (string, error) {
	var wg sync.WaitGroup
	renderers := []string{"default", "fullscreen"}
	errs := make([]error, len(renderers))
	for i, tui := range renderers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := c.exitHint(ctx, tui); err != nil {
				errs[i] = fmt.Errorf("%s renderer: %w", tui, err)
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return "", err
	}
	return "the goodbye flower replaces, in both renderers", nil
}

// exitHint has a person's exchange with the harness's screen in tui's
// renderer (exchange), and once more if the first /exit printed no hint:
// on a loaded machine one in some dozens did, and the fact is the shape
// of the hint the harness prints, which the second exchange checks.
func (c *Checkup) exitHint(ctx context.Context, tui string) error {
	err := c.exchange(ctx, tui)
	if errors.Is(err, errNoHint) {
		err = c.exchange(ctx, tui)
	}
	return err
}

// errNoHint: the harness exited without its resume hint.
var errNoHint = errors.New("after /exit the harness printed no \"Resume this session with: claude … --resume <id>\": flower's goodbye filter knows only that shape")

// exchange is a line answered, then /exit; the screen it left behind must
// pass checkGoodbye.
func (c *Checkup) exchange(ctx context.Context, tui string) error {
	p, err := c.screenPlace(tui)
	if err != nil {
		return err
	}
	defer p.close()
	sc, err := c.startScreen(p)
	if err != nil {
		return err
	}
	defer sc.close()
	if err := sc.wait(ctx, "input box", "❯"); err != nil {
		return err
	}
	if err := sc.typeLine("say hello"); err != nil {
		return err
	}
	if err := sc.wait(ctx, "answer", hello); err != nil {
		return err
	}
	time.Sleep(time.Second) // the answer's turn ends on the screen, as a person reads it
	if err := sc.typeLine("/exit"); err != nil {
		return err
	}
	select {
	case <-sc.exited:
	case <-ctx.Done():
		return errors.New("the harness did not exit after /exit")
	}
	// What the harness printed last may still be on its way through the
	// pty on a loaded machine; a copy that never ends (something else holds
	// the pty) is bounded.
	select {
	case <-sc.copied:
	case <-time.After(10 * time.Second):
	}
	return checkGoodbye(sc.screen())
}

// screenPlace is a place whose model says hello, with a person's HOME past
// the first start: onboarding done, the key and the workspace trusted (the
// harness asks otherwise), and tui the renderer.
func (c *Checkup) screenPlace(tui string) (*place, error) {
	p, err := c.newPlace(func(r *scriptedapi.Request) scriptedapi.Reply {
		if r.Kind != scriptedapi.KindMain {
			return scriptedapi.Harmless(r)
		}
		return scriptedapi.Reply{Text: hello, Usage: firstUsage}
	})
	if err != nil {
		return nil, err
	}
	key := scriptedapi.APIKey
	if len(key) > 20 {
		key = key[len(key)-20:]
	}
	cfg, _ := json.Marshal(map[string]any{
		"hasCompletedOnboarding": true,
		"customApiKeyResponses":  map[string]any{"approved": []string{key}, "rejected": []string{}},
		"projects":               map[string]any{p.workspace: map[string]any{"hasTrustDialogAccepted": true}},
	})
	if err = p.write(true, ".claude.json", string(cfg)); err == nil {
		err = p.write(true, ".claude/settings.json", `{"tui":"`+tui+`"}`)
	}
	if err != nil {
		p.close()
		return nil, err
	}
	return p, nil
}

// ptyScreen is the harness's own screen in a pty, and all it has printed.
type ptyScreen struct {
	h      *child.Process
	mu     sync.Mutex
	out    bytes.Buffer
	copied chan struct{}
	exited chan error
}

// startScreen starts the harness as the interactive front does: the run's
// flags, no stream-json mode, in a pty, leading its own session, and gone
// with flower with all it starts (package child).
func (c *Checkup) startScreen(p *place) (*ptyScreen, error) {
	spec, _, err := c.spec(p)
	if err != nil {
		return nil, err
	}
	args := append([]string(nil), spec.Args...)
	if spec.Model != "" {
		args = append([]string{"--model", spec.Model}, args...)
	}
	h, err := child.Start(context.Background(), child.Config{
		Path: spec.Path, Args: args, Dir: spec.Dir,
		Env: append(append([]string(nil), spec.Env...), "TERM=xterm-256color"),
		PTY: true, Size: &pty.Winsize{Rows: 40, Cols: 120},
	})
	if err != nil {
		return nil, fmt.Errorf("start the harness in a pty: %w", err)
	}
	sc := &ptyScreen{h: h, copied: make(chan struct{}), exited: make(chan error, 1)}
	go sc.copy()
	go func() { <-h.Exited(); sc.exited <- h.Err() }()
	return sc, nil
}

func (sc *ptyScreen) copy() {
	defer close(sc.copied)
	b := make([]byte, 32<<10)
	for {
		n, err := sc.h.PTY().Read(b)
		sc.mu.Lock()
		sc.out.Write(b[:n])
		sc.mu.Unlock()
		if err != nil {
			return
		}
	}
}

func (sc *ptyScreen) close() {
	sc.h.Kill()
	<-sc.h.Done()
	_ = sc.h.PTY().Close()
}

func (sc *ptyScreen) screen() []byte {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	return append([]byte(nil), sc.out.Bytes()...)
}

func (sc *ptyScreen) seen(s string) bool { return bytes.Contains(sc.screen(), []byte(s)) }

// wait waits until the screen shows s.
func (sc *ptyScreen) wait(ctx context.Context, what, s string) error {
	for !sc.seen(s) {
		select {
		case <-ctx.Done():
			return fmt.Errorf("no %s in time", what)
		case err := <-sc.exited:
			sc.exited <- err
			if sc.seen(s) {
				return nil
			}
			return fmt.Errorf("the harness exited (%v) before %s", err, what)
		case <-time.After(50 * time.Millisecond):
		}
	}
	return nil
}

// typeLine types text, then Enter on its own, as a person presses it: with
// the text in the same write the harness takes it for a paste.
func (sc *ptyScreen) typeLine(text string) error {
	if _, err := sc.h.PTY().WriteString(text); err != nil {
		return err
	}
	time.Sleep(300 * time.Millisecond)
	_, err := sc.h.PTY().WriteString("\r")
	return err
}

// checkGoodbye: after /exit the screen shows the resume hint in the shape
// flower's goodbye filter drops, and the filter leaves none of it.
func checkGoodbye(screen []byte) error {
	if !resumeHint.Match(screen) {
		return errNoHint
	}
	var shown bytes.Buffer
	g := interactive.NewGoodbyeFilter(&shown)
	if _, err := g.Write(screen); err != nil {
		return err
	}
	if err := g.Flush(); err != nil {
		return err
	}
	if s := shown.String(); strings.Contains(s, "Resume this session") || strings.Contains(s, "--resume") {
		return errors.New("flower's goodbye filter lets the harness's resume hint through")
	}
	return nil
}
