// Package acp owns speaking the Agent Client Protocol as its client: JSON-RPC
// 2.0 lines on an agent process's stdin and stdout (the Gemini CLI's
// `gemini --acp`; the protocol is the agent's, not one vendor's). It starts
// the process, runs the handshake, offers the requests a front sends
// (session/new, session/load, session/prompt, session/cancel) and gives
// what the agent says in the order it said it: each session/update, and
// each prompt's answer where it came among them. It answers the agent's
// own requests itself: a permission is refused (no one is there to grant
// it), anything else is not offered. What the names and fields are on the
// pinned Gemini CLI is in docs/DESIGN.md «Gemini facts».
package acp

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log"
	"log/slog"
	"sync"
	"time"

	"github.com/flowerhq/flower/child"
	"github.com/flowerhq/flower/fifo"
	"github.com/flowerhq/flower/rpcline"
)

// Config says how to start the agent.
type Config struct {
	// Binary and Args start the agent in its ACP mode (Args carry the
	// mode's flag, --acp for the Gemini CLI).
	Binary string
	Args   []string
	Dir    string
	// Env is the process's whole environment (the parent's when nil).
	Env []string
	// Log receives what the client skips (non-JSON lines, the agent's
	// requests it refused) and the process's stderr; nil discards it.
	Log io.Writer
	// Grace bounds each stage of Close (child.DefaultGrace when zero);
	// Logger receives package child's log of the process.
	Grace  time.Duration
	Logger *slog.Logger
}

// Agent is what the agent said of itself in its initialize answer.
type Agent struct {
	Name, Version string
	// LoadSession: the agent can load a session it ran before.
	LoadSession bool
}

// Session is an opened session: its id and its current model.
type Session struct {
	ID    string
	Model string
}

// Message is one thing the agent said, in order: a session/update, or
// the answer to a session/prompt (End).
type Message struct {
	Session string
	// Kind is the update's sessionUpdate ("agent_message_chunk",
	// "tool_call", "tool_call_update", …); "" for a prompt's answer.
	Kind   string
	Update json.RawMessage
	// End is a prompt's answer; Refused, a request of the agent's the
	// client refused (its method, in Kind).
	End     *End
	Refused bool
}

// End is how a prompt turn ended: its stop reason ("end_turn",
// "cancelled", "max_tokens", "max_turn_requests", "refusal") and the
// answer's _meta, or the error the agent answered with.
type End struct {
	StopReason string
	Meta       json.RawMessage
	Err        *RPCError
}

// RPCError is a JSON-RPC error answer. The Gemini CLI puts an API error's
// HTTP status in Code (429, 400, …) and its text in Message.
type RPCError = rpcline.Error

// Client is one agent connection.
type Client struct {
	conn *rpcline.Conn
	log  *log.Logger

	mu sync.Mutex
	// prompts are the ids of session/prompt requests: their answers go
	// into the queue, in order, not to a caller.
	prompts map[int]string
	// loading are the sessions a session/load is opening, by the load's
	// id: the agent replays such a session's history as updates before
	// it answers, and those are not new (LoadSession).
	loading map[int]string
	queue   fifo.Queue[Message]
	agent   Agent
}

// Start starts the agent and runs initialize. The process is a child of
// package child's: nothing it starts outlives it, or flower.
func Start(ctx context.Context, cfg Config) (*Client, error) {
	c := newClient(logger(cfg.Log))
	conn, out, err := rpcline.Start(child.Config{Path: cfg.Binary, Args: cfg.Args, Dir: cfg.Dir,
		Env: cfg.Env, Grace: cfg.Grace, Logger: cfg.Logger}, cfg.Log, c.options())
	if err != nil {
		return nil, err
	}
	c.serve(conn, out)
	if _, err := c.Initialize(ctx); err != nil {
		_ = c.Close()
		return nil, err
	}
	return c, nil
}

// New is a client of the agent whose output r is and whose input w is,
// reading r at once: Start's, or a scripted agent's in a test.
func New(r io.Reader, w io.WriteCloser, logw io.Writer) *Client {
	c := newClient(logger(logw))
	return c.serve(rpcline.New(w, c.options()), r)
}

func logger(w io.Writer) *log.Logger {
	if w == nil {
		w = io.Discard
	}
	return log.New(w, "acp: ", 0)
}

