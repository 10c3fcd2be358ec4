package endpoint

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
)

// closedPort is a loopback port nothing listens on: one a listener held a
// moment ago.
func closedPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

func TestCheck(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	open := "http://" + ln.Addr().String()
	closed := "http://" + closedPort(t)
	for _, tt := range []struct {
		name, url string
		env       []string
		why       string // "" for nil
	}{
		{"listening", open, nil, ""},
		{"refused", closed, nil, "refused the connection"},
		{"not a URL", "127.0.0.1", nil, "is not a URL"},
		{"a listening proxy for a refused host", closed, []string{"HTTP_PROXY=" + open}, ""},
		{"a refused proxy for a listening host", open, []string{"http_proxy=" + closed}, "refused the connection"},
		{"ALL_PROXY", open, []string{"ALL_PROXY=" + closed}, "refused the connection"},
		{"the scheme's proxy before ALL_PROXY", open, []string{"ALL_PROXY=" + closed, "HTTP_PROXY=" + open}, ""},
		{"NO_PROXY is not second-guessed", open, []string{"HTTP_PROXY=" + closed, "NO_PROXY=localhost"}, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := Check(context.Background(), tt.url, tt.env)
			var ue *UnreachableError
			switch {
			case tt.why == "" && err != nil:
				t.Errorf("Check = %v, want nil", err)
			case tt.why != "" && (!errors.As(err, &ue) || !strings.Contains(ue.Why, tt.why)):
				t.Errorf("Check = %v, want %q", err, tt.why)
			case ue != nil && (ue.URL != tt.url || !strings.Contains(err.Error(), tt.url)):
				t.Errorf("the error names %q, not %s: %v", ue.URL, tt.url, err)
			}
		})
	}
}

func TestUnreachableErrorSaysTheFix(t *testing.T) {
	err := &UnreachableError{URL: "http://127.0.0.1:9", Why: "refused the connection", Fix: "check ANTHROPIC_BASE_URL"}
	if got, want := err.Error(), "the API endpoint http://127.0.0.1:9 refused the connection, and no request of this run has gone through: check ANTHROPIC_BASE_URL"; got != want {
		t.Errorf("got %q\nwant %q", got, want)
	}
}

// A name that does not resolve is certain; a timeout is not. (Built, not
// looked up: a test sends nothing past loopback, a DNS query included.)
func TestCertain(t *testing.T) {
	for _, tt := range []struct {
		err  error
		want string
	}{
		{&net.OpError{Op: "dial", Err: &net.DNSError{Name: "api.example", Err: "no such host", IsNotFound: true}}, "does not resolve (api.example: no such host)"},
		{&net.OpError{Op: "dial", Err: &net.DNSError{Name: "api.example", Err: "i/o timeout", IsTimeout: true}}, ""},
		{context.DeadlineExceeded, ""},
	} {
		if got := certain(tt.err); got != tt.want {
			t.Errorf("certain(%v) = %q, want %q", tt.err, got, tt.want)
		}
	}
}
