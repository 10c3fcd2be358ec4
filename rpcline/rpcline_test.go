package rpcline

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log"
	"strings"
	"testing"
)

// peer is the other end of a Conn: what the Conn writes is read from
// lines, and what the test writes to out the Conn reads.
type peer struct {
	lines chan []byte
	out   *io.PipeWriter
}

func newConn(t *testing.T, opt Options, handle func([]byte, Wire)) (*Conn, *peer) {
	t.Helper()
	inR, inW := io.Pipe()   // Conn → peer
	outR, outW := io.Pipe() // peer → Conn
	c := New(inW, opt)
	go c.Serve(outR, handle, nil)
	t.Cleanup(func() { outW.Close(); inR.Close(); <-c.Done() })
	p := &peer{lines: make(chan []byte, 16), out: outW}
	go func() {
		sc := bufio.NewScanner(inR)
		for sc.Scan() {
			p.lines <- append([]byte(nil), sc.Bytes()...)
		}
		close(p.lines)
	}()
	return c, p
}

func (p *peer) next(t *testing.T) map[string]any {
	t.Helper()
	line, ok := <-p.lines
	if !ok {
		t.Fatal("no line from the conn")
	}
	var m map[string]any
	if err := json.Unmarshal(line, &m); err != nil {
		t.Fatalf("line %q: %v", line, err)
	}
	return m
}

func (p *peer) say(t *testing.T, line string) {
	t.Helper()
	if _, err := io.WriteString(p.out, line+"\n"); err != nil {
		t.Fatal(err)
	}
}

func TestCallGetsItsAnswerAndTheRestGoesToTheHandler(t *testing.T) {
	var logged bytes.Buffer
	handled := make(chan Wire, 4)
	var answered []int
	c, p := newConn(t, Options{Peer: "agent", Version: true, Log: log.New(&logged, "", 0),
		Answered: func(id int) { answered = append(answered, id) }}, func(_ []byte, m Wire) { handled <- m })
	got := make(chan error, 1)
	var res struct{ Name string }
	go func() { got <- c.Call(context.Background(), "initialize", map[string]int{"v": 1}, &res) }()
	req := p.next(t)
	if req["jsonrpc"] != "2.0" || req["method"] != "initialize" || req["id"] != float64(0) {
		t.Fatalf("request %v", req)
	}
	// What comes before the answer goes to the handler, a line that is not
	// JSON is skipped, and the answer ends the call.
	p.say(t, `{"method":"note","params":{"a":1}}`)
	p.say(t, `not json`)
	p.say(t, `{"id":7,"result":{}}`)
	p.say(t, `{"id":0,"result":{"Name":"gem"}}`)
	if err := <-got; err != nil || res.Name != "gem" {
		t.Fatalf("call: %v, %+v", err, res)
	}
	if m := <-handled; m.Method != "note" {
		t.Fatalf("first handled %+v", m)
	}
	if m := <-handled; m.ID == nil || string(*m.ID) != "7" {
		t.Fatalf("an answer no call waits for should reach the handler: %+v", m)
	}
	if len(answered) != 1 || answered[0] != 0 {
		t.Fatalf("Answered told %v, want [0]", answered)
	}
	if !strings.Contains(logged.String(), "not JSON") {
		t.Fatalf("log %q", logged.String())
	}
}

func TestPrefixedIDsAndErrors(t *testing.T) {
	c, p := newConn(t, Options{Peer: "codex app-server", IDPrefix: "flower-"}, func([]byte, Wire) {})
	got := make(chan error, 1)
	go func() { got <- c.Call(context.Background(), "turn/start", nil, nil) }()
	req := p.next(t)
	if _, ok := req["jsonrpc"]; ok || req["id"] != "flower-0" {
		t.Fatalf("request %v", req)
	}
	p.say(t, `{"id":"flower-0","error":{"code":-32600,"message":"bad"}}`)
	err := <-got
	var re *Error
	if !errors.As(err, &re) || re.Code != -32600 || err.Error() != "codex app-server turn/start: error -32600: bad" {
		t.Fatalf("error %v", err)
	}
	if n, ok := c.Ours(json.RawMessage(`"flower-12"`)); !ok || n != 12 {
		t.Fatalf("Ours: %d %v", n, ok)
	}
	if _, ok := c.Ours(json.RawMessage(`3`)); ok {
		t.Fatal("a number is not one of the prefixed ids")
	}
	if err := c.Reply(json.RawMessage(`5`), nil, &Error{Code: -32601, Message: "no"}); err != nil {
		t.Fatal(err)
	}
	if m := p.next(t); m["id"] != float64(5) || m["error"].(map[string]any)["code"] != float64(-32601) {
		t.Fatalf("reply %v", m)
	}
}

func TestCallsFailWhenTheOutputEnds(t *testing.T) {
	c, p := newConn(t, Options{Peer: "agent"}, func([]byte, Wire) {})
	got := make(chan error, 1)
	go func() { got <- c.Call(context.Background(), "session/new", nil, nil) }()
	p.next(t)
	p.out.Close()
	if err := <-got; !errors.Is(err, io.EOF) {
		t.Fatalf("call after the end: %v", err)
	}
	<-c.Done()
	if err := c.Call(context.Background(), "again", nil, nil); !errors.Is(err, io.EOF) {
		t.Fatalf("call once ended: %v", err)
	}
	if err := c.Request(c.NewID(), "x", nil); !errors.Is(err, io.EOF) {
		t.Fatalf("a request once ended: %v", err)
	}
}
