package main

import (
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flowerhq/flower/manifest"
	"github.com/flowerhq/flower/scriptedapi"
)

// runFlower runs flower on the real harness with env and returns its exit
// code, stderr, how long it took and the step as the manifest has it.
func runFlower(t *testing.T, env []string, args ...string) (int, string, time.Duration, *manifest.StepResult) {
	t.Helper()
	ws := t.TempDir()
	cmd := exec.Command(flowerBinary(t), append([]string{"-C", ws}, args...)...)
	cmd.Env = env
	var stderr strings.Builder
	cmd.Stderr = &stderr
	start := time.Now()
	err := cmd.Run()
	took := time.Since(start)
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	runDir, _ := filepath.EvalSymlinks(filepath.Join(ws, ".flower", "runs", "latest"))
	m, err := manifest.LoadBound(runDir)
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	return code, stderr.String(), took, m.Step("main")
}

// An endpoint that refuses the connection before any request of the run
// went through is certain: on the real harness, flower stops the step at
// the harness's first retry, within seconds, exit 8, one line naming the
// endpoint and what to check, status unreachable, and no second attempt.
func TestRefusedEndpointFailsFast(t *testing.T) {
	t.Parallel()
	srv, err := scriptedapi.Start(func(r *scriptedapi.Request) scriptedapi.Reply { return scriptedapi.Harmless(r) })
	if err != nil {
		t.Fatal(err)
	}
	closed := srv.URL
	srv.Close() // nothing listens there now
	code, stderr, took, st := runFlower(t, cliEnv(t, srv, "FLOWER_PS_DIR="+t.TempDir(), "ANTHROPIC_BASE_URL="+closed), "say hello")
	t.Logf("refused endpoint: flower exited %d after %v", code, took)
	if code != exitEndpoint {
		t.Fatalf("flower exited %d, want %d\n%s", code, exitEndpoint, stderr)
	}
	if took > 30*time.Second {
		t.Errorf("took %v: the harness's retries were waited out", took)
	}
	want := "the API endpoint " + closed + " refused the connection, and no request of this run has gone through: check ANTHROPIC_BASE_URL"
	if !strings.Contains(stderr, want) {
		t.Errorf("stderr does not say %q:\n%s", want, stderr)
	}
	if !strings.Contains(stderr, "asks the API again") {
		t.Errorf("no progress line for the harness's retry:\n%s", stderr)
	}
	if st == nil || st.Status != manifest.StatusUnreachable || st.Attempts != 0 {
		t.Errorf("step: %+v", st)
	}
}

// What may pass is shown, not silent: an API that answers 529 once gets a
// progress line from the harness's own retry, and the step then succeeds.
// Once a request has gone through, an endpoint that then refuses is not
// taken for one that never could be reached (no exit 8: the harness's
// retries and flower's attempts go on as for any error).
func TestRetriesAreShown(t *testing.T) {
	t.Parallel()
	t.Run("overloaded once", func(t *testing.T) {
		t.Parallel()
		var n atomic.Int32
		srv, err := scriptedapi.Start(func(r *scriptedapi.Request) scriptedapi.Reply {
			if r.Kind == scriptedapi.KindMain && n.Add(1) == 1 {
				return scriptedapi.Overloaded()
			}
			return scriptedapi.Reply{Usage: scriptedapi.Usage{InputTokens: 1000}, Text: "Hello."}
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { srv.Close() })
		code, stderr, _, st := runFlower(t, cliEnv(t, srv, "FLOWER_PS_DIR="+t.TempDir()), "say hello")
		if code != 0 || st.Status != manifest.StatusSucceeded {
			t.Fatalf("flower exited %d, step %s\n%s", code, st.Status, stderr)
		}
		if !strings.Contains(stderr, "flower: the harness asks the API again in ") || !strings.Contains(stderr, "(retry 1 of 10): HTTP 529") {
			t.Errorf("no progress line for the 529:\n%s", stderr)
		}
	})
	t.Run("refused after a request went through", func(t *testing.T) {
		t.Parallel()
		var n atomic.Int32
		var srv atomic.Pointer[scriptedapi.Server]
		s, err := scriptedapi.Start(func(r *scriptedapi.Request) scriptedapi.Reply {
			if r.Kind != scriptedapi.KindMain {
				return scriptedapi.Harmless(r)
			}
			if n.Add(1) == 1 {
				return scriptedapi.Reply{Usage: scriptedapi.Usage{InputTokens: 1000}, Text: "Looking.",
					ToolUses: []scriptedapi.ToolUse{{Name: "Glob", Input: map[string]any{"pattern": "*.md"}}}}
			}
			go srv.Load().Close() // from now on the endpoint refuses
			return scriptedapi.Reply{Delay: time.Minute}
		})
		if err != nil {
			t.Fatal(err)
		}
		srv.Store(s)
		t.Cleanup(func() { s.Close() })
		// Waited out as a limit, bounded by --max-wait: a wait longer
		// than it stops the step with exit 6, not as unreachable.
		code, stderr, _, st := runFlower(t, cliEnv(t, s, "FLOWER_PS_DIR="+t.TempDir(), "CLAUDE_CODE_MAX_RETRIES=1"), "--max-wait", "1s", "look around")
		if code != exitLimitWait || st.Status != manifest.StatusLimited {
			t.Errorf("exit %d, step %s; want %d and %s\n%s", code, st.Status, exitLimitWait, manifest.StatusLimited, stderr)
		}
		if !strings.Contains(stderr, "no answer from the API (a connection error)") || !strings.Contains(stderr, "network outage did not lift within --max-wait 1s") {
			t.Errorf("stderr lacks the retry or the outage:\n%s", stderr)
		}
	})
}

// flakyLink forwards connections on one loopback address to another, and
// can go down (the address refuses, the open connections reset) and come
// back up on the same address: a network that drops and returns.
type flakyLink struct {
	addr, target string
	mu           sync.Mutex
	ln           net.Listener
	conns        []net.Conn
}

func (f *flakyLink) up() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	ln, err := net.Listen("tcp", f.addr)
	if err != nil {
		return err
	}
	f.ln, f.addr = ln, ln.Addr().String()
	target := f.target
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			d, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			f.mu.Lock()
			f.conns = append(f.conns, c, d)
			f.mu.Unlock()
			go func() { _, _ = io.Copy(d, c); d.Close() }()
			go func() { _, _ = io.Copy(c, d); c.Close() }()
		}
	}()
	return nil
}

