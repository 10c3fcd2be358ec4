package acp

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"strings"
	"testing"
	"time"
)

// agent is a scripted agent on the other end of a pipe: it reads the
// client's lines and answers with the lines answer gives.
func agent(t *testing.T, answer func(m map[string]any) []string) *Client {
	t.Helper()
	// Pipes with the kernel's buffers, as a process's are: the client
	// answers a request of the agent's while the agent still writes.
	inR, inW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		defer outW.Close()
		sc := bufio.NewScanner(inR)
		for sc.Scan() {
			var m map[string]any
			if json.Unmarshal(sc.Bytes(), &m) != nil {
				t.Errorf("the client wrote %q", sc.Text())
				return
			}
			for _, l := range answer(m) {
				if _, err := io.WriteString(outW, l+"\n"); err != nil {
					return
				}
			}
		}
	}()
	c := New(outR, inW, nil)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func TestPromptAnswersComeInOrderAmongUpdates(t *testing.T) {
	c := agent(t, func(m map[string]any) []string {
		switch m["method"] {
		case "session/prompt":
			id := int(m["id"].(float64))
			return []string{
				`not json`,
				`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"hi"}}}}`,
				`{"jsonrpc":"2.0","id":77,"method":"session/request_permission","params":{"sessionId":"s1","toolCall":{"title":"rm -rf"}}}`,
				`{"jsonrpc":"2.0","id":78,"method":"fs/read_text_file","params":{"sessionId":"s1","path":"/etc/passwd"}}`,
				`{"jsonrpc":"2.0","id":` + itoa(id) + `,"result":{"stopReason":"end_turn","_meta":{"quota":{}}}}`,
			}
		case "session/cancel":
			return []string{`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"cancel_seen"}}}`}
		}
		if m["result"] != nil || m["error"] != nil {
			b, _ := json.Marshal(m)
			return []string{`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"client_said","said":` + string(b) + `}}}`}
		}
		return nil
	})
	if err := c.Prompt("s1", "go"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var got []string
	var said []string
	for len(got) < 4 || len(said) < 2 {
		m, err := c.Next(ctx)
		if err != nil {
			t.Fatalf("after %q: %v", got, err)
		}
		switch {
		case m.Kind == "client_said":
			said = append(said, string(m.Update))
		case m.End != nil:
			got = append(got, "end:"+m.End.StopReason)
		case m.Refused:
			got = append(got, "refused:"+m.Kind)
		default:
			got = append(got, m.Kind)
		}
		if len(got) == 3 {
			if err := c.Cancel("s1"); err != nil {
				t.Fatal(err)
			}
		}
	}
	if strings.Join(got, ",") != "agent_message_chunk,refused:session/request_permission,end:end_turn,cancel_seen" {
		t.Errorf("messages %q", got)
	}
	if !strings.Contains(said[0], `"id":77`) || !strings.Contains(said[0], `"outcome":"cancelled"`) ||
		!strings.Contains(said[1], `"id":78`) || !strings.Contains(said[1], `-32601`) {
		t.Errorf("the client answered %q", said)
	}
}

func TestCallErrorsAndTheEnd(t *testing.T) {
	c := agent(t, func(m map[string]any) []string {
		id := itoa(int(m["id"].(float64)))
		if m["method"] == "session/new" {
			return []string{`{"jsonrpc":"2.0","id":` + id + `,"error":{"code":-32603,"message":"Internal error","data":{"details":"no"}}}`}
		}
		return []string{`{"jsonrpc":"2.0","id":` + id + `,"result":{"agentInfo":{"name":"a","version":"1.2"},"agentCapabilities":{"loadSession":true}}}`}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	a, err := c.Initialize(ctx)
	if err != nil || a != (Agent{Name: "a", Version: "1.2", LoadSession: true}) || c.Agent() != a {
		t.Fatalf("initialize %+v %v", a, err)
	}
	_, err = c.NewSession(ctx, "/w")
	var re *RPCError
	if !errors.As(err, &re) || re.Code != -32603 || !strings.Contains(err.Error(), `"details":"no"`) {
		t.Errorf("session/new error %v", err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Next(ctx); !errors.Is(err, io.EOF) {
		t.Errorf("after the end: %v", err)
	}
	if err := c.Prompt("s", "x"); err == nil {
		t.Error("a prompt after the end was taken")
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

// A loaded session's history, which the agent replays before it answers
// session/load, is not given as new; what comes after is.
func TestLoadDropsTheReplay(t *testing.T) {
	c := agent(t, func(m map[string]any) []string {
		if m["method"] != "session/load" {
			return nil
		}
		id := itoa(int(m["id"].(float64)))
		return []string{
			`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"old","update":{"sessionUpdate":"user_message_chunk"}}}`,
			`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"old","update":{"sessionUpdate":"agent_message_chunk"}}}`,
			`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"other","update":{"sessionUpdate":"other_session"}}}`,
			`{"jsonrpc":"2.0","id":` + id + `,"result":{"models":{"currentModelId":"m"}}}`,
			`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"old","update":{"sessionUpdate":"after_load"}}}`,
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	sess, err := c.LoadSession(ctx, "old", "/w")
	if err != nil || sess != (Session{ID: "old", Model: "m"}) {
		t.Fatalf("load %+v %v", sess, err)
	}
	for _, want := range []string{"other_session", "after_load"} {
		m, err := c.Next(ctx)
		if err != nil || m.Kind != want {
			t.Fatalf("got %+v %v, want %s", m, err, want)
		}
	}
}
