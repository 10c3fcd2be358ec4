package codexrpc_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/flowerhq/flower/codexrpc"
	"github.com/flowerhq/flower/front"
	"github.com/flowerhq/flower/integration/itest"
	"github.com/flowerhq/flower/scriptedresp"
)

// session is the real Codex app-server against a scripted model.
type session struct {
	t      *testing.T
	api    *scriptedresp.Server
	client *codexrpc.Client
	thread string
	notes  []codexrpc.Notification
}

// start runs Codex against script, with the person's config extra in its
// CODEX_HOME and flower's overrides on the command line.
func start(t *testing.T, script scriptedresp.Script, extra string, overrides ...string) *session {
	t.Helper()
	bin := itest.CodexPath(t)
	api, err := scriptedresp.Start(script)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = api.Close() })
	home := t.TempDir()
	if err := api.WriteCodexHome(home, extra); err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, err := codexrpc.Start(ctx, codexrpc.Config{Binary: bin, Home: home, Dir: work,
		Overrides: overrides, Env: api.Env(), Log: testLog{t}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	if _, ok := front.ParseVersion(c.Version()); !ok {
		t.Errorf("the app-server's initialize said no version (%q)", c.Version())
	}
	trust, err := c.SessionHookTrust(ctx)
	if err != nil {
		t.Fatal(err)
	}
	thread, err := c.StartThread(ctx, codexrpc.ThreadOptions{Cwd: work, ApprovalPolicy: "never", Sandbox: "workspace-write", Config: trust})
	if err != nil {
		t.Fatal(err)
	}
	return &session{t: t, api: api, client: c, thread: thread}
}

// turn starts a turn and returns its id.
func (s *session) turn(text string) string {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	id, err := s.client.StartTurn(ctx, s.thread, text)
	if err != nil {
		s.t.Fatal(err)
	}
	return id
}

// until collects notifications until one satisfies stop, which it
// returns.
func (s *session) until(stop func(codexrpc.Notification) bool) codexrpc.Notification {
	s.t.Helper()
	timeout := time.After(90 * time.Second)
	for {
		select {
		case n, ok := <-s.client.Notifications():
			if !ok {
				s.t.Fatalf("app-server ended: %v", s.client.Err())
			}
			s.notes = append(s.notes, n)
			if stop(n) {
				return n
			}
		case <-timeout:
			s.t.Fatalf("no such notification in 90 s; saw %d", len(s.notes))
		}
	}
}

// completed waits for the end of turn id.
func (s *session) completed(id string) codexrpc.TurnCompleted {
	s.t.Helper()
	n := s.until(func(n codexrpc.Notification) bool {
		tc, ok := n.Value.(codexrpc.TurnCompleted)
		return ok && tc.TurnID == id
	})
	return n.Value.(codexrpc.TurnCompleted)
}

// values returns the decoded notifications of type T seen so far.
func values[T any](s *session) []T {
	var out []T
	for _, n := range s.notes {
		if v, ok := n.Value.(T); ok {
			out = append(out, v)
		}
	}
	return out
}

type testLog struct{ t *testing.T }

func (l testLog) Write(p []byte) (int, error) {
	if os.Getenv("CODEXRPC_LOG") != "" {
		l.t.Logf("%s", p)
	}
	return len(p), nil
}

func TestToolCallTurnReportsUsage(t *testing.T) {
	s := start(t, scriptedresp.Sequence(
		scriptedresp.Reply{Calls: []scriptedresp.Call{{Cmd: "echo tool-ran"}}, Usage: scriptedresp.Usage{InputTokens: 1200, CachedInputTokens: 1000, OutputTokens: 30}},
		scriptedresp.Reply{Text: "done", Usage: scriptedresp.Usage{InputTokens: 1500, CachedInputTokens: 1200, OutputTokens: 20}},
	), "")
	tc := s.completed(s.turn("run echo"))
	if tc.Status != codexrpc.StatusCompleted {
		t.Fatalf("turn ended %q (%+v), want completed", tc.Status, tc.Error)
	}
	reqs := s.api.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d model requests, want 2", len(reqs))
	}
	if out := reqs[1].Outputs; len(out) != 1 || !strings.Contains(out[0].Output, "tool-ran") {
		t.Fatalf("second request's tool outputs %+v, want the command's output", out)
	}
	usages := values[codexrpc.TokenUsage](s)
	if len(usages) == 0 {
		t.Fatal("no thread/tokenUsage/updated")
	}
	u := usages[len(usages)-1]
	t.Logf("usage updates: %d; last %+v total %+v window %d", len(usages), u.Last, u.Total, u.ModelContextWindow)
	if u.Last.InputTokens != 1500 || u.Last.CachedInputTokens != 1200 || u.Last.OutputTokens != 20 {
		t.Errorf("last %+v, want the second reply's usage", u.Last)
	}
	if u.Total.InputTokens != 2700 || u.Total == u.Last {
		t.Errorf("total %+v, want the sum of both rounds (input 2700)", u.Total)
	}
	if n := s.api.ModelListings(); n != 0 {
		t.Logf("GET /v1/models: %d", n)
	}
	if u.ThreadID != s.thread {
		t.Errorf("usage for thread %q, want %q", u.ThreadID, s.thread)
	}
}

func writeExec(path, body string) error { return os.WriteFile(path, []byte(body), 0o755) }
