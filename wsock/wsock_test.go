package wsock

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
)

// client is a test's client end: it upgrades, then writes masked frames
// and reads the server's.
type client struct {
	c  net.Conn
	br *bufio.Reader
	// w is written in order by one goroutine: a pipe's write waits for
	// its read.
	w chan []byte
}

func dial(t *testing.T) (*Conn, *client) {
	t.Helper()
	s, c := net.Pipe()
	t.Cleanup(func() { s.Close(); c.Close() })
	accepted := make(chan *Conn, 1)
	go func() {
		w, err := Accept(s)
		if err != nil {
			t.Errorf("Accept: %v", err)
		}
		accepted <- w
	}()
	if _, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: localhost\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"+
		"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	// RFC 6455 §1.3's worked example.
	if resp.StatusCode != 101 || resp.Header.Get("Sec-WebSocket-Accept") != "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=" {
		t.Fatalf("upgrade answered %d, accept %q", resp.StatusCode, resp.Header.Get("Sec-WebSocket-Accept"))
	}
	cl := &client{c: c, br: br, w: make(chan []byte, 16)}
	go func() {
		for b := range cl.w {
			_, _ = c.Write(b)
		}
	}()
	return <-accepted, cl
}

// send writes one masked frame.
func (c *client) send(t *testing.T, fin bool, op byte, payload []byte) {
	t.Helper()
	b := []byte{op}
	if fin {
		b[0] |= 0x80
	}
	switch n := len(payload); {
	case n < 126:
		b = append(b, 0x80|byte(n))
	case n <= 0xffff:
		b = append(b, 0x80|126)
		b = binary.BigEndian.AppendUint16(b, uint16(n))
	default:
		b = append(b, 0x80|127)
		b = binary.BigEndian.AppendUint64(b, uint64(n))
	}
	mask := []byte{1, 2, 3, 4}
	b = append(b, mask...)
	for i, x := range payload {
		b = append(b, x^mask[i%4])
	}
	c.w <- b
}

// recv reads one unmasked frame of the server's.
func (c *client) recv(t *testing.T) (byte, []byte) {
	t.Helper()
	var h [2]byte
	if _, err := io.ReadFull(c.br, h[:]); err != nil {
		t.Fatal(err)
	}
	if h[1]&0x80 != 0 {
		t.Fatalf("the server masked a frame")
	}
	n := uint64(h[1] & 0x7f)
	switch n {
	case 126:
		var b [2]byte
		_, _ = io.ReadFull(c.br, b[:])
		n = uint64(binary.BigEndian.Uint16(b[:]))
	case 127:
		var b [8]byte
		_, _ = io.ReadFull(c.br, b[:])
		n = binary.BigEndian.Uint64(b[:])
	}
	p := make([]byte, n)
	if _, err := io.ReadFull(c.br, p); err != nil {
		t.Fatal(err)
	}
	return h[0] & 0x0f, p
}

// Messages of every length class, whole or in fragments with a ping
// between them, come through as sent; the ping is answered; the server's
// messages reach the client.
func TestMessages(t *testing.T) {
	w, c := dial(t)
	for _, n := range []int{0, 5, 125, 126, 70000} {
		msg := bytes.Repeat([]byte("x"), n)
		c.send(t, true, opText, msg)
		got, err := w.Read()
		if err != nil || !bytes.Equal(got, msg) {
			t.Fatalf("a %d-byte message read as %d bytes, %v", n, len(got), err)
		}
	}
	c.send(t, false, opText, []byte(`{"id":`))
	c.send(t, true, opPing, []byte("hi"))
	c.send(t, true, opContinue, []byte(`1}`))
	done := make(chan []byte, 1)
	go func() {
		got, err := w.Read()
		if err != nil {
			t.Errorf("Read: %v", err)
		}
		done <- got
	}()
	if op, p := c.recv(t); op != opPong || string(p) != "hi" {
		t.Fatalf("a ping was answered %#x %q", op, p)
	}
	if got := <-done; string(got) != `{"id":1}` {
		t.Fatalf("a fragmented message read as %q", got)
	}
	go func() { _ = w.Write([]byte(strings.Repeat("y", 300))) }()
	if op, p := c.recv(t); op != opText || len(p) != 300 {
		t.Fatalf("the server's message came as %#x, %d bytes", op, len(p))
	}
}

// A close is returned, and Read then says ErrClosed; so does the client's
// end of the socket going away.
func TestClose(t *testing.T) {
	w, c := dial(t)
	c.send(t, true, opClose, []byte{0x03, 0xe8})
	errc := make(chan error, 1)
	go func() { _, err := w.Read(); errc <- err }()
	if op, p := c.recv(t); op != opClose || !bytes.Equal(p, []byte{0x03, 0xe8}) {
		t.Fatalf("a close was answered %#x %v", op, p)
	}
	if err := <-errc; !errors.Is(err, ErrClosed) {
		t.Fatalf("Read after a close: %v", err)
	}
	w2, c2 := dial(t)
	c2.c.Close()
	if _, err := w2.Read(); !errors.Is(err, ErrClosed) {
		t.Fatalf("Read after the client went: %v", err)
	}
}

// What breaks the protocol is refused with a close, not read: an unmasked
// frame, a continuation of nothing, a message past MaxMessage.
func TestRefuses(t *testing.T) {
	for name, send := range map[string]func(c *client){
		"unmasked":     func(c *client) { go func() { _, _ = c.c.Write([]byte{0x81, 0x01, 'x'}) }() },
		"continuation": func(c *client) { c.send(t, true, opContinue, []byte("x")) },
		"too big": func(c *client) {
			go func() {
				_, _ = c.c.Write(append([]byte{0x81, 0x80 | 127}, binary.BigEndian.AppendUint64(nil, MaxMessage+1)...))
			}()
		},
	} {
		t.Run(name, func(t *testing.T) {
			w, c := dial(t)
			send(c)
			errc := make(chan error, 1)
			go func() { _, err := w.Read(); errc <- err }()
			if op, _ := c.recv(t); op != opClose {
				t.Fatalf("answered %#x, want a close", op)
			}
			if err := <-errc; err == nil || errors.Is(err, ErrClosed) {
				t.Fatalf("Read: %v, want the protocol's error", err)
			}
		})
	}
}

// A request that is no WebSocket upgrade is answered 400.
func TestNotAnUpgrade(t *testing.T) {
	s, c := net.Pipe()
	defer s.Close()
	defer c.Close()
	errc := make(chan error, 1)
	go func() { _, err := Accept(s); errc <- err }()
	go func() { _, _ = io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n") }()
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil || resp.StatusCode != 400 {
		t.Fatalf("answered %v, %v", resp, err)
	}
	if err := <-errc; err == nil {
		t.Fatalf("Accept took a plain request")
	}
}
