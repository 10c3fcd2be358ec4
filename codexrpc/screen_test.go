package codexrpc_test

import (
	"context"
	"errors"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/flowerhq/flower/codexrpc"
	"github.com/flowerhq/flower/integration/itest"
	"github.com/flowerhq/flower/scriptedresp"
)

// memScreen is a screen's end of the connection in memory: what the test
// sends as the screen, and what reaches it.
type memScreen struct {
	in  chan []byte
	out chan []byte
}

func (m *memScreen) Read() ([]byte, error) {
	b, ok := <-m.in
	if !ok {
		return nil, errors.New("screen closed")
	}
	return b, nil
}

func (m *memScreen) Write(b []byte) error {
	m.out <- append([]byte(nil), b...)
	return nil
}

// answer waits for the screen's answer to id, and fails on an answer to
// a request of flower's.
func (m *memScreen) answer(t *testing.T, id string) gjson.Result {
	t.Helper()
	timeout := time.After(60 * time.Second)
	for {
		select {
		case b := <-m.out:
			r := gjson.ParseBytes(b)
			if strings.HasPrefix(r.Get("id").String(), "flower-") {
				t.Fatalf("an answer to flower reached the screen: %s", b)
			}
			if r.Get("id").Raw == id && !r.Get("method").Exists() {
				return r
			}
		case <-timeout:
			t.Fatalf("no answer to %s reached the screen", id)
		}
	}
}

// until waits for the screen's notification method, of thread.
func (m *memScreen) until(t *testing.T, method, thread string) {
	t.Helper()
	timeout := time.After(60 * time.Second)
	for {
		select {
		case b := <-m.out:
			if r := gjson.ParseBytes(b); r.Get("method").String() == method && r.Get("params.threadId").String() == thread {
				return
			}
		case <-timeout:
			t.Fatalf("no %s of %s reached the screen", method, thread)
		}
	}
}

// The real app-server, its connection shared with a screen: the screen's
// requests are answered to it (its ids are its own, numbers flower uses
// too), flower's to flower, and flower's settings go into the screen's
// first thread. flower reads that thread's notifications and starts turns
// in it, which the screen sees; another thread of the screen's is the
// screen's alone.
func TestScreenSharesTheConnection(t *testing.T) {
	bin := itest.CodexPath(t)
	api, err := scriptedresp.Start(func(r *scriptedresp.Request) scriptedresp.Reply {
		r2 := scriptedresp.Reply{Text: "reply to " + r.LastUserText, Usage: scriptedresp.Usage{InputTokens: 9000, OutputTokens: 20}}
		if r.LastUserText == "slow" {
			r2.Delay = 20 * time.Second
		}
		return r2
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = api.Close() })
	home := t.TempDir()
	if err := api.WriteCodexHome(home, ""); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	c, err := codexrpc.Start(ctx, codexrpc.Config{Binary: bin, Home: home, Dir: t.TempDir(), Env: api.Env(), Log: testLog{t}, Screen: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	scr := &memScreen{in: make(chan []byte, 8), out: make(chan []byte, 1024)}
	asked := false
	if err := c.Screen(scr, func(ctx context.Context) (map[string]any, error) {
		// flower asks the app-server on the way, as the front does.
		if _, err := c.ReadPerson(ctx); err != nil {
			return nil, err
		}
		asked = true
		return map[string]any{"model": "screen-model-from-flower"}, nil
	}); err != nil {
		t.Fatal(err)
	}
	scr.in <- []byte(`{"id":0,"method":"initialize","params":{"clientInfo":{"name":"codex-tui","title":null,"version":"0"},"capabilities":{"experimentalApi":true}}}`)
	scr.answer(t, "0")
	// The version the screen's initialize was answered with is the
	// binary's.
	said, err := exec.Command(bin, "--version").Output()
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := codexrpc.VersionOf(string(said)); c.Version() != v || v == "" {
		t.Errorf("the client says version %q, the binary %q", c.Version(), said)
	}
	scr.in <- []byte(`{"method":"initialized"}`)
	scr.in <- []byte(`{"id":1,"method":"thread/start","params":{"sandbox":"workspace-write","config":{}}}`)
	opened := scr.answer(t, "1")
	th, err := c.ScreenThread(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !asked || th.ID == "" || th.ID != opened.Get("result.thread.id").String() || th.Model != "screen-model-from-flower" {
		t.Fatalf("the session's thread is %+v (asked %v); the screen opened %s", th, asked, opened.Raw)
	}

	// A turn of flower's, shown on the screen, read by flower.
	turn, err := c.StartTurn(ctx, th.ID, "from flower")
	if err != nil {
		t.Fatal(err)
	}
	scr.until(t, "turn/completed", th.ID)
	for {
		n, err := c.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if tc, ok := n.Value.(codexrpc.TurnCompleted); ok {
			if tc.TurnID != turn || tc.Status != codexrpc.StatusCompleted {
				t.Fatalf("flower's turn ended %+v, want %s completed", tc, turn)
			}
			break
		}
	}

	// A second thread of the screen's, and a turn in it: the screen's.
	scr.in <- []byte(`{"id":2,"method":"thread/start","params":{"config":{}}}`)
	other := scr.answer(t, "2").Get("result.thread.id").String()
	scr.in <- []byte(`{"id":3,"method":"turn/start","params":{"threadId":"` + other + `","input":[{"type":"text","text":"aside"}]}}`)
	scr.answer(t, "3")
	scr.until(t, "turn/completed", other)
	// The person's turn in the session's thread, started by the screen.
	scr.in <- []byte(`{"id":4,"method":"turn/start","params":{"threadId":"` + th.ID + `","input":[{"type":"text","text":"from the person"}]}}`)
	scr.answer(t, "4")
	scr.until(t, "turn/completed", th.ID)
	for {
		n, err := c.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if th := gjson.GetBytes(n.Params, "threadId"); th.Exists() && th.String() != opened.Get("result.thread.id").String() {
			t.Fatalf("flower read another thread's %s: %s", n.Method, n.Params)
		}
		if tc, ok := n.Value.(codexrpc.TurnCompleted); ok {
			if tc.TurnID == turn {
				t.Fatalf("flower's turn ended twice")
			}
			break
		}
	}

	// The person ends a turn at the screen: flower hears it from the
	// screen's request, before the turn's end.
	scr.in <- []byte(`{"id":5,"method":"turn/start","params":{"threadId":"` + th.ID + `","input":[{"type":"text","text":"slow"}]}}`)
	slow := scr.answer(t, "5").Get("result.turn.id").String()
	scr.until(t, "item/started", th.ID) // the turn's request is out
	scr.in <- []byte(`{"id":6,"method":"turn/interrupt","params":{"threadId":"` + th.ID + `","turnId":"` + slow + `"}}`)
	heard := false
	for {
		n, err := c.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if si, ok := n.Value.(codexrpc.ScreenInterrupt); ok {
			heard = si.TurnID == slow && si.ThreadID == th.ID
		}
		if tc, ok := n.Value.(codexrpc.TurnCompleted); ok && tc.TurnID == slow {
			if !heard || tc.Status != codexrpc.StatusInterrupted {
				t.Fatalf("the person's interrupt was heard %v before the turn ended %s", heard, tc.Status)
			}
			break
		}
	}
}
