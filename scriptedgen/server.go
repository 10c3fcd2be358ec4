package scriptedgen

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/flowerhq/flower/scriptedhttp"
)

// Usage is a reply's usageMetadata. The CLI takes PromptTokens as the
// prompt's size (cached tokens are a part of it, not added to it).
type Usage struct {
	PromptTokens int
	CachedTokens int
	OutputTokens int
}

// Call is one function call of a reply: a tool of the CLI's by name
// (Shell makes the shell tool's).
type Call struct {
	Name string
	Args map[string]any
}

// Shell is a call of the CLI's shell tool, run_shell_command, with cmd.
func Shell(cmd string) Call {
	return Call{Name: "run_shell_command", Args: map[string]any{"command": cmd, "description": "scripted"}}
}

// Reply is what a Script answers to one request.
type Reply struct {
	// Text is the model's text; empty means no text part.
	Text string
	// Calls are function calls after the text. A reply with no call ends
	// the CLI's turn.
	Calls []Call
	// Usage is reported with the last chunk.
	Usage Usage
	// Status 0 or 200 answers normally; anything else answers a Google API
	// error body with ErrorStatus ("RESOURCE_EXHAUSTED", …) and
	// ErrorMessage, and Header.
	Status       int
	ErrorStatus  string
	ErrorMessage string
	Header       http.Header
	// Delay holds the answer back; it ends early when the client goes.
	Delay time.Duration
}

// Script decides the reply to each request. It may be called from several
// goroutines at once.
type Script func(r *Request) Reply

// SideReply answers a side request (Request.Side): a short JSON text, as
// the CLI's checks ask for JSON ("the user speaks next", for its
// next-speaker check), with a small usage that never moves a meter.
var SideReply = Reply{Text: `{"next_speaker":"user","reasoning":"scripted","complexity_reasoning":"scripted","complexity_score":1}`,
	Usage: Usage{PromptTokens: 10, OutputTokens: 5}}

// Sequence answers the n-th main request with replies[n-1] and every later
// one with the last; side requests get SideReply.
func Sequence(replies ...Reply) Script {
	next := scriptedhttp.Nth(replies)
	return func(r *Request) Reply {
		if r.Side {
			return SideReply
		}
		return next()
	}
}

// Unauthorized is the answer to a bad key: HTTP 400 INVALID_ARGUMENT
// "API key not valid", as the Gemini API says it.
func Unauthorized() Reply {
	return Reply{Status: http.StatusBadRequest, ErrorStatus: "INVALID_ARGUMENT",
		ErrorMessage: "API key not valid. Please pass a valid API key."}
}

// Forbidden is a key the API refuses: HTTP 403 PERMISSION_DENIED.
func Forbidden() Reply {
	return Reply{Status: http.StatusForbidden, ErrorStatus: "PERMISSION_DENIED",
		ErrorMessage: "Method doesn't allow unregistered callers."}
}

// RateLimited is the answer of a key past its quota: HTTP 429
// RESOURCE_EXHAUSTED, with a retry-after header when retryAfter > 0.
func RateLimited(retryAfter time.Duration) Reply {
	return Reply{Status: http.StatusTooManyRequests, ErrorStatus: "RESOURCE_EXHAUSTED",
		ErrorMessage: "Resource has been exhausted (e.g. check quota).", Header: scriptedhttp.RetryAfter(retryAfter)}
}

// Overflow is how the Gemini API says the prompt no longer fits: HTTP 400
// INVALID_ARGUMENT with the token counts.
func Overflow() Reply {
	return Reply{Status: http.StatusBadRequest, ErrorStatus: "INVALID_ARGUMENT",
		ErrorMessage: "The input token count (1048577) exceeds the maximum number of tokens allowed (1048576)."}
}

// Server is a scripted Gemini API listening on 127.0.0.1.
type Server struct {
	// URL is http://127.0.0.1:PORT, the CLI's GOOGLE_GEMINI_BASE_URL.
	URL string

	script Script
	http   *scriptedhttp.Server
	book   scriptedhttp.Book[Request]

	mu     sync.Mutex
	counts int
}

// APIKey is the fake key the CLI is handed; it is not a secret.
const APIKey = "test-key-not-secret"

// Start listens on 127.0.0.1 on a free port and serves script.
func Start(script Script) (*Server, error) {
	if script == nil {
		return nil, errors.New("start gemini server: nil script")
	}
	s := &Server{script: script}
	var err error
	if s.http, s.URL, err = scriptedhttp.Serve("gemini server", s); err != nil {
		return nil, err
	}
	return s, nil
}

// Close stops the server at once, dropping open connections.
func (s *Server) Close() error { return s.http.Close() }

// Requests returns every generate request so far (streamed or not), in
// arrival order.
func (s *Server) Requests() []Request { return s.book.Requests() }

// Main returns the requests that are not Side, in arrival order.
func (s *Server) Main() []Request {
	var out []Request
	for _, r := range s.Requests() {
		if !r.Side {
			out = append(out, r)
		}
	}
	return out
}

