package scriptedapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/flowerhq/flower/scriptedhttp"
)

// Usage is what message_start reports. The harness (and flower) take
// input + cache_creation + cache_read as the context size of that round.
type Usage struct {
	InputTokens              int
	CacheCreationInputTokens int
	CacheReadInputTokens     int
	OutputTokens             int
}

// ToolUse is one tool_use block of a reply. An empty ID is replaced by a
// fresh "toolu_…" id.
type ToolUse struct {
	ID    string
	Name  string
	Input any
}

// Reply is what a Script answers to one request.
type Reply struct {
	// Text is the text block; empty means no text block.
	Text string
	// ToolUses become tool_use blocks after the text; when any are present
	// stop_reason is "tool_use", else "end_turn".
	ToolUses []ToolUse
	// Usage is reported in message_start (and output_tokens in message_delta).
	Usage Usage
	// Status 0 or 200 answers normally; anything else answers a JSON error
	// body with ErrorType and ErrorMessage.
	Status       int
	ErrorType    string
	ErrorMessage string
	// Delay holds the answer back; it ends early when the client disconnects.
	Delay time.Duration
	// ChunkText splits the text into text_delta events of this many runes
	// (0 = one delta).
	ChunkText int
	// ToolDelay holds a streamed answer's tool_use blocks back after its
	// text block, as a model that writes its tool call slowly does: the
	// harness has written the text's line by then. It ends early when the
	// client disconnects.
	ToolDelay time.Duration
	// Fault breaks a streamed answer after message_start and the first
	// text delta, the way a network or an overloaded server does. A
	// request that does not stream is answered whole.
	Fault Fault
	// Header is sent with the answer, an error's or a normal one: the
	// rate-limit headers (retry-after, anthropic-ratelimit-*) of
	// RateLimited and UsageLimited.
	Header http.Header
}

// Fault is how a streamed answer breaks off.
type Fault int

// Faults a Reply can carry.
const (
	// FaultNone streams the whole answer.
	FaultNone Fault = iota
	// FaultReset resets the TCP connection (RST, not FIN) mid-stream.
	FaultReset
	// FaultStall sends nothing more and holds the connection open until
	// the client gives up or the server closes.
	FaultStall
)

func (f Fault) String() string {
	switch f {
	case FaultNone:
		return "none"
	case FaultReset:
		return "reset"
	case FaultStall:
		return "stall"
	}
	return fmt.Sprintf("Fault(%d)", int(f))
}

// ServerError is the reply of an API that fails: HTTP 500 api_error.
func ServerError() Reply {
	return Reply{Status: http.StatusInternalServerError, ErrorType: "api_error", ErrorMessage: "Internal server error"}
}

// Overloaded is the reply of an API at capacity: HTTP 529
// overloaded_error.
func Overloaded() Reply {
	return Reply{Status: 529, ErrorType: "overloaded_error", ErrorMessage: "Overloaded"}
}

// Overflow is how the real API says the prompt no longer fits: HTTP 400
// "prompt is too long: tokens > max maximum".
func Overflow(tokens, max int) Reply {
	return Reply{Status: http.StatusBadRequest, ErrorType: "invalid_request_error",
		ErrorMessage: fmt.Sprintf("prompt is too long: %d tokens > %d maximum", tokens, max)}
}

// Script decides the reply to each /v1/messages request. It may be called
// from several goroutines at once.
type Script func(r *Request) Reply

// Server is a scripted Messages API listening on 127.0.0.1.
type Server struct {
	// URL is http://127.0.0.1:PORT, the value for ANTHROPIC_BASE_URL.
	URL string

	script Script
	http   *scriptedhttp.Server

	book        scriptedhttp.Book[Request]
	mu          sync.Mutex
	countTokens []CountTokensRequest
	// countReply, when set, answers count_tokens instead of the estimate.
	countReply *Reply
}

// SetCountTokensReply makes count_tokens answer r from now on, as a
// gateway without the endpoint does: a Status other than 200 answers that
// error, a Delay holds the answer back, FaultStall never answers (until the
// client gives up or the server closes).
func (s *Server) SetCountTokensReply(r Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.countReply = &r
}

// CountTokensRequest is one recorded /v1/messages/count_tokens call.
type CountTokensRequest struct {
	Time time.Time
	// SessionID is the harness session that asked (the
	// X-Claude-Code-Session-Id header), "" when it did not say.
	SessionID string
}

// APIKey is the fake key Env hands the harness; it is not a secret.
const APIKey = "test-key-not-secret"

// Start listens on 127.0.0.1 on a free port and serves script.
func Start(script Script) (*Server, error) {
	if script == nil {
		return nil, errors.New("start api server: nil script")
	}
	s := &Server{script: script}
	var err error
	if s.http, s.URL, err = scriptedhttp.Serve("api server", s); err != nil {
		return nil, err
	}
	return s, nil
}

// Close stops the server at once, dropping open connections.
func (s *Server) Close() error { return s.http.Close() }

