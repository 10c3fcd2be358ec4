// Package rpcline speaks JSON-RPC as one message a line, over a process's
// stdin and stdout: the way `codex app-server` and an Agent Client Protocol
// agent (`gemini --acp`) are both spoken to. A Conn numbers the requests it
// sends, waits for their answers, writes lines whole under one lock, and
// hands every other line (notifications, the peer's own requests, answers
// that no Call waits for) to its owner's handler, on the one goroutine
// that reads. What the lines mean is the owner's (packages codexrpc, acp).
package rpcline

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/flowerhq/flower/child"
)

// Error is a JSON-RPC error answer.
type Error struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

func (e *Error) Error() string {
	if len(e.Data) > 0 && string(e.Data) != "null" {
		return fmt.Sprintf("error %d: %s (%s)", e.Code, e.Message, e.Data)
	}
	return fmt.Sprintf("error %d: %s", e.Code, e.Message)
}

// Wire is any line the peer writes: an answer (id, result|error), a
// notification (method, params) or a request of its own (id, method).
type Wire struct {
	ID     *json.RawMessage `json:"id"`
	Method string           `json:"method"`
	Params json.RawMessage  `json:"params"`
	Result json.RawMessage  `json:"result"`
	Error  *Error           `json:"error"`
}

// Options say how a Conn writes.
type Options struct {
	// Peer names the other side in errors ("codex app-server", "agent").
	Peer string
	// IDPrefix: the requests' ids are strings, IDPrefix and a number, so
	// that another client sharing the connection (Codex's own screen)
	// can number its own from 0; "" sends them as numbers.
	IDPrefix string
	// Version: every message carries "jsonrpc": "2.0".
	Version bool
	// Answered, when set, is told each Call's id on the reading goroutine
	// as its answer comes, before the Call is: what the owner keeps by the
	// id changes in order with the lines after it.
	Answered func(id int)
	// Log receives what is skipped (lines that are not JSON); nil
	// discards it. Its prefix is the owner's.
	Log *log.Logger
}

// Conn is one JSON-RPC connection.
type Conn struct {
	opt  Options
	w    io.WriteCloser
	proc *child.Process // nil for a connection of the caller's (New)
	// Log is Options.Log, never nil.
	Log *log.Logger

	wmu    sync.Mutex
	mu     sync.Mutex
	nextID int
	calls  map[int]chan Wire
	err    error // why the read loop ended
	done   chan struct{}
}

// New is a connection that writes to w. Serve reads the peer's lines.
func New(w io.WriteCloser, opt Options) *Conn {
	if opt.Log == nil {
		opt.Log = log.New(io.Discard, "", 0)
	}
	return &Conn{opt: opt, w: w, Log: opt.Log, calls: map[int]chan Wire{}, done: make(chan struct{})}
}

// Start starts cfg's process (its Stdin, Stdout and Stderr are set here)
// and returns the connection to its stdin and its stdout, for Serve. The
// process's stderr is copied to stderr (discarded when nil). The process
// is a child of package child's: nothing it starts outlives it, or
// flower however flower ends.
func Start(cfg child.Config, stderr io.Writer, opt Options) (*Conn, io.Reader, error) {
	if stderr == nil {
		stderr = io.Discard
	}
	var ends [6]*os.File // inR, inW, outR, outW, errR, errW
	for i := 0; i < 6; i += 2 {
		r, w, err := os.Pipe()
		if err != nil {
			closeAll(ends[:i]...)
			return nil, nil, fmt.Errorf("%s pipes: %w", opt.Peer, err)
		}
		ends[i], ends[i+1] = r, w
	}
	cfg.Stdin, cfg.Stdout, cfg.Stderr = ends[0], ends[3], ends[5]
	if cfg.CancelSignal == 0 {
		cfg.CancelSignal = syscall.SIGTERM
	}
	proc, err := child.Start(context.Background(), cfg)
	// The child keeps its own copies of its ends; ours of the other ends
	// stay open until closed, so that every line written is read.
	closeAll(ends[0], ends[3], ends[5])
	if err != nil {
		closeAll(ends[1], ends[2], ends[4])
		return nil, nil, fmt.Errorf("start %s: %w", opt.Peer, err)
	}
	go func() { _, _ = io.Copy(stderr, ends[4]); _ = ends[4].Close() }()
	c := New(ends[1], opt)
	c.proc = proc
	return c, ends[2], nil
}

func closeAll(fs ...*os.File) {
	for _, f := range fs {
		f.Close()
	}
}

// Serve dispatches the peer's lines until r ends: an answer to a Call goes
// to it, every other JSON message to handle, on this goroutine. A line may
// be of any length; one that is not JSON is logged and skipped. At the end
// the Calls still waiting fail, end runs (nil: nothing), and Done closes.
func (c *Conn) Serve(r io.Reader, handle func(line []byte, m Wire), end func()) {
	br := bufio.NewReader(r)
	var err error
	for err == nil {
		var line []byte
		line, err = br.ReadBytes('\n')
		if len(line) > 0 {
			c.dispatch(line, handle)
		}
	}
	if errors.Is(err, io.EOF) {
		err = io.EOF
	}
	c.mu.Lock()
	c.err = err
	for id, ch := range c.calls {
		close(ch)
		delete(c.calls, id)
	}
	c.mu.Unlock()
	if end != nil {
		end()
	}
	close(c.done)
}

