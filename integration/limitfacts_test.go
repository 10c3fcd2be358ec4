package integration_test

import (
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flowerhq/flower/scriptedapi"
	"github.com/flowerhq/flower/transcript"
)

// TestLimitFacts re-verifies DESIGN.md «Limits» on the real harness: what it
// does and prints, in stream-json mode, when the API answers a rate limit,
// a subscription's usage limit, or 529 overloaded, and that the next user
// line continues the same session. Each row's main thread fails until the
// harness gives up, then answers; CLAUDE_CODE_MAX_RETRIES=1 keeps the
// harness's own retries to one.
func TestLimitFacts(t *testing.T) {
	t.Parallel()
	// oauth makes the harness a subscriber's: only then does it read the
	// unified headers. It still sends nothing but to the scripted server.
	oauth := []string{"ANTHROPIC_API_KEY=", "CLAUDE_CODE_OAUTH_TOKEN=sk-ant-oat01-scripted"}
	const rateText = "API Error: Request rejected (429) · This request would exceed the rate limit for your organization of 50 requests per minute."
	rows := []struct {
		name  string
		reply func() scriptedapi.Reply
		env   []string
		// retries is how many api_retry lines the harness writes;
		// minDelay/maxDelay bound the announced retry_delay_ms.
		retries            int
		minDelay, maxDelay time.Duration
		status             int    // error_status of the api_retry lines
		text               string // the result's text (prefix)
		limit              transcript.LimitKind
		rateLimitEvent     bool // a rate_limit_event "rejected" precedes the error
	}{
		{name: "429 plain", reply: func() scriptedapi.Reply { return scriptedapi.RateLimited(0, time.Time{}) },
			retries: 1, minDelay: 370 * time.Millisecond, maxDelay: 650 * time.Millisecond, status: 429, text: rateText, limit: transcript.LimitRate},
		{name: "429 retry-after 1s", reply: func() scriptedapi.Reply { return scriptedapi.RateLimited(time.Second, time.Time{}) },
			retries: 1, minDelay: time.Second, maxDelay: 1250 * time.Millisecond, status: 429, text: rateText, limit: transcript.LimitRate},
		{name: "429 retry-after 61s", reply: func() scriptedapi.Reply { return scriptedapi.RateLimited(61*time.Second, time.Time{}) },
			retries: 0, text: rateText, limit: transcript.LimitRate},
		{name: "429 reset headers 30s", reply: func() scriptedapi.Reply { return scriptedapi.RateLimited(0, time.Now().Add(30*time.Second)) },
			retries: 1, minDelay: 370 * time.Millisecond, maxDelay: 650 * time.Millisecond, status: 429, text: rateText, limit: transcript.LimitRate},
		{name: "usage limit api key", reply: func() scriptedapi.Reply { return scriptedapi.UsageLimited(time.Now().Add(3 * time.Hour)) },
			retries: 1, minDelay: 370 * time.Millisecond, maxDelay: 650 * time.Millisecond, status: 429,
			text: "API Error: Request rejected (429) · ", limit: transcript.LimitRate},
		{name: "usage limit subscription", reply: func() scriptedapi.Reply { return scriptedapi.UsageLimited(time.Now().Add(3 * time.Hour)) },
			env: oauth, retries: 0, text: "You've hit your 5-hour limit · resets ", limit: transcript.LimitUsage, rateLimitEvent: true},
		{name: "529", reply: scriptedapi.Overloaded,
			retries: 1, minDelay: 370 * time.Millisecond, maxDelay: 650 * time.Millisecond, status: 529,
			text: "API Error: 529 Overloaded. "},
	}
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			t.Parallel()
			var failing atomic.Bool
			failing.Store(true)
			reply := row.reply()
			srv := startServer(t, func(r *scriptedapi.Request) scriptedapi.Reply {
				if r.Kind != scriptedapi.KindMain {
					return scriptedapi.Harmless(r)
				}
				if failing.Load() && !strings.Contains(r.LastUserText, "second question") {
					return reply
				}
				return scriptedapi.Reply{Text: "second answer", Usage: scriptedapi.Usage{InputTokens: 10, OutputTokens: 2}}
			})
			h := startHarness(t, srv, append([]string{"CLAUDE_CODE_MAX_RETRIES=1"}, row.env...))
			lines := h.turn("first question")
			reset := time.Now()

			retries := filter(lines, isType("system/api_retry"))
			if len(retries) != row.retries {
				t.Fatalf("%d api_retry lines, want %d", len(retries), row.retries)
			}
			reqs := srv.Requests()
			if len(reqs) != row.retries+1 {
				t.Fatalf("%d requests, want %d (one and its retries)", len(reqs), row.retries+1)
			}
			for i, l := range retries {
				d := time.Duration(l.Get("retry_delay_ms").Int()) * time.Millisecond
				if d < row.minDelay || d > row.maxDelay || int(l.Get("error_status").Int()) != row.status {
					t.Errorf("api_retry %s: delay %s status %d, want %s..%s and %d", l.Raw, d, l.Get("error_status").Int(), row.minDelay, row.maxDelay, row.status)
				}
				// The retry comes after the announced wait.
				if gap := reqs[i+1].Time.Sub(reqs[i].Time); gap < d-50*time.Millisecond {
					t.Errorf("retry %d came %s after the request, before the announced %s", i+1, gap, d)
				}
			}
			events := filter(lines, isType("rate_limit_event"))
			if row.rateLimitEvent != (len(events) == 1 && events[0].Get("rate_limit_info.status").String() == "rejected") {
				t.Errorf("%d rate_limit_event lines; want one rejected: %v", len(events), row.rateLimitEvent)
				for _, e := range events {
					t.Log(e.Raw)
				}
			}

			asst := filter(lines, isType("assistant"))
			if len(asst) != 1 || asst[0].Get("message.model").String() != "<synthetic>" || !asst[0].Get("is_api_error_message").Bool() {
				t.Fatalf("assistant lines %v, want one synthetic API error", texts(asst))
			}
			res := lines[len(lines)-1]
			if res.Get("subtype").String() != "success" || !res.Get("is_error").Bool() || res.Get("terminal_reason").String() != "api_error" {
				t.Errorf("result subtype %q is_error %v terminal_reason %q, want success, true, api_error",
					res.Get("subtype"), res.Get("is_error"), res.Get("terminal_reason"))
			}
			wantStatus := int64(row.status)
			if row.limit != "" {
				wantStatus = 429
			}
			if res.Get("api_error_status").Int() != wantStatus || !strings.HasPrefix(res.Get("result").String(), row.text) {
				t.Errorf("result api_error_status %d text %q, want %d and %q…", res.Get("api_error_status").Int(), res.Get("result"), wantStatus, row.text)
			}
			if txt := texts(asst); txt[0] != res.Get("result").String() {
				t.Errorf("assistant text %q, result text %q: want the same", txt[0], res.Get("result"))
			}

			// What transcript.LimitOf makes of each record of the turn.
			for _, l := range append(append(events, asst...), res) {
				ev, err := transcript.Decode([]byte(l.Raw))
				if err != nil {
					t.Fatal(err)
				}
				lim, ok := transcript.LimitOf(&ev, reset)
				if ok != (row.limit != "") || lim.Kind != row.limit {
					t.Errorf("LimitOf(%s) = %+v, %v; want kind %q", l.typ(), lim, ok, row.limit)
				}
				if row.limit == transcript.LimitUsage {
					want := time.Now().Add(3 * time.Hour)
					if lim.ResetAt.Before(want.Add(-2*time.Minute)) || lim.ResetAt.After(want.Add(2*time.Minute)) {
						t.Errorf("LimitOf(%s).ResetAt %s, want about %s", l.typ(), lim.ResetAt, want)
					}
				} else if !lim.ResetAt.IsZero() {
					t.Errorf("LimitOf(%s).ResetAt %s, want none shown", l.typ(), lim.ResetAt)
				}
			}

			// The session stays alive, and the next user line continues it.
			if !h.running() {
				t.Fatal("harness exited after the limit")
			}
			failing.Store(false)
			next := h.turn("second question")
			if r := next[len(next)-1]; r.Get("is_error").Bool() || r.Get("result").String() != "second answer" {
				t.Errorf("next turn's result %s", r.Raw)
			}
			reqs = srv.Requests()
			last := reqs[len(reqs)-1]
			if last.SessionID != reqs[0].SessionID || !strings.Contains(last.LastUserText, "second question") {
				t.Errorf("next request session %s, first %s: want the same session", last.SessionID, reqs[0].SessionID)
			}
			// The failed turn's user line is kept; the synthetic error is
			// not sent to the API.
			if !strings.Contains(last.AllText, "first question") || strings.Contains(last.AllText, res.Get("result").String()) {
				t.Errorf("next request's conversation (%d messages) lacks the first question or carries the error: %s", last.NumMessages, clip(last.AllText, 400))
			}
		})
	}
}