// options are the Conn's for c: the answer to a session/load ends its
// replay on the reading goroutine, before the updates after it are read.
func (c *Client) options() rpcline.Options {
	return rpcline.Options{Peer: "agent", Version: true, Log: c.log, Answered: c.loaded}
}

func newClient(lg *log.Logger) *Client {
	return &Client{log: lg, prompts: map[int]string{}, loading: map[int]string{}}
}

func (c *Client) serve(conn *rpcline.Conn, r io.Reader) *Client {
	c.conn = conn
	go conn.Serve(r, c.dispatch, c.queue.Close)
	return c
}

// loaded ends the replay of the session/load whose id this is.
func (c *Client) loaded(id int) {
	c.mu.Lock()
	delete(c.loading, id)
	c.mu.Unlock()
}

// Initialize runs the handshake: protocol version 1, and no file system
// or terminal offered to the agent (it uses its own).
func (c *Client) Initialize(ctx context.Context) (Agent, error) {
	var res struct {
		AgentInfo struct {
			Name    string `json:"name"`
			Version string `json:"version"`
		} `json:"agentInfo"`
		AgentCapabilities struct {
			LoadSession bool `json:"loadSession"`
		} `json:"agentCapabilities"`
	}
	params := map[string]any{"protocolVersion": 1, "clientCapabilities": map[string]any{},
		"clientInfo": map[string]string{"name": "flower", "version": "0"}}
	if err := c.Call(ctx, "initialize", params, &res); err != nil {
		return Agent{}, err
	}
	a := Agent{Name: res.AgentInfo.Name, Version: res.AgentInfo.Version, LoadSession: res.AgentCapabilities.LoadSession}
	c.mu.Lock()
	c.agent = a
	c.mu.Unlock()
	return a, nil
}

// Agent is what initialize said of the agent.
func (c *Client) Agent() Agent {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.agent
}

// sessionAnswer is the part of session/new's and session/load's answer
// read.
type sessionAnswer struct {
	SessionID string `json:"sessionId"`
	Models    struct {
		CurrentModelID string `json:"currentModelId"`
	} `json:"models"`
}

// NewSession opens a new session in cwd, with no MCP servers of the
// client's.
func (c *Client) NewSession(ctx context.Context, cwd string) (Session, error) {
	var a sessionAnswer
	if err := c.Call(ctx, "session/new", map[string]any{"cwd": cwd, "mcpServers": []any{}}, &a); err != nil {
		return Session{}, err
	}
	if a.SessionID == "" {
		return Session{}, errors.New("agent session/new: no session id in the answer")
	}
	return Session{ID: a.SessionID, Model: a.Models.CurrentModelID}, nil
}

// LoadSession opens the session id the agent ran before. The agent
// replays the session's history as updates before it answers; they are
// dropped, so that Next gives only what happens from now on.
func (c *Client) LoadSession(ctx context.Context, id, cwd string) (Session, error) {
	var a sessionAnswer
	load := c.conn.NewID()
	c.mu.Lock()
	c.loading[load] = id
	c.mu.Unlock()
	err := c.conn.CallID(ctx, load, "session/load", map[string]any{"sessionId": id, "cwd": cwd, "mcpServers": []any{}}, &a)
	c.loaded(load) // an answer did it already; a call that failed did not
	if err != nil {
		return Session{}, err
	}
	return Session{ID: id, Model: a.Models.CurrentModelID}, nil
}

// Prompt starts a turn of session with text; it returns once the request
// is written. The turn's end comes later, as a Message with End, in its
// place among the session's updates.
func (c *Client) Prompt(session, text string) error {
	id := c.conn.NewID()
	c.mu.Lock()
	c.prompts[id] = session
	c.mu.Unlock()
	params := map[string]any{"sessionId": session, "prompt": []any{map[string]string{"type": "text", "text": text}}}
	return c.conn.Request(id, "session/prompt", params)
}

// Cancel asks the agent to end session's running turn (a notification:
// the turn's End follows, stop reason "cancelled").
func (c *Client) Cancel(session string) error {
	return c.conn.Notify("session/cancel", map[string]string{"sessionId": session})
}

