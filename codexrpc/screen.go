package codexrpc

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/flowerhq/flower/rpcline"
	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
)

// The Codex CLI's own screen (its TUI) reaches an app-server over a
// WebSocket when started with `--remote` (DESIGN.md «Codex screen»). A
// client started with Config.Screen shares its connection with one: what
// the screen sends goes to the app-server as it is, and every line the
// app-server writes goes to the screen, but for the answers to flower's
// own requests, whose ids are flower's (idPrefix). flower reads the same
// notifications as the screen, of the screen's thread, and starts and
// interrupts turns in it: the screen shows them as the person's.
//
// The screen's thread is the first it starts or resumes; the others it
// opens (a title's, a summary's) are the screen's alone, and their
// notifications reach only the screen. flower's settings for the thread
// (the hook's trust, the keys kept from the model's commands) go into
// that first thread/start's config, on the way.

// NoteScreenInterrupt is no notification of Codex's: the client's own,
// queued as the screen asks to interrupt a turn of the session's thread.
const NoteScreenInterrupt = "flower/screen/interrupt"

// ScreenInterrupt is NoteScreenInterrupt's value: the person, at the
// screen, ended that turn.
type ScreenInterrupt struct {
	ThreadID, TurnID string
}

// ScreenConn is the screen's end of the connection: one JSON-RPC message
// a Read or a Write (a *wsock.Conn).
type ScreenConn interface {
	Read() ([]byte, error)
	Write([]byte) error
}

// screen is the shared connection's state.
type screen struct {
	mu     sync.Mutex
	conn   ScreenConn
	held   [][]byte // lines for the screen before it was attached
	broken bool     // a write to the screen failed: it is gone

	// claim is the id of the thread/start (or resume) of the screen's
	// that opens the session's thread; thread is that thread once
	// answered, and known is closed then, or when err says why never.
	claimed bool
	claim   json.RawMessage
	thread  Thread
	known   chan struct{}
	err     error
	ended   chan struct{} // closed when the screen's connection ends
	// shown is what the screen shows in place of the text of a user
	// message of flower's (StartTurnShown), by that text.
	shown map[string]string
	// hookLists are the ids of the screen's hooks/list requests not yet
	// answered (screenHooks).
	hookLists map[string]bool
	// initID is the id of the screen's initialize request.
	initID string
}

func newScreen() *screen {
	return &screen{known: make(chan struct{}), ended: make(chan struct{}), hookLists: map[string]bool{}, shown: map[string]string{}}
}

// ErrNoScreen is a Screen call on a client started without Config.Screen.
var ErrNoScreen = errors.New("codex app-server: no screen shares this connection")

// Screen attaches the screen's connection and relays it until it ends.
// config is flower's settings for the screen's thread, asked for as the
// screen opens it (nil: none).
func (c *Client) Screen(conn ScreenConn, config func(context.Context) (map[string]any, error)) error {
	s := c.screen
	if s == nil {
		return ErrNoScreen
	}
	s.mu.Lock()
	s.conn = conn
	held := s.held
	s.held = nil
	s.mu.Unlock()
	for _, l := range held {
		s.write(c, l)
	}
	go c.relayScreen(conn, config)
	return nil
}

// relayScreen sends what the screen says to the app-server.
func (c *Client) relayScreen(conn ScreenConn, config func(context.Context) (map[string]any, error)) {
	s := c.screen
	defer close(s.ended)
	for {
		msg, err := conn.Read()
		if err != nil {
			s.fail(fmt.Errorf("the Codex screen's connection ended before it opened a thread: %w", err))
			return
		}
		switch m := gjson.GetBytes(msg, "method").String(); {
		case (m == MethodThreadStart || m == MethodThreadResume) && s.take(msg) && config != nil:
			msg = c.withConfig(msg, config)
		case m == MethodHooksList:
			s.mu.Lock()
			s.hookLists[gjson.GetBytes(msg, "id").Raw] = true
			s.mu.Unlock()
		case m == MethodTurnInterrupt && gjson.GetBytes(msg, "params.threadId").String() == s.threadID():
			// The person ended the turn at the screen (Esc, Ctrl-C): said
			// before the turn's end, which the app-server writes after.
			c.queue.Push(Notification{Method: NoteScreenInterrupt,
				Value: ScreenInterrupt{ThreadID: s.threadID(), TurnID: gjson.GetBytes(msg, "params.turnId").String()}})
		case m == MethodInitialize:
			s.mu.Lock()
			s.initID = gjson.GetBytes(msg, "id").Raw
			s.mu.Unlock()
		}
		if err := c.conn.SendRaw(msg); err != nil {
			c.log.Printf("the screen's message did not reach the app-server: %v", err)
		}
	}
}

