package scriptedresp

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/flowerhq/flower/scriptedhttp"
)

// Usage is what response.completed reports for one reply. Codex takes
// InputTokens as the context of that round (cached tokens are a part of
// it, not added to it).
type Usage struct {
	InputTokens       int
	CachedInputTokens int
	OutputTokens      int
}

// Call is one exec_command function call of a reply. An empty ID is
// replaced by a fresh "call_…" id.
type Call struct {
	ID  string
	Cmd string
}

// Reply is what a Script answers to one request.
type Reply struct {
	// Text is the assistant message; empty means no message item.
	Text string
	// Calls become function_call items after the message. A reply with
	// no call ends Codex's turn.
	Calls []Call
	// Usage is reported in response.completed.
	Usage Usage
	// Failed, when set, ends the stream with response.failed carrying
	// this error code and FailedMessage instead of response.completed.
	Failed        string
	FailedMessage string
	// Status 0 or 200 streams; anything else answers a JSON error body
	// with ErrorCode and ErrorMessage, and Header.
	Status       int
	ErrorCode    string
	ErrorMessage string
	Header       http.Header
	// Delay holds the answer back; it ends early when the client goes.
	Delay time.Duration
}

// Script decides the reply to each /v1/responses request. It may be
// called from several goroutines at once.
type Script func(r *Request) Reply

// Sequence answers the n-th request with replies[n-1] and every later one
// with the last; compaction requests count like any other.
func Sequence(replies ...Reply) Script {
	next := scriptedhttp.Nth(replies)
	return func(*Request) Reply { return next() }
}

// Overflow is how the Responses API says the input no longer fits: a
// stream that ends in response.failed with code context_length_exceeded.
func Overflow() Reply {
	return Reply{Failed: "context_length_exceeded",
		FailedMessage: "Your input exceeds the context window of this model. Please adjust your input and try again."}
}

// Unauthorized is the answer to a bad key: HTTP 401 invalid_api_key.
func Unauthorized() Reply {
	return Reply{Status: http.StatusUnauthorized, ErrorCode: "invalid_api_key", ErrorMessage: "Incorrect API key provided."}
}

// RateLimited is the answer of a key past its rate limit: HTTP 429
// rate_limit_exceeded, with a retry-after header when retryAfter > 0.
func RateLimited(retryAfter time.Duration) Reply {
	return Reply{Status: http.StatusTooManyRequests, ErrorCode: "rate_limit_exceeded",
		ErrorMessage: "Rate limit reached for requests per min. Please try again later.", Header: scriptedhttp.RetryAfter(retryAfter)}
}

// Server is a scripted Responses API listening on 127.0.0.1.
type Server struct {
	// URL is http://127.0.0.1:PORT/v1, the provider's base_url.
	URL string

	script Script
	http   *scriptedhttp.Server
	book   scriptedhttp.Book[Request]

	mu       sync.Mutex
	listings int
}

// APIKey is the fake key Codex is handed; it is not a secret.
const APIKey = "test-key-not-secret"

// Start listens on 127.0.0.1 on a free port and serves script.
func Start(script Script) (*Server, error) {
	if script == nil {
		return nil, errors.New("start responses server: nil script")
	}
	s := &Server{script: script}
	var err error
	if s.http, s.URL, err = scriptedhttp.Serve("responses server", s); err != nil {
		return nil, err
	}
	s.URL += "/v1"
	return s, nil
}

// Close stops the server at once, dropping open connections.
func (s *Server) Close() error { return s.http.Close() }

// Requests returns every /v1/responses request so far, in arrival order.
func (s *Server) Requests() []Request { return s.book.Requests() }

// ModelListings is how many GET /v1/models requests arrived.
func (s *Server) ModelListings() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.listings
}

// Unexpected lists "METHOD /path" of every request the server did not
// recognise (answered 404).
func (s *Server) Unexpected() []string { return s.book.Unexpected() }

