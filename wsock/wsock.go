// Package wsock is the server's side of a WebSocket (RFC 6455), as much
// of it as a client that sends JSON-RPC messages needs: the Codex CLI's
// screen, which reaches an app-server by a WebSocket on a Unix socket
// (`codex --remote unix://PATH`; DESIGN.md «Codex screen»). Text and binary
// messages, whole or in fragments, pings answered, a close returned; no
// extensions and no subprotocols.
package wsock

import (
	"bufio"
	"crypto/sha1"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
)

// MaxMessage bounds one message, whole: a client that sends more is
// closed with status 1009 (the Codex CLI's app-server says the same
// bound, 16 MiB, in a header of its own).
const MaxMessage = 16 << 20

// Conn is one client's connection, upgraded.
type Conn struct {
	c  net.Conn
	br *bufio.Reader
	// wmu orders whole frames written: messages and the control replies
	// Read writes.
	wmu    sync.Mutex
	closed bool
}

// ErrClosed is a Read after the client closed the connection (a close
// frame, or its end of the socket).
var ErrClosed = errors.New("websocket closed")

// guid is RFC 6455's, appended to the client's key.
const guid = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

// Accept reads the client's upgrade request from c and answers it; a
// request that is no WebSocket upgrade is answered 400 and refused.
func Accept(c net.Conn) (*Conn, error) {
	br := bufio.NewReader(c)
	req, err := http.ReadRequest(br)
	if err != nil {
		return nil, fmt.Errorf("websocket upgrade: %w", err)
	}
	key := req.Header.Get("Sec-WebSocket-Key")
	if !strings.EqualFold(req.Header.Get("Upgrade"), "websocket") || key == "" || req.Header.Get("Sec-WebSocket-Version") != "13" {
		_, _ = io.WriteString(c, "HTTP/1.1 400 Bad Request\r\nConnection: close\r\nContent-Length: 0\r\n\r\n")
		return nil, errors.New("websocket upgrade: not a version 13 websocket request")
	}
	sum := sha1.Sum([]byte(key + guid))
	resp := "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: " +
		base64.StdEncoding.EncodeToString(sum[:]) + "\r\n\r\n"
	if _, err := io.WriteString(c, resp); err != nil {
		return nil, fmt.Errorf("websocket upgrade: %w", err)
	}
	return &Conn{c: c, br: br}, nil
}

// Opcodes (RFC 6455 §5.2).
const (
	opContinue = 0x0
	opText     = 0x1
	opBinary   = 0x2
	opClose    = 0x8
	opPing     = 0x9
	opPong     = 0xA
)

// Read is the client's next message, whole. Pings are answered and pongs
// passed over on the way; a close is returned, and is then ErrClosed.
func (w *Conn) Read() ([]byte, error) {
	var msg []byte
	started := false
	for {
		fin, op, payload, err := w.frame()
		if err != nil {
			return nil, err
		}
		switch op {
		case opPing:
			if err := w.write(opPong, payload); err != nil {
				return nil, err
			}
			continue
		case opPong:
			continue
		case opClose:
			_ = w.write(opClose, payload[:min(len(payload), 2)])
			return nil, ErrClosed
		case opText, opBinary:
			if started {
				return nil, w.fail(1002, "a new message inside a fragmented one")
			}
			started = true
		case opContinue:
			if !started {
				return nil, w.fail(1002, "a continuation of no message")
			}
		default:
			return nil, w.fail(1002, fmt.Sprintf("opcode %#x", op))
		}
		if len(msg)+len(payload) > MaxMessage {
			return nil, w.fail(1009, "message too big")
		}
		msg = append(msg, payload...)
		if fin {
			return msg, nil
		}
	}
}

// frame reads one frame, unmasked.
func (w *Conn) frame() (fin bool, op byte, payload []byte, err error) {
	var h [2]byte
	if _, err := io.ReadFull(w.br, h[:]); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			err = ErrClosed
		}
		return false, 0, nil, err
	}
	fin, op = h[0]&0x80 != 0, h[0]&0x0f
	if h[0]&0x70 != 0 {
		return false, 0, nil, w.fail(1002, "reserved bits set")
	}
	if h[1]&0x80 == 0 {
		return false, 0, nil, w.fail(1002, "an unmasked frame from the client")
	}
	n := uint64(h[1] & 0x7f)
	switch n {
	case 126:
		var b [2]byte
		if _, err := io.ReadFull(w.br, b[:]); err != nil {
			return false, 0, nil, err
		}
		n = uint64(binary.BigEndian.Uint16(b[:]))
	case 127:
		var b [8]byte
		if _, err := io.ReadFull(w.br, b[:]); err != nil {
			return false, 0, nil, err
		}
		n = binary.BigEndian.Uint64(b[:])
	}
	if op >= opClose && (n > 125 || !fin) {
		return false, 0, nil, w.fail(1002, "a control frame too long or fragmented")
	}
	if n > MaxMessage {
		return false, 0, nil, w.fail(1009, "message too big")
	}
	var mask [4]byte
	if _, err := io.ReadFull(w.br, mask[:]); err != nil {
		return false, 0, nil, err
	}
	payload = make([]byte, n)
	if _, err := io.ReadFull(w.br, payload); err != nil {
		return false, 0, nil, err
	}
	for i := range payload {
		payload[i] ^= mask[i%4]
	}
	return fin, op, payload, nil
}

// Write sends msg as one text message.
func (w *Conn) Write(msg []byte) error { return w.write(opText, msg) }

func (w *Conn) write(op byte, payload []byte) error {
	w.wmu.Lock()
	defer w.wmu.Unlock()
	if w.closed {
		return ErrClosed
	}
	h := make([]byte, 0, 10+len(payload))
	h = append(h, 0x80|op)
	switch n := len(payload); {
	case n < 126:
		h = append(h, byte(n))
	case n <= 0xffff:
		h = append(h, 126)
		h = binary.BigEndian.AppendUint16(h, uint16(n))
	default:
		h = append(h, 127)
		h = binary.BigEndian.AppendUint64(h, uint64(n))
	}
	_, err := w.c.Write(append(h, payload...))
	if op == opClose {
		w.closed = true
	}
	return err
}

// fail closes the connection with status and why, for a client that broke
// the protocol, and is the error Read returns.
func (w *Conn) fail(status uint16, why string) error {
	_ = w.write(opClose, binary.BigEndian.AppendUint16(nil, status))
	_ = w.c.Close()
	return fmt.Errorf("websocket: %s", why)
}

// Close sends a normal close and closes the socket.
func (w *Conn) Close() error {
	_ = w.write(opClose, binary.BigEndian.AppendUint16(nil, 1000))
	return w.c.Close()
}