func (f *flakyLink) address() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.addr
}

func (f *flakyLink) down() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ln.Close()
	for _, c := range f.conns {
		c.Close()
	}
	f.conns = nil
}

// A network that drops in the middle of a run and comes back is waited out
// as a limit is, on the real harness: its retries shown, the turn's end
// on "connection_failed" a wait (--limit-backoff), then the same session
// goes on and the step succeeds in one generation, the wait recorded.
func TestNetworkOutageIsWaitedOut(t *testing.T) {
	t.Parallel()
	var n atomic.Int32
	link := &flakyLink{addr: "127.0.0.1:0"}
	srv, err := scriptedapi.Start(func(r *scriptedapi.Request) scriptedapi.Reply {
		if r.Kind != scriptedapi.KindMain {
			return scriptedapi.Harmless(r)
		}
		switch n.Add(1) {
		case 1:
			return scriptedapi.Reply{Usage: scriptedapi.Usage{InputTokens: 1000}, Text: "Looking.",
				ToolUses: []scriptedapi.ToolUse{{Name: "Glob", Input: map[string]any{"pattern": "*.md"}}}}
		case 2:
			link.down()                                           // this request's answer is lost; the next tries are refused
			time.AfterFunc(time.Second, func() { _ = link.up() }) // a failure shows as the step's
			return scriptedapi.Reply{Delay: time.Minute}
		}
		return scriptedapi.Reply{Usage: scriptedapi.Usage{InputTokens: 1200}, Text: "Done."}
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	link.target = strings.TrimPrefix(srv.URL, "http://")
	if err := link.up(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(link.down)
	env := cliEnv(t, srv, "FLOWER_PS_DIR="+t.TempDir(), "CLAUDE_CODE_MAX_RETRIES=1", "ANTHROPIC_BASE_URL=http://"+link.address())
	code, stderr, took, st := runFlower(t, env, "--limit-backoff", "2s", "look around")
	t.Logf("outage waited out: exit %d after %v", code, took)
	if code != 0 || st.Status != manifest.StatusSucceeded || len(st.Generations) != 1 {
		t.Fatalf("exit %d, step %s with %d generations (errors %q)\n%s", code, st.Status, len(st.Generations), st.Errors, stderr)
	}
	if w := st.Generations[0].LimitWaits; len(w) != 1 || w[0].Kind != "network" {
		t.Errorf("limit waits %+v, want one network wait", w)
	}
	if !strings.Contains(stderr, "no connection to the API (a network outage): waiting until") {
		t.Errorf("stderr does not say it waits the outage out:\n%s", stderr)
	}
	reqs := srv.Requests()
	last := reqs[len(reqs)-1]
	if last.SessionID != reqs[0].SessionID || !strings.Contains(last.LastUserText, "has lifted") {
		t.Errorf("the request after the wait is not the same session told to go on: %q", last.LastUserText)
	}
}

// The endpoint checked is the one the harness uses: one a settings file's
// env block sets (here the person's ~/.claude/settings.json, with nothing
// in the environment) is named and checked, not the default.
func TestRefusedEndpointFromSettings(t *testing.T) {
	t.Parallel()
	srv, err := scriptedapi.Start(func(r *scriptedapi.Request) scriptedapi.Reply { return scriptedapi.Harmless(r) })
	if err != nil {
		t.Fatal(err)
	}
	closed := srv.URL
	srv.Close()
	var env []string
	home := ""
	for _, kv := range cliEnv(t, srv, "FLOWER_PS_DIR="+t.TempDir()) {
		switch {
		case strings.HasPrefix(kv, "ANTHROPIC_BASE_URL="):
		case strings.HasPrefix(kv, "HOME="):
			home = strings.TrimPrefix(kv, "HOME=")
			env = append(env, kv)
		default:
			env = append(env, kv)
		}
	}
	if err := os.MkdirAll(filepath.Join(home, ".claude"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, ".claude", "settings.json"), []byte(`{"env":{"ANTHROPIC_BASE_URL":"`+closed+`"}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	code, stderr, _, st := runFlower(t, env, "say hello")
	if code != exitEndpoint || !strings.Contains(stderr, "the API endpoint "+closed+" refused the connection") {
		t.Fatalf("exit %d, want %d naming %s:\n%s", code, exitEndpoint, closed, stderr)
	}
	if st.Status != manifest.StatusUnreachable {
		t.Errorf("status %s", st.Status)
	}
}