// ServeHTTP routes the endpoints.
func (s *Server) ServeHTTP(w http.ResponseWriter, hr *http.Request) {
	switch {
	case hr.Method == http.MethodPost && hr.URL.Path == "/v1/responses":
		s.serveResponses(w, hr)
	case hr.Method == http.MethodGet && hr.URL.Path == "/v1/models":
		s.mu.Lock()
		s.listings++
		s.mu.Unlock()
		scriptedhttp.WriteJSON(w, http.StatusOK, map[string]any{"object": "list", "data": []any{}, "models": []any{}})
	default:
		s.book.NoteUnexpected(hr.Method + " " + hr.URL.RequestURI())
		writeError(w, http.StatusNotFound, "not_found", "not found: "+hr.URL.Path)
	}
}

func (s *Server) serveResponses(w http.ResponseWriter, hr *http.Request) {
	body, err := scriptedhttp.ReadBody(hr)
	if err == nil {
		var req Request
		if req, err = parseRequest(body); err == nil {
			s.answer(w, hr, req)
			return
		}
	}
	s.book.NoteUnexpected(hr.Method + " " + hr.URL.RequestURI() + ": " + err.Error())
	writeError(w, http.StatusBadRequest, "invalid_request_error", err.Error())
}

func (s *Server) answer(w http.ResponseWriter, hr *http.Request, req Request) {
	req.Time = time.Now()
	req.Header = scriptedhttp.Redact(hr.Header)
	req = s.book.Add(func(seq int) Request { req.Seq = seq; return req })

	reply := TitleReply
	if !req.Title {
		reply = s.script(&req)
	}
	if !scriptedhttp.Hold(w, hr, reply.Delay, reply.Header) {
		return
	}
	if reply.Status != 0 && reply.Status != http.StatusOK {
		writeError(w, reply.Status, reply.ErrorCode, reply.ErrorMessage)
		return
	}
	if streamReply(w, req.Model, reply) {
		s.book.Update(req.Seq, func(r *Request) { r.Answered = time.Now() })
	}
}

// streamReply streams the answer; it reports whether it was sent in full.
func streamReply(w http.ResponseWriter, model string, r Reply) bool {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	send := func(event string, data map[string]any) bool {
		data["type"] = event
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
	id := scriptedhttp.NewID("resp_")
	if !send("response.created", map[string]any{"response": map[string]any{"id": id, "model": model}}) {
		return false
	}
	for _, item := range r.items() {
		if !send("response.output_item.done", map[string]any{"item": item}) {
			return false
		}
	}
	if r.Failed != "" {
		return send("response.failed", map[string]any{"response": map[string]any{"id": id,
			"error": map[string]string{"code": r.Failed, "message": r.FailedMessage}}})
	}
	return send("response.completed", map[string]any{"response": map[string]any{"id": id, "usage": r.Usage.json()}})
}

// items are the reply's output items in Responses API shape.
func (r Reply) items() []map[string]any {
	var out []map[string]any
	if r.Text != "" {
		out = append(out, map[string]any{"type": "message", "role": "assistant", "id": scriptedhttp.NewID("msg_"),
			"content": []map[string]any{{"type": "output_text", "text": r.Text}}})
	}
	for _, c := range r.Calls {
		id := c.ID
		if id == "" {
			id = scriptedhttp.NewID("call_")
		}
		args, _ := json.Marshal(map[string]string{"cmd": c.Cmd})
		out = append(out, map[string]any{"type": "function_call", "id": scriptedhttp.NewID("fc_"),
			"call_id": id, "name": "exec_command", "arguments": string(args)})
	}
	return out
}

func (u Usage) json() map[string]any {
	return map[string]any{
		"input_tokens":         u.InputTokens,
		"input_tokens_details": map[string]int{"cached_tokens": u.CachedInputTokens},
		"output_tokens":        u.OutputTokens,
		"total_tokens":         u.InputTokens + u.OutputTokens,
	}
}

func writeError(w http.ResponseWriter, status int, code, msg string) {
	scriptedhttp.WriteJSON(w, status, map[string]any{
		"error": map[string]any{"code": code, "message": msg, "type": code},
	})
}
