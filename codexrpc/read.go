package codexrpc

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"strings"
)

// wire is any line the app-server writes: an answer (id, result|error), a
// notification (method, params) or a request of its own (id, method).
type wire struct {
	ID     *json.RawMessage `json:"id"`
	Method string           `json:"method"`
	Params json.RawMessage  `json:"params"`
	Result json.RawMessage  `json:"result"`
	Error  *RPCError        `json:"error"`
}

// read dispatches stdout's lines until it ends. A line may be of any
// length; one that is not a JSON-RPC message is logged and skipped.
func (c *Client) read(stdout io.Reader) {
	r := bufio.NewReader(stdout)
	var err error
	for err == nil {
		var line []byte
		line, err = r.ReadBytes('\n')
		if len(line) > 0 {
			c.dispatch(line)
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
	c.queue.Close()
	close(c.done)
}

func (c *Client) dispatch(line []byte) {
	var m wire
	if err := json.Unmarshal(line, &m); err != nil {
		c.log.Printf("skipped a line that is not JSON (%d bytes): %v", len(line), err)
		return
	}
	if c.screen != nil && c.screen.pass(c, line, m) {
		return
	}
	switch {
	case m.ID != nil && m.Method != "":
		c.refuse(*m.ID, m.Method)
	case m.ID != nil:
		c.answer(*m.ID, m)
	case strings.HasSuffix(m.Method, "Delta"):
		// A stream's piece (a command's output, a message's text): the
		// whole item follows in item/completed.
	case m.Method != "":
		c.queue.Push(decode(m.Method, m.Params))
	default:
		c.log.Printf("skipped a line that is no JSON-RPC message (%d bytes)", len(line))
	}
}

// idPrefix begins the id of each request of flower's: a screen sharing
// the connection numbers its own otherwise (screen.go).
const idPrefix = "flower-"

// ours is the number of a request of flower's from its answer's id.
func ours(raw json.RawMessage) (int, bool) {
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return 0, false
	}
	n, err := strconv.Atoi(strings.TrimPrefix(s, idPrefix))
	return n, err == nil && strings.HasPrefix(s, idPrefix)
}

func (c *Client) answer(raw json.RawMessage, m wire) {
	id, ok := ours(raw)
	if !ok {
		c.log.Printf("skipped an answer with id %s", raw)
		return
	}
	c.mu.Lock()
	ch := c.calls[id]
	delete(c.calls, id)
	c.mu.Unlock()
	if ch != nil {
		ch <- response{Result: m.Result, Error: m.Error}
	}
}

// refuse answers a request of the server's (an approval, a question to
// the user) with an error: the client runs Codex with approvals off and
// has no one to ask.
func (c *Client) refuse(id json.RawMessage, method string) {
	c.log.Printf("refused the app-server's request %s", method)
	_ = c.send(map[string]any{"id": id, "error": RPCError{Code: -32601, Message: "flower does not answer " + method}})
}