// Env returns the variables that point the harness at this server and keep
// it from contacting anything else (see the package doc for what each one
// was seen to do). Append them after the parent's environment so they win.
func (s *Server) Env() []string {
	return []string{
		"ANTHROPIC_BASE_URL=" + s.URL,
		"ANTHROPIC_API_KEY=" + APIKey,
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
		"DISABLE_TELEMETRY=1",
	}
}

// Requests returns every /v1/messages request so far (count_tokens
// excluded), in arrival order.
func (s *Server) Requests() []Request { return s.book.Requests() }

// CountTokensCalls is how many /v1/messages/count_tokens requests arrived.
func (s *Server) CountTokensCalls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.countTokens)
}

// CountTokensRequests returns every /v1/messages/count_tokens request so
// far, in arrival order.
func (s *Server) CountTokensRequests() []CountTokensRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]CountTokensRequest(nil), s.countTokens...)
}

// Unexpected lists "METHOD /path" of every request the server did not
// recognise (answered 404).
func (s *Server) Unexpected() []string { return s.book.Unexpected() }

// ServeHTTP routes the Messages API endpoints.
func (s *Server) ServeHTTP(w http.ResponseWriter, hr *http.Request) {
	switch {
	case hr.Method == http.MethodPost && hr.URL.Path == "/v1/messages":
		s.serveMessages(w, hr)
	case hr.Method == http.MethodPost && hr.URL.Path == "/v1/messages/count_tokens":
		s.serveCountTokens(w, hr)
	default:
		s.book.NoteUnexpected(hr.Method + " " + hr.URL.RequestURI())
		writeError(w, http.StatusNotFound, "not_found_error", "not found: "+hr.URL.Path)
	}
}

func (s *Server) serveCountTokens(w http.ResponseWriter, hr *http.Request) {
	s.mu.Lock()
	s.countTokens = append(s.countTokens, CountTokensRequest{Time: time.Now(), SessionID: hr.Header.Get("X-Claude-Code-Session-Id")})
	override := s.countReply
	s.mu.Unlock()
	if r := override; r != nil {
		t := time.NewTimer(r.Delay)
		defer t.Stop()
		if r.Fault == FaultStall {
			t.Stop()
		}
		select {
		case <-t.C:
		case <-hr.Context().Done():
			return
		}
		if r.Status != 0 && r.Status != http.StatusOK {
			writeError(w, r.Status, r.ErrorType, r.ErrorMessage)
			return
		}
	}
	body, err := scriptedhttp.ReadBody(hr)
	if err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", err.Error())
		return
	}
	// About four bytes of JSON per token is close enough for the harness,
	// which only uses this for its /context breakdown.
	scriptedhttp.WriteJSON(w, http.StatusOK, map[string]int{"input_tokens": len(body)/4 + 1})
}

func (s *Server) serveMessages(w http.ResponseWriter, hr *http.Request) {
	body, err := scriptedhttp.ReadBody(hr)
	if err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", err.Error())
		return
	}
	req, err := parseRequest(body)
	if err != nil {
		s.book.NoteUnexpected(hr.Method + " " + hr.URL.RequestURI() + ": " + err.Error())
		writeError(w, http.StatusBadRequest, "invalid_request_error", err.Error())
		return
	}
	req.Time = time.Now()
	req.Path = hr.URL.RequestURI()
	req.Header = scriptedhttp.Redact(hr.Header)
	if id := hr.Header.Get("X-Claude-Code-Session-Id"); id != "" {
		req.SessionID = id
	}
	req.RetryCount, _ = strconv.Atoi(hr.Header.Get("X-Stainless-Retry-Count"))

	req.Kind = classify(&req)
	req.IsSubagent = req.Kind == KindSubagent
	req = s.book.Add(func(seq int) Request { req.Seq = seq; return req })

	reply := s.script(&req)
	if !scriptedhttp.Hold(w, hr, reply.Delay, reply.Header) {
		return
	}
	if reply.Status != 0 && reply.Status != http.StatusOK {
		writeError(w, reply.Status, reply.ErrorType, reply.ErrorMessage)
		return
	}
	blocks := reply.blocks()
	if !req.Stream {
		scriptedhttp.WriteJSON(w, http.StatusOK, message(req.Model, blocks, reply, true))
	} else if !streamReply(w, hr, req.Model, blocks, reply) {
		return
	}
	s.book.Update(req.Seq, func(r *Request) { r.Answered = time.Now() })
}

// block is one content block of a reply, in API shape.
type block map[string]any

func (r Reply) blocks() []block {
	var out []block
	if r.Text != "" {
		out = append(out, block{"type": "text", "text": r.Text})
	}
	for _, tu := range r.ToolUses {
		id := tu.ID
		if id == "" {
			id = scriptedhttp.NewID("toolu_")
		}
		input := tu.Input
		if input == nil {
			input = map[string]any{}
		}
		out = append(out, block{"type": "tool_use", "id": id, "name": tu.Name, "input": input})
	}
	return out
}

