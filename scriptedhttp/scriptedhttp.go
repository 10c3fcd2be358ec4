// Package scriptedhttp owns the plumbing the repo's scripted model APIs
// (scriptedapi, scriptedresp, scriptedgen) share: a listener that only
// ever binds 127.0.0.1 and its server, reading a request body, masking credentials
// before a request is recorded, the book of what was recorded, fresh ids,
// and JSON answers.
package scriptedhttp

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// Listen opens a TCP socket on 127.0.0.1 on a free port: a scripted API is
// never reachable from anywhere but the machine it runs on.
func Listen() (net.Listener, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listen: %w", err)
	}
	return ln, nil
}

// Server is one scripted API's HTTP server, on a Listen socket.
type Server struct {
	name string
	srv  *http.Server
}

// Serve serves h on a Listen socket and returns the server and its
// address as a URL (http://127.0.0.1:PORT); name says which API it is in
// Close's error.
func Serve(name string, h http.Handler) (*Server, string, error) {
	ln, err := Listen()
	if err != nil {
		return nil, "", fmt.Errorf("start %s: %w", name, err)
	}
	s := &Server{name: name, srv: &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}}
	go func() { _ = s.srv.Serve(ln) }()
	return s, "http://" + ln.Addr().String(), nil
}

// Close stops the server at once, dropping open connections.
func (s *Server) Close() error {
	if err := s.srv.Close(); err != nil {
		return fmt.Errorf("close %s: %w", s.name, err)
	}
	return nil
}

// RetryAfter is a header that says retry-after in whole seconds, rounded
// up; empty when d is not positive.
func RetryAfter(d time.Duration) http.Header {
	h := http.Header{}
	if d > 0 {
		h.Set("retry-after", strconv.Itoa(int((d+time.Second-1)/time.Second)))
	}
	return h
}

// ReadBody reads a request's whole body.
func ReadBody(hr *http.Request) ([]byte, error) {
	var b bytes.Buffer
	if _, err := b.ReadFrom(hr.Body); err != nil {
		return nil, fmt.Errorf("read body: %w", err)
	}
	return b.Bytes(), nil
}

// Redact copies h with credentials masked, so recorded requests can be
// logged freely.
func Redact(h http.Header) http.Header {
	out := h.Clone()
	for _, k := range []string{"X-Api-Key", "Authorization", "X-Goog-Api-Key"} {
		if out.Get(k) != "" {
			out.Set(k, "REDACTED")
		}
	}
	return out
}

// NewID is prefix followed by 24 random hex digits.
func NewID(prefix string) string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

// WriteJSON answers v as JSON with the given status.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// Nth steps through items: the n-th call returns items[n-1], every later
// call the last item. It is safe for concurrent use; items must not be
// empty.
func Nth[T any](items []T) func() T {
	next := make(chan int, 1)
	next <- 0
	return func() T {
		i := <-next
		next <- i + 1
		return items[min(i, len(items)-1)]
	}
}

// Hold waits out a scripted reply's delay before it is written, and adds
// the reply's own headers. It reports false when the client went away
// meanwhile: then there is nothing to write.
func Hold(w http.ResponseWriter, hr *http.Request, delay time.Duration, header http.Header) bool {
	if delay > 0 {
		t := time.NewTimer(delay)
		select {
		case <-t.C:
		case <-hr.Context().Done():
			t.Stop()
			return false
		}
	}
	for k, vs := range header {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	return true
}

// Book is what a scripted API recorded: its requests in arrival order, and
// what it did not recognise. Its zero value is ready; it is safe for
// concurrent use.
type Book[R any] struct {
	mu         sync.Mutex
	requests   []R
	unexpected []string
}

// Add records r, given its sequence number (from 1) by number.
func (b *Book[R]) Add(number func(seq int) R) R {
	b.mu.Lock()
	defer b.mu.Unlock()
	r := number(len(b.requests) + 1)
	b.requests = append(b.requests, r)
	return r
}

// Update changes the request of seq.
func (b *Book[R]) Update(seq int, change func(*R)) {
	b.mu.Lock()
	defer b.mu.Unlock()
	change(&b.requests[seq-1])
}

// Requests are the requests so far, in arrival order.
func (b *Book[R]) Requests() []R {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]R(nil), b.requests...)
}

// NoteUnexpected records "METHOD /path" (and why) of a request not
// recognised.
func (b *Book[R]) NoteUnexpected(what string) {
	b.mu.Lock()
	b.unexpected = append(b.unexpected, what)
	b.mu.Unlock()
}

// Unexpected lists what NoteUnexpected recorded.
func (b *Book[R]) Unexpected() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.unexpected...)
}
