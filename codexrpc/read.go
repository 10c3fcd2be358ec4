package codexrpc

import (
	"encoding/json"
	"strings"

	"github.com/flowerhq/flower/rpcline"
)

func (c *Client) dispatch(line []byte, m rpcline.Wire) {
	if c.screen != nil && c.screen.pass(c, line, m) {
		return
	}
	switch {
	case m.ID != nil && m.Method != "":
		c.refuse(*m.ID, m.Method)
	case m.ID != nil:
		c.log.Printf("skipped an answer with id %s", *m.ID)
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

// refuse answers a request of the server's (an approval, a question to
// the user) with an error: the client runs Codex with approvals off and
// has no one to ask.
func (c *Client) refuse(id json.RawMessage, method string) {
	c.log.Printf("refused the app-server's request %s", method)
	_ = c.conn.Reply(id, nil, &RPCError{Code: -32601, Message: "flower does not answer " + method})
}