// TestLimitWatchdog: with CLAUDE_CODE_RETRY_WATCHDOG=1 the harness waits a
// subscription's usage limit out by itself in stream-json mode, as the
// interactive screen does ("continuing automatically at …"): one api_retry
// line announcing a wait until the reset, then the same request again, and
// the turn succeeds (DESIGN.md «Limits»).
func TestLimitWatchdog(t *testing.T) {
	t.Parallel()
	// The reset is set by the first request, 3–4 s after it (whole seconds,
	// as the header carries them), however long the harness took to start.
	var mu sync.Mutex
	var reset time.Time
	srv := startServer(t, func(r *scriptedapi.Request) scriptedapi.Reply {
		if r.Kind != scriptedapi.KindMain {
			return scriptedapi.Harmless(r)
		}
		mu.Lock()
		defer mu.Unlock()
		if reset.IsZero() {
			reset = r.Time.Add(4 * time.Second).Truncate(time.Second)
		}
		if time.Now().Before(reset) {
			return scriptedapi.UsageLimited(reset)
		}
		return scriptedapi.Reply{Text: "after the wait", Usage: scriptedapi.Usage{InputTokens: 10, OutputTokens: 2}}
	})
	h := startHarness(t, srv, []string{"ANTHROPIC_API_KEY=", "CLAUDE_CODE_OAUTH_TOKEN=sk-ant-oat01-scripted", "CLAUDE_CODE_RETRY_WATCHDOG=1"})
	lines := h.turn("first question")
	retries := filter(lines, isType("system/api_retry"))
	if len(retries) != 1 {
		t.Fatalf("%d api_retry lines, want 1", len(retries))
	}
	r := retries[0]
	delay := time.Duration(r.Get("retry_delay_ms").Int()) * time.Millisecond
	if r.Get("error_status").Int() != 429 || r.Get("max_retries").Int() != 300 {
		t.Errorf("api_retry %s: want status 429, max_retries 300", r.Raw)
	}
	reqs := srv.Requests()
	mu.Lock()
	defer mu.Unlock()
	if want := reset.Sub(reqs[0].Time); delay < want-1500*time.Millisecond || delay > want+1500*time.Millisecond {
		t.Errorf("announced delay %s, the reset %s after the request", delay, want)
	}
	if len(reqs) != 2 || reqs[1].Time.Before(reset) || reqs[1].SessionID != reqs[0].SessionID {
		t.Errorf("%d requests; the retry at %s, the reset %s: want one retry after the reset, same session", len(reqs), reqs[len(reqs)-1].Time, reset)
	}
	res := lines[len(lines)-1]
	if res.Get("is_error").Bool() || res.Get("result").String() != "after the wait" {
		t.Errorf("result %s, want the answer after the wait", res.Raw)
	}
	if n := len(filter(lines, isType("rate_limit_event"))); n < 1 {
		t.Errorf("no rate_limit_event line")
	}
}