// TokenCounts is how many countTokens requests arrived.
func (s *Server) TokenCounts() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.counts
}

// Unexpected lists "METHOD /path" of every request the server did not
// recognise (answered 404).
func (s *Server) Unexpected() []string { return s.book.Unexpected() }

// ServeHTTP routes the endpoints: POST /v1beta/models/MODEL:METHOD.
func (s *Server) ServeHTTP(w http.ResponseWriter, hr *http.Request) {
	model, method, ok := strings.Cut(strings.TrimPrefix(hr.URL.Path, "/v1beta/models/"), ":")
	if hr.Method != http.MethodPost || !ok || !strings.HasPrefix(hr.URL.Path, "/v1beta/models/") {
		method = ""
	}
	switch method {
	case "streamGenerateContent", "generateContent":
		body, err := scriptedhttp.ReadBody(hr)
		var req Request
		if err == nil {
			req, err = parseRequest(body)
		}
		if err != nil {
			s.book.NoteUnexpected(hr.Method + " " + hr.URL.RequestURI() + ": " + err.Error())
			writeError(w, http.StatusBadRequest, "INVALID_ARGUMENT", err.Error())
			return
		}
		req.Model, req.Stream = model, method == "streamGenerateContent"
		s.answer(w, hr, req)
	case "countTokens":
		body, _ := scriptedhttp.ReadBody(hr)
		s.mu.Lock()
		s.counts++
		s.mu.Unlock()
		scriptedhttp.WriteJSON(w, http.StatusOK, map[string]int{"totalTokens": len(body)/4 + 1})
	default:
		s.book.NoteUnexpected(hr.Method + " " + hr.URL.RequestURI())
		writeError(w, http.StatusNotFound, "NOT_FOUND", "not found: "+hr.URL.Path)
	}
}

func (s *Server) answer(w http.ResponseWriter, hr *http.Request, req Request) {
	req.Time = time.Now()
	req.Header = scriptedhttp.Redact(hr.Header)
	req = s.book.Add(func(seq int) Request { req.Seq = seq; return req })

	reply := s.script(&req)
	if !scriptedhttp.Hold(w, hr, reply.Delay, reply.Header) {
		return
	}
	if reply.Status != 0 && reply.Status != http.StatusOK {
		writeError(w, reply.Status, reply.ErrorStatus, reply.ErrorMessage)
		return
	}
	var sent bool
	if req.Stream {
		sent = streamReply(w, req.Model, reply)
	} else {
		b, err := json.Marshal(reply.chunk(req.Model, reply.parts(), true))
		if err == nil {
			w.Header().Set("Content-Type", "application/json")
			_, err = w.Write(b)
		}
		sent = err == nil
	}
	if sent {
		s.book.Update(req.Seq, func(r *Request) { r.Answered = time.Now() })
	}
}

// streamReply streams the answer, one chunk per part, the last with the
// finish reason and usage; it reports whether it was sent in full.
func streamReply(w http.ResponseWriter, model string, r Reply) bool {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	parts := r.parts()
	for i, p := range parts {
		b, err := json.Marshal(r.chunk(model, []map[string]any{p}, i == len(parts)-1))
		if err != nil {
			return false
		}
		if _, err := fmt.Fprintf(w, "data: %s\r\n\r\n", b); err != nil {
			return false
		}
		if flusher != nil {
			flusher.Flush()
		}
	}
	return true
}

// parts are the reply's content parts: its text (an empty one when it has
// neither text nor calls, as a candidate needs a part), then its calls.
func (r Reply) parts() []map[string]any {
	var out []map[string]any
	if r.Text != "" || len(r.Calls) == 0 {
		out = append(out, map[string]any{"text": r.Text})
	}
	for _, c := range r.Calls {
		args := c.Args
		if args == nil {
			args = map[string]any{}
		}
		out = append(out, map[string]any{"functionCall": map[string]any{"name": c.Name, "args": args}})
	}
	return out
}

// chunk is one GenerateContentResponse with parts; the last carries the
// finish reason and the usage.
func (r Reply) chunk(model string, parts []map[string]any, last bool) map[string]any {
	cand := map[string]any{"content": map[string]any{"role": "model", "parts": parts}, "index": 0}
	out := map[string]any{"candidates": []any{cand}, "modelVersion": model}
	if last {
		cand["finishReason"] = "STOP"
		out["usageMetadata"] = map[string]int{
			"promptTokenCount":        r.Usage.PromptTokens,
			"cachedContentTokenCount": r.Usage.CachedTokens,
			"candidatesTokenCount":    r.Usage.OutputTokens,
			"totalTokenCount":         r.Usage.PromptTokens + r.Usage.OutputTokens,
		}
	}
	return out
}

func writeError(w http.ResponseWriter, status int, code, msg string) {
	scriptedhttp.WriteJSON(w, status, map[string]any{
		"error": map[string]any{"code": status, "message": msg, "status": code},
	})
}