// take claims the screen's thread/start or resume msg as the session's
// thread when none is yet: true then.
func (s *screen) take(msg []byte) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.claimed {
		return false
	}
	s.claimed = true
	s.claim = json.RawMessage(gjson.GetBytes(msg, "id").Raw)
	return true
}

// withConfig is msg with flower's settings added to its params' config;
// msg as it is when they cannot be had (said in the log: the thread opens
// without them, as the person started it).
func (c *Client) withConfig(msg []byte, config func(context.Context) (map[string]any, error)) []byte {
	ctx, cancel := context.WithTimeout(context.Background(), screenConfigTimeout)
	defer cancel()
	add, err := config(ctx)
	if err != nil {
		c.log.Printf("the screen's thread opens without flower's settings: %v", err)
		return msg
	}
	if len(add) == 0 {
		return msg
	}
	merged := map[string]any{}
	if raw := gjson.GetBytes(msg, "params.config"); raw.IsObject() {
		_ = json.Unmarshal([]byte(raw.Raw), &merged)
	}
	for k, v := range add {
		merged[k] = v
	}
	b, err := json.Marshal(merged)
	if err == nil {
		var out []byte
		if out, err = sjson.SetRawBytes(msg, "params.config", b); err == nil {
			return out
		}
	}
	c.log.Printf("the screen's thread opens without flower's settings: %v", err)
	return msg
}

// screenConfigTimeout bounds flower's requests for the thread's settings.
const screenConfigTimeout = 30 * time.Second

// pass relays a line of the app-server's to the screen, and says whether
// that was all of it: flower's own answers are flower's alone, the
// answers to the screen's requests and the app-server's requests (an
// approval, a question) the screen's alone, and notifications go to both,
// but for another thread's and a stream's pieces, which only the screen
// reads. It runs on the client's reading goroutine.
func (s *screen) pass(c *Client, line []byte, m rpcline.Wire) bool {
	if m.ID != nil && m.Method == "" {
		if _, mine := c.conn.Ours(*m.ID); mine {
			return false
		}
		s.answered(*m.ID, m)
		s.mu.Lock()
		initAnswer := s.initID != "" && s.initID == string(*m.ID)
		s.mu.Unlock()
		if initAnswer {
			c.initialized(m.Result)
		}
		line = s.screenHooks(c, *m.ID, line)
	} else if m.Method == NoteItemStarted || m.Method == NoteItemCompleted {
		line = s.shownLine(c, m, line)
	}
	s.write(c, bytes.TrimRight(line, "\r\n"))
	switch {
	case m.ID != nil:
		return true
	case strings.HasSuffix(m.Method, "Delta"):
		return true
	}
	if th := gjson.GetBytes(m.Params, "threadId"); th.Exists() {
		return th.String() != s.threadID()
	}
	return false
}

// screenHooks is the answer line to a hooks/list of the screen's without
// the hooks given on the app-server's command line (source
// "sessionFlags"): flower's own, which flower trusts for the thread it
// opens (SessionHookTrust), and which the screen would otherwise ask the
// person to review, and to trust in their config. Any other answer is
// line as it is.
func (s *screen) screenHooks(c *Client, id json.RawMessage, line []byte) []byte {
	s.mu.Lock()
	asked := s.hookLists[string(id)]
	delete(s.hookLists, string(id))
	s.mu.Unlock()
	if !asked {
		return line
	}
	var msg map[string]any
	if err := json.Unmarshal(line, &msg); err != nil {
		return line
	}
	res, _ := msg["result"].(map[string]any)
	data, _ := res["data"].([]any)
	for _, d := range data {
		d, _ := d.(map[string]any)
		hooks, _ := d["hooks"].([]any)
		kept := []any{}
		for _, h := range hooks {
			if h, _ := h.(map[string]any); h["source"] == "sessionFlags" {
				continue
			}
			kept = append(kept, h)
		}
		if d != nil && hooks != nil {
			d["hooks"] = kept
		}
	}
	out, err := json.Marshal(msg)
	if err != nil {
		c.log.Printf("the screen's hooks/list answer passes as it is: %v", err)
		return line
	}
	return out
}