func (r Reply) stopReason() string {
	if len(r.ToolUses) > 0 {
		return "tool_use"
	}
	return "end_turn"
}

func usageJSON(u Usage) map[string]int {
	return map[string]int{
		"input_tokens":                u.InputTokens,
		"cache_creation_input_tokens": u.CacheCreationInputTokens,
		"cache_read_input_tokens":     u.CacheReadInputTokens,
		"output_tokens":               u.OutputTokens,
	}
}

// message builds the API message object; full=false gives the empty shell
// message_start carries.
func message(model string, blocks []block, r Reply, full bool) map[string]any {
	m := map[string]any{
		"id":            scriptedhttp.NewID("msg_"),
		"type":          "message",
		"role":          "assistant",
		"model":         model,
		"content":       []block{},
		"stop_reason":   nil,
		"stop_sequence": nil,
		"usage":         usageJSON(r.Usage),
	}
	if full {
		m["content"] = blocks
		m["stop_reason"] = r.stopReason()
	}
	return m
}

// streamReply streams the answer; it reports whether it was sent in full.
func streamReply(w http.ResponseWriter, hr *http.Request, model string, blocks []block, r Reply) bool {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	send := func(event string, data any) bool {
		b, err := json.Marshal(data)
		if err != nil {
			return false
		}
		if _, err := fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, b); err != nil {
			return false
		}
		if flusher != nil {
			flusher.Flush()
		}
		return true
	}

	if !send("message_start", map[string]any{"type": "message_start", "message": message(model, nil, r, false)}) {
		return false
	}
	if r.Fault != FaultNone {
		breakStream(w, hr, send, r)
		return false
	}
	for i, b := range blocks {
		start := block{}
		for k, v := range b {
			start[k] = v
		}
		var deltas []map[string]any
		switch b["type"] {
		case "text":
			start["text"] = ""
			for _, piece := range chunk(b["text"].(string), r.ChunkText) {
				deltas = append(deltas, map[string]any{"type": "text_delta", "text": piece})
			}
		case "tool_use":
			if i > 0 && r.ToolDelay > 0 && !hold(hr, r.ToolDelay) {
				return false
			}
			start["input"] = map[string]any{}
			js, err := json.Marshal(b["input"])
			if err != nil {
				js = []byte("{}")
			}
			deltas = append(deltas, map[string]any{"type": "input_json_delta", "partial_json": string(js)})
		}
		if !send("content_block_start", map[string]any{"type": "content_block_start", "index": i, "content_block": start}) {
			return false
		}
		for _, d := range deltas {
			if !send("content_block_delta", map[string]any{"type": "content_block_delta", "index": i, "delta": d}) {
				return false
			}
		}
		if !send("content_block_stop", map[string]any{"type": "content_block_stop", "index": i}) {
			return false
		}
	}
	if !send("message_delta", map[string]any{
		"type":  "message_delta",
		"delta": map[string]any{"stop_reason": r.stopReason(), "stop_sequence": nil},
		"usage": map[string]int{"output_tokens": r.Usage.OutputTokens},
	}) {
		return false
	}
	return send("message_stop", map[string]any{"type": "message_stop"})
}

// hold waits d, or until the client is gone (false).
func hold(hr *http.Request, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-hr.Context().Done():
		return false
	}
}

// breakStream sends the start of a text block and one delta, then breaks
// the stream as r.Fault says.
func breakStream(w http.ResponseWriter, hr *http.Request, send func(string, any) bool, r Reply) {
	if !send("content_block_start", map[string]any{"type": "content_block_start", "index": 0, "content_block": block{"type": "text", "text": ""}}) {
		return
	}
	piece := chunk(r.Text, max(r.ChunkText, 8))[0]
	if !send("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0, "delta": map[string]any{"type": "text_delta", "text": piece}}) {
		return
	}
	switch r.Fault {
	case FaultReset:
		conn, _, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		if tc, ok := conn.(*net.TCPConn); ok {
			// Linger 0 makes Close send RST: "connection reset by peer"
			// on the client, not a clean end of stream.
			_ = tc.SetLinger(0)
		}
		_ = conn.Close()
	case FaultStall:
		<-hr.Context().Done()
	}
}

// chunk splits s into pieces of n runes; n <= 0 keeps it whole.
func chunk(s string, n int) []string {
	if n <= 0 || utf8.RuneCountInString(s) <= n {
		return []string{s}
	}
	var out []string
	for len(s) > 0 {
		i, count := 0, 0
		for i < len(s) && count < n {
			_, size := utf8.DecodeRuneInString(s[i:])
			i += size
			count++
		}
		out = append(out, s[:i])
		s = s[i:]
	}
	return out
}

func writeError(w http.ResponseWriter, status int, typ, msg string) {
	if typ == "" {
		typ = "api_error"
	}
	scriptedhttp.WriteJSON(w, status, map[string]any{
		"type":  "error",
		"error": map[string]string{"type": typ, "message": msg},
	})
}
