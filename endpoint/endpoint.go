// Package endpoint tells whether an API endpoint can be reached at all: a
// name that does not resolve and a host that refuses the connection are
// certain, and worth ending a run on at once; anything slower (a timeout,
// a network that drops packets) is not, and is left to the harness's own
// retries (docs/DESIGN.md «Unreachable endpoint»).
package endpoint

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"syscall"
	"time"
)

// Timeout bounds one check: past it the endpoint is not known to be
// unreachable, only slow.
const Timeout = 3 * time.Second

// UnreachableError is an endpoint that cannot be reached now, for a reason
// no retry mends soon.
type UnreachableError struct {
	URL string // the endpoint, as the harness was given it
	Why string // "refused the connection", "does not resolve", …
	Fix string // what to check, in a few words
}

func (e *UnreachableError) Error() string {
	msg := fmt.Sprintf("the API endpoint %s %s, and no request of this run has gone through", e.URL, e.Why)
	if e.Fix != "" {
		msg += ": " + e.Fix
	}
	return msg
}

// Check dials rawURL's host (through the proxy env names for its scheme,
// as the harness would) and returns an *UnreachableError when that is
// certain to fail; nil when it answered, or when only a timeout or an
// error of another kind says anything. env is the harness's environment.
// Nothing is sent over the connection.
func Check(ctx context.Context, rawURL string, env []string) error {
	u, err := url.Parse(rawURL)
	if err != nil || u.Host == "" {
		return &UnreachableError{URL: rawURL, Why: "is not a URL"}
	}
	addr, ok := dialAddr(u, env)
	if !ok {
		return nil // a proxy flower cannot judge stands between
	}
	ctx, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()
	conn, err := (&net.Dialer{}).DialContext(ctx, "tcp", addr)
	if err == nil {
		conn.Close()
		return nil
	}
	if why := certain(err); why != "" {
		return &UnreachableError{URL: rawURL, Why: why}
	}
	return nil
}

// certain says why err, a dial's, is sure to repeat; "" when it is not.
func certain(err error) string {
	var dns *net.DNSError
	switch {
	case errors.As(err, &dns) && dns.IsNotFound:
		return "does not resolve (" + dns.Name + ": no such host)"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "refused the connection"
	case errors.Is(err, syscall.ENETUNREACH), errors.Is(err, syscall.EHOSTUNREACH):
		return "cannot be reached (no route to its host)"
	}
	return ""
}

// dialAddr is the host:port a connection to u goes to: u's own, or its
// proxy's when env names one for u's scheme. ok is false when NO_PROXY is
// set, whose rules flower does not second-guess.
func dialAddr(u *url.URL, env []string) (string, bool) {
	get := func(name string) string {
		for _, n := range []string{name, strings.ToLower(name)} {
			for _, kv := range env {
				if v, ok := strings.CutPrefix(kv, n+"="); ok && v != "" {
					return v
				}
			}
		}
		return ""
	}
	proxy := get("ALL_PROXY")
	if p := get(strings.ToUpper(u.Scheme) + "_PROXY"); p != "" {
		proxy = p
	}
	if proxy != "" {
		if get("NO_PROXY") != "" {
			return "", false
		}
		p, err := url.Parse(proxy)
		if err != nil || p.Host == "" {
			return "", false
		}
		u = p
	}
	port := u.Port()
	if port == "" {
		port = "443"
		if u.Scheme == "http" {
			port = "80"
		}
	}
	return net.JoinHostPort(u.Hostname(), port), true
}