// hide has the screen show shown in place of text, in the user message
// of the turn flower starts with it.
func (s *screen) hide(text, shown string) {
	s.mu.Lock()
	s.shown[text] = shown
	s.mu.Unlock()
}

// shownLine is an item notification's line with a user message of
// flower's shown as hide said; any other line as it is. The message is
// forgotten once completed.
func (s *screen) shownLine(c *Client, m rpcline.Wire, line []byte) []byte {
	it := gjson.GetBytes(m.Params, "item")
	if it.Get("type").String() != "userMessage" {
		return line
	}
	text := it.Get("content.0.text").String()
	s.mu.Lock()
	shown, ok := s.shown[text]
	if ok && m.Method == NoteItemCompleted {
		delete(s.shown, text)
	}
	s.mu.Unlock()
	if !ok || len(it.Get("content").Array()) != 1 {
		return line
	}
	out, err := sjson.SetBytes(line, "params.item.content.0.text", shown)
	if err != nil {
		c.log.Printf("the screen shows flower's prompt whole: %v", err)
		return line
	}
	return out
}

// answered notes the answer to the claimed thread/start: the session's
// thread.
func (s *screen) answered(id json.RawMessage, m rpcline.Wire) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.claimed || s.thread.ID != "" || s.err != nil || !bytes.Equal(id, s.claim) {
		return
	}
	if m.Error != nil {
		s.err = fmt.Errorf("the Codex screen's thread did not open: %w", m.Error)
		close(s.known)
		return
	}
	s.thread = Thread{ID: gjson.GetBytes(m.Result, "thread.id").String(), Model: gjson.GetBytes(m.Result, "model").String()}
	if s.thread.ID == "" {
		s.err = errors.New("the Codex screen's thread opened with no id")
	}
	close(s.known)
}

func (s *screen) threadID() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.thread.ID
}

// fail ends the wait for the thread with err, when it is not known yet.
func (s *screen) fail(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.thread.ID == "" && s.err == nil {
		s.err = err
		close(s.known)
	}
}

// write sends a line to the screen, or holds it until the screen is
// attached; once a write failed, the screen is gone and nothing more goes.
func (s *screen) write(c *Client, line []byte) {
	s.mu.Lock()
	conn, broken := s.conn, s.broken
	if conn == nil {
		s.held = append(s.held, append([]byte(nil), line...))
	}
	s.mu.Unlock()
	if conn == nil || broken {
		return
	}
	if err := conn.Write(line); err != nil {
		s.mu.Lock()
		s.broken = true
		s.mu.Unlock()
		c.log.Printf("the screen is gone: %v", err)
	}
}

// ScreenThread is the screen's thread once it has opened it: the
// session's. It waits until then, the screen's connection ends first,
// the app-server ends, or ctx does.
func (c *Client) ScreenThread(ctx context.Context) (Thread, error) {
	s := c.screen
	if s == nil {
		return Thread{}, ErrNoScreen
	}
	select {
	case <-s.known:
	case <-c.conn.Done():
		s.fail(fmt.Errorf("the Codex app-server ended before the screen opened a thread: %w", c.Err()))
	case <-ctx.Done():
		s.fail(fmt.Errorf("the Codex screen opened no thread: %w", ctx.Err()))
	}
	<-s.known
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.thread, s.err
}

// ScreenEnded is closed once the screen's connection has ended.
func (c *Client) ScreenEnded() <-chan struct{} {
	if c.screen == nil {
		return nil
	}
	return c.screen.ended
}
