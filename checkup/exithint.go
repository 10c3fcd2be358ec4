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

func (c *Checkup) exitHint(ctx context.Context, tui string) error {
	p, err := c.newPlace(func(r *scriptedapi.Request) scriptedapi.Reply {
		if r.Kind != scriptedapi.KindMain {
			return scriptedapi.Harmless(r)
		}
		return scriptedapi.Reply{Text: hello, Usage: firstUsage}
	})
	if err != nil {
		return err
	}
	defer p.close()
	// A person's HOME past the first start: onboarding done, the key and
	// the workspace trusted (the harness asks otherwise).
	key := scriptedapi.APIKey
	if len(key) > 20 {
		key = key[len(key)-20:]
	}
	cfg, _ := json.Marshal(map[string]any{
		"hasCompletedOnboarding": true,
		"customApiKeyResponses":  map[string]any{"approved": []string{key}, "rejected": []string{}},
		"projects":               map[string]any{p.workspace: map[string]any{"hasTrustDialogAccepted": true}},
	})
	if err := p.write(true, ".claude.json", string(cfg)); err != nil {
		return err
	}
	if err := p.write(true, ".claude/settings.json", `{"tui":"`+tui+`"}`); err != nil {
		return err
	}
	spec, _, err := c.spec(p)
	if err != nil {
		return err
	}
	// The interactive front's command line: the run's flags, no
	// stream-json mode.
	args := append([]string(nil), spec.Args...)
	if spec.Model != "" {
		args = append([]string{"--model", spec.Model}, args...)
	}
	// As the interactive front starts it: in a pty, leading its own
	// session, and gone with flower with all it starts (package child).
	h, err := child.Start(context.Background(), child.Config{
		Path: spec.Path, Args: args, Dir: spec.Dir,
		Env: append(append([]string(nil), spec.Env...), "TERM=xterm-256color"),
		PTY: true, Size: &pty.Winsize{Rows: 40, Cols: 120},
	})
	if err != nil {
		return fmt.Errorf("start the harness in a pty: %w", err)
	}
	f := h.PTY()
	var mu sync.Mutex
	var out bytes.Buffer
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		b := make([]byte, 32<<10)
		for {
			n, err := f.Read(b)
			mu.Lock()
			out.Write(b[:n])
			mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	exited := make(chan error, 1)
	go func() { <-h.Exited(); exited <- h.Err() }()
	defer func() {
		h.Kill()
		<-h.Done()
		_ = f.Close()
	}()
	seen := func(s string) bool {
		mu.Lock()
		defer mu.Unlock()
		return bytes.Contains(out.Bytes(), []byte(s))
	}
	wait := func(what string, cond func() bool) error {
		for !cond() {
			select {
			case <-ctx.Done():
				return fmt.Errorf("no %s in time", what)
			case err := <-exited:
				exited <- err
				if cond() {
					return nil
				}
				return fmt.Errorf("the harness exited (%v) before %s", err, what)
			case <-time.After(50 * time.Millisecond):
			}
		}
		return nil
	}
	typeLine := func(text string) error {
		if _, err := f.WriteString(text); err != nil {
			return err
		}
		// Enter on its own, as a person presses it: with the text in the
		// same write the harness takes it for a paste.
		time.Sleep(300 * time.Millisecond)
		_, err := f.WriteString("\r")
		return err
	}
	if err := wait("input box", func() bool { return seen("❯") }); err != nil {
		return err
	}
	if err := typeLine("say hello"); err != nil {
		return err
	}
	if err := wait("answer", func() bool { return seen(hello) }); err != nil {
		return err
	}
	if err := typeLine("/exit"); err != nil {
		return err
	}
	select {
	case <-exited:
	case <-ctx.Done():
		return errors.New("the harness did not exit after /exit")
	}
	select {
	case <-copied:
	case <-time.After(2 * time.Second):
	}
	mu.Lock()
	screen := append([]byte(nil), out.Bytes()...)
	mu.Unlock()
	if !resumeHint.Match(screen) {
		return errors.New("after /exit the harness printed no \"Resume this session with: claude … --resume <id>\": flower's goodbye filter knows only that shape")
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