// Next returns the next message in order, waiting until ctx is done; one
// that is there already is returned even then. Once the agent's output
// has ended and every message was taken, it returns io.EOF.
func (c *Client) Next(ctx context.Context) (Message, error) { return c.queue.Next(ctx) }

// Done is closed when the agent's output ends; Err then says why.
func (c *Client) Done() <-chan struct{} { return c.conn.Done() }

// Err is why the read loop ended (nil while it runs, io.EOF at a clean
// end).
func (c *Client) Err() error { return c.conn.Err() }

// Close ends the agent: its input is closed, which ends a healthy agent,
// then its group gets SIGTERM and SIGKILL, a grace apart; it returns once
// the process and everything it started are gone.
func (c *Client) Close() error { return c.conn.Close() }

// Exited is closed once the process has exited (at once for New's);
// ExitErr is then its exit status (nil for 0).
func (c *Client) Exited() <-chan struct{} { return c.conn.Exited() }

// ExitErr is the process's exit status, valid once Exited is closed.
func (c *Client) ExitErr() error { return c.conn.ExitErr() }

// Call sends a request and waits for its answer, decoded into result when
// result is not nil.
func (c *Client) Call(ctx context.Context, method string, params, result any) error {
	return c.conn.Call(ctx, method, params, result)
}

func (c *Client) dispatch(line []byte, m rpcline.Wire) {
	switch {
	case m.ID != nil && m.Method != "":
		c.request(*m.ID, m)
	case m.ID != nil:
		c.answer(*m.ID, m)
	case m.Method == "session/update":
		var p struct {
			SessionID string          `json:"sessionId"`
			Update    json.RawMessage `json:"update"`
		}
		if json.Unmarshal(m.Params, &p) != nil {
			c.log.Printf("skipped a session/update that did not decode")
			return
		}
		if c.isLoading(p.SessionID) {
			return // the history of a session being loaded
		}
		var kind struct {
			SessionUpdate string `json:"sessionUpdate"`
		}
		_ = json.Unmarshal(p.Update, &kind)
		c.queue.Push(Message{Session: p.SessionID, Kind: kind.SessionUpdate, Update: p.Update})
	case m.Method != "":
		c.log.Printf("skipped the agent's notification %s", m.Method)
	default:
		c.log.Printf("skipped a line that is no JSON-RPC message (%d bytes)", len(line))
	}
}

// isLoading: a session/load of session is waiting for its answer.
func (c *Client) isLoading(session string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, s := range c.loading {
		if s == session {
			return true
		}
	}
	return false
}

// answer takes the answer to a session/prompt; the answers to Calls are
// the Conn's.
func (c *Client) answer(raw json.RawMessage, m rpcline.Wire) {
	id, _ := c.conn.Ours(raw)
	c.mu.Lock()
	session, isPrompt := c.prompts[id]
	delete(c.prompts, id)
	c.mu.Unlock()
	switch {
	case isPrompt:
		e := &End{Err: m.Error}
		if m.Error == nil {
			var r struct {
				StopReason string          `json:"stopReason"`
				Meta       json.RawMessage `json:"_meta"`
			}
			_ = json.Unmarshal(m.Result, &r)
			e.StopReason, e.Meta = r.StopReason, r.Meta
		}
		c.queue.Push(Message{Session: session, End: e})
	default:
		c.log.Printf("skipped an answer with id %s", raw)
	}
}

// request answers a request of the agent's: a permission is refused (the
// outcome "cancelled": no one is there to grant it), and said in order
// as a Refused message; anything else (the client's file system or
// terminal, which initialize did not offer) is an error.
func (c *Client) request(id json.RawMessage, m rpcline.Wire) {
	c.log.Printf("refused the agent's request %s", m.Method)
	if m.Method == "session/request_permission" {
		var p struct {
			SessionID string `json:"sessionId"`
		}
		_ = json.Unmarshal(m.Params, &p)
		c.queue.Push(Message{Session: p.SessionID, Kind: m.Method, Update: m.Params, Refused: true})
		_ = c.conn.Reply(id, map[string]any{"outcome": map[string]string{"outcome": "cancelled"}}, nil)
		return
	}
	_ = c.conn.Reply(id, nil, &RPCError{Code: -32601, Message: "flower does not offer " + m.Method})
}