func (c *Conn) dispatch(line []byte, handle func([]byte, Wire)) {
	var m Wire
	if err := json.Unmarshal(line, &m); err != nil {
		c.Log.Printf("skipped a line that is not JSON (%d bytes): %v", len(line), err)
		return
	}
	if m.ID != nil && m.Method == "" {
		if id, ok := c.Ours(*m.ID); ok {
			c.mu.Lock()
			ch := c.calls[id]
			delete(c.calls, id)
			c.mu.Unlock()
			if ch != nil {
				if c.opt.Answered != nil {
					c.opt.Answered(id)
				}
				ch <- m
				return
			}
		}
	}
	handle(line, m)
}

// Ours is the number of a request of this Conn's from its answer's id.
func (c *Conn) Ours(raw json.RawMessage) (int, bool) {
	if c.opt.IDPrefix == "" {
		n, err := strconv.Atoi(string(raw))
		return n, err == nil
	}
	var s string
	if json.Unmarshal(raw, &s) != nil || !strings.HasPrefix(s, c.opt.IDPrefix) {
		return 0, false
	}
	n, err := strconv.Atoi(strings.TrimPrefix(s, c.opt.IDPrefix))
	return n, err == nil
}

// NewID reserves the number of a request to come (CallID, Request).
func (c *Conn) NewID() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	id := c.nextID
	c.nextID++
	return id
}

func (c *Conn) id(n int) any {
	if c.opt.IDPrefix == "" {
		return n
	}
	return c.opt.IDPrefix + strconv.Itoa(n)
}

// Call sends a request and waits for its answer, decoded into result when
// result is not nil.
func (c *Conn) Call(ctx context.Context, method string, params, result any) error {
	return c.CallID(ctx, c.NewID(), method, params, result)
}

// CallID is Call with the id NewID reserved.
func (c *Conn) CallID(ctx context.Context, id int, method string, params, result any) error {
	ch := make(chan Wire, 1)
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return fmt.Errorf("%s %s: %w", c.opt.Peer, method, c.err)
	}
	c.calls[id] = ch
	c.mu.Unlock()
	if err := c.Request(id, method, params); err != nil {
		c.mu.Lock()
		delete(c.calls, id)
		c.mu.Unlock()
		return err
	}
	select {
	case m, ok := <-ch:
		if !ok {
			return fmt.Errorf("%s %s: %w", c.opt.Peer, method, c.Err())
		}
		if m.Error != nil {
			return fmt.Errorf("%s %s: %w", c.opt.Peer, method, m.Error)
		}
		if result != nil {
			if err := json.Unmarshal(m.Result, result); err != nil {
				return fmt.Errorf("%s %s answer: %w", c.opt.Peer, method, err)
			}
		}
		return nil
	case <-ctx.Done():
		c.mu.Lock()
		delete(c.calls, id)
		c.mu.Unlock()
		return fmt.Errorf("%s %s: %w", c.opt.Peer, method, ctx.Err())
	}
}

// Request sends a request whose answer no Call waits for: it goes to the
// handler, in its place among the peer's lines.
func (c *Conn) Request(id int, method string, params any) error {
	if err := c.Err(); err != nil {
		return fmt.Errorf("%s %s: %w", c.opt.Peer, method, err)
	}
	return c.Send(map[string]any{"id": c.id(id), "method": method, "params": params})
}

// Notify sends a notification; nil params are left out.
func (c *Conn) Notify(method string, params any) error {
	msg := map[string]any{"method": method}
	if params != nil {
		msg["params"] = params
	}
	return c.Send(msg)
}

// Reply answers a request of the peer's: with result, or with e when not
// nil.
func (c *Conn) Reply(id json.RawMessage, result any, e *Error) error {
	msg := map[string]any{"id": id}
	if e != nil {
		msg["error"] = e
	} else {
		msg["result"] = result
	}
	return c.Send(msg)
}

// Send writes msg, an object, as one line (with "jsonrpc" when the
// Options say so).
func (c *Conn) Send(msg map[string]any) error {
	if c.opt.Version {
		msg["jsonrpc"] = "2.0"
	}
	b, err := json.Marshal(msg)
	if err != nil {
		return fmt.Errorf("encode %s message: %w", c.opt.Peer, err)
	}
	return c.SendRaw(b)
}

// SendRaw writes one message as it is, as one line.
func (c *Conn) SendRaw(msg []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	msg = bytes.TrimRight(msg, "\r\n")
	if _, err := c.w.Write(append(msg[:len(msg):len(msg)], '\n')); err != nil {
		return fmt.Errorf("write %s: %w", c.opt.Peer, err)
	}
	return nil
}

// Done is closed when the peer's output ends; Err then says why.
func (c *Conn) Done() <-chan struct{} { return c.done }

// Err is why the read loop ended (nil while it runs, io.EOF at a clean
// end).
func (c *Conn) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// Close ends the connection: stdin is closed, which ends a healthy peer;
// a process of Start's then gets SIGTERM and SIGKILL on its group, a
// grace apart. It returns once the output has ended (and the process and
// everything it started are gone).
func (c *Conn) Close() error {
	if c.proc == nil {
		err := c.w.Close()
		<-c.done
		return err
	}
	c.proc.Stop(c.w.Close, syscall.SIGTERM, syscall.SIGKILL)
	<-c.done
	return nil
}

// Exited is closed once the process has exited (with the output, for a
// connection of New's); ExitErr is then its exit status (nil for 0).
func (c *Conn) Exited() <-chan struct{} {
	if c.proc == nil {
		return c.done
	}
	return c.proc.Exited()
}

// ExitErr is the process's exit status, valid once Exited is closed.
func (c *Conn) ExitErr() error {
	if c.proc == nil {
		return nil
	}
	return c.proc.Err()
}
