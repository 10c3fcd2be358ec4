package supervisor

import (
	"strings"
	"testing"
	"time"

	"github.com/flowerhq/flower/manifest"
	"github.com/flowerhq/flower/transcript"
)

func TestWaitUntil(t *testing.T) {
	now := time.Date(2026, 12, 1, 11, 0, 0, 0, time.UTC)
	base := 10 * time.Second
	rows := []struct {
		name string
		l    transcript.Limit
		n    int
		want time.Time
	}{
		{"usage limit: its reset, with the slack", transcript.Limit{Kind: transcript.LimitUsage, ResetAt: now.Add(3 * time.Second)}, 1, now.Add(3*time.Second + resetSlack)},
		{"reset past: the backoff", transcript.Limit{Kind: transcript.LimitUsage, ResetAt: now.Add(-time.Second)}, 1, now.Add(base)},
		{"rate limit: the backoff", transcript.Limit{Kind: transcript.LimitRate}, 1, now.Add(base)},
		{"third in a row: doubled twice", transcript.Limit{Kind: transcript.LimitRate}, 3, now.Add(4 * base)},
		{"a longer retry-after wins", transcript.Limit{Kind: transcript.LimitRate, RetryAfter: 25 * time.Second}, 1, now.Add(25 * time.Second)},
		{"a shorter one does not", transcript.Limit{Kind: transcript.LimitRate, RetryAfter: time.Second}, 2, now.Add(2 * base)},
		{"capped", transcript.Limit{Kind: transcript.LimitRate}, 40, now.Add(MaxLimitBackoff)},
	}
	for _, r := range rows {
		if got := waitUntil(r.l, r.n, base, now); !got.Equal(r.want) {
			t.Errorf("%s: waitUntil = %s, want %s", r.name, got, r.want)
		}
	}
	if got := backoff(1, 0); got != DefaultLimitBackoff {
		t.Errorf("backoff with no base = %s, want %s", got, DefaultLimitBackoff)
	}
}

// decode is one stream-json line as the engine reads it.
func decode(t *testing.T, line string) *transcript.Event {
	t.Helper()
	ev, err := transcript.Decode([]byte(line))
	if err != nil {
		t.Fatal(err)
	}
	return &ev
}

func TestLimitWatch(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	reset := now.Add(3 * time.Second)
	var w limitWatch
	// A subscription's usage limit: the rate_limit_event (exact reset),
	// the synthetic line, the result whose text names the minute.
	w.observe(decode(t, `{"type":"rate_limit_event","rate_limit_info":{"status":"rejected","resetsAt":1800000003,"rateLimitType":"five_hour"}}`), now)
	w.observe(decode(t, `{"type":"assistant","message":{"id":"m1","model":"<synthetic>","role":"assistant","content":[{"type":"text","text":"You've hit your 5-hour limit"}]},"api_error_status":429,"api_error":"usage_limit_reached","is_api_error_message":true,"error":"rate_limit"}`), now)
	l, ok := w.ended(decode(t, `{"type":"result","subtype":"success","is_error":true,"api_error_status":429,"api_error":"usage_limit_reached","result":"You've hit your 5-hour limit · resets 11:30am (UTC)","session_id":"s"}`), now)
	if !ok || l.Kind != transcript.LimitUsage || !l.ResetAt.Equal(reset) || l.Window != "five_hour" {
		t.Fatalf("ended = %+v, %v; want the usage limit with the event's exact reset %s", l, ok, reset)
	}
	if w.saw || w.retryAfter != 0 {
		t.Errorf("the watch keeps the ended turn's limit: %+v", w)
	}
	// A rate limit: the harness's api_retry announced 3 s.
	w.observe(decode(t, `{"type":"system","subtype":"api_retry","attempt":1,"max_retries":1,"retry_delay_ms":3120,"error_status":429,"error":"rate_limit"}`), now)
	l, ok = w.ended(decode(t, `{"type":"result","subtype":"success","is_error":true,"api_error_status":429,"result":"API Error: Request rejected (429)","session_id":"s"}`), now)
	if !ok || l.Kind != transcript.LimitRate || !l.ResetAt.IsZero() || l.RetryAfter != 3120*time.Millisecond {
		t.Fatalf("ended = %+v, %v; want a rate limit, retry-after 3.12s", l, ok)
	}
	// A 529 after an overload retry is no limit, and a turn that ends
	// without one ends the row.
	w.row, w.waited = 2, time.Minute
	w.observe(decode(t, `{"type":"system","subtype":"api_retry","attempt":1,"max_retries":1,"retry_delay_ms":500,"error_status":529,"error":"overloaded"}`), now)
	if _, ok := w.ended(decode(t, `{"type":"result","subtype":"success","is_error":true,"api_error_status":529,"result":"API Error: 529 Overloaded.","session_id":"s"}`), now); ok {
		t.Error("a 529 taken for a limit")
	}
	if w.row != 0 || w.waited != 0 {
		t.Errorf("row %d, waited %s after a turn without a limit; want 0, 0", w.row, w.waited)
	}
}

func TestSpendMeter(t *testing.T) {
	var m spendMeter
	line := `{"type":"assistant","message":{"id":"m1","model":"claude-sonnet-4-5","role":"assistant","content":[{"type":"text","text":"hi"}],"usage":{"input_tokens":1000,"cache_creation_input_tokens":2000,"cache_read_input_tokens":100000,"output_tokens":500}}}`
	m.observe(decode(t, line), "")
	m.observe(decode(t, line), "") // the same response's second line
	want := (1000*3 + 2000*3*1.25 + 100000*3*0.1 + 500*15) / 1e6
	if d := m.turn - want; d > 1e-9 || d < -1e-9 {
		t.Errorf("estimate $%v, want $%v (one response, counted once)", m.turn, want)
	}
	m.observe(decode(t, `{"type":"assistant","message":{"id":"m2","model":"<synthetic>","role":"assistant","content":[{"type":"text","text":"API Error"}],"usage":{"input_tokens":5000,"output_tokens":0}}}`), "")
	if d := m.turn - want; d > 1e-9 || d < -1e-9 {
		t.Errorf("a synthetic line moved the estimate to $%v", m.turn)
	}
	m.ended(0) // a result with no cost: the estimate goes on counting
	if m.turn != 0 || m.seen != nil || m.running() != want {
		t.Errorf("after a result without cost: %+v, running $%v; want the estimate $%v carried", m, m.running(), want)
	}
	m.observe(decode(t, strings.Replace(line, `"m1"`, `"m3"`, 1)), "")
	if r := m.running(); r < 2*want-1e-9 || r > 2*want+1e-9 {
		t.Errorf("running $%v after a second response, want $%v", r, 2*want)
	}
	m.ended(0.5) // the harness's figure replaces every estimate
	if m.running() != 0 || m.total != 0.5 {
		t.Errorf("after a result with cost: %+v", m)
	}
	for model, p := range map[string]price{"claude-opus-4-1": {15, 75}, "claude-opus-4-5-20251101": {5, 25},
		"claude-haiku-4-5": {1, 5}, "claude-3-5-haiku-latest": {0.8, 4}, "claude-sonnet-4-5": {3, 15}, "something-else": {3, 15}} {
		if got := priceOf(model); got != p {
			t.Errorf("priceOf(%s) = %v, want %v", model, got, p)
		}
	}
}

func TestStepBounds(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	b := stepBounds{budget: 1, deadline: now.Add(time.Minute)}
	for _, r := range []struct {
		spent float64
		at    time.Time
		want  string
	}{
		{0.99, now, ""},
		{1, now, manifest.ReasonBudget},
		{2, now.Add(time.Hour), manifest.ReasonBudget},
		{0.5, now.Add(time.Minute), manifest.ReasonDeadline},
	} {
		if got := b.reached(r.spent, r.at); got != r.want {
			t.Errorf("reached($%v, %s) = %q, want %q", r.spent, r.at, got, r.want)
		}
	}
	if got := (stepBounds{}).reached(1e9, now.Add(1e6*time.Hour)); got != "" {
		t.Errorf("no bounds, yet %q reached", got)
	}
}

// On a front whose turns a person starts, a limit the session met is told
// once (its reset for the terminal's title), and no wait starts.
func TestLimitShownOutsideTurns(t *testing.T) {
	r := newMemRun(t, nil, nil)
	r.front.PersonTypes = true
	rt := r.runtime(Options{Handoff: window(200_000)})
	st := &manifest.StepResult{Name: "s"}
	gen := st.BeginGeneration("sess", time.Now())
	s := &stepRun{rt: rt, st: st, log: rt.log}
	a := &attemptRun{stepRun: s, gen: gen, log: rt.log}
	now := time.Unix(1_800_000_000, 0)
	limited := `{"type":"assistant","sessionId":"sess","message":{"id":"m1","model":"<synthetic>","role":"assistant","content":[{"type":"text","text":"You've hit your 5-hour limit · resets 12:05pm (UTC)"}]},"apiErrorStatus":429,"apiError":"usage_limit_reached","apiErrorParams":{"rate_limit_info":{"status":"rejected","resetsAt":1800000300,"rateLimitType":"five_hour"}},"isApiErrorMessage":true}`
	a.unattendedRecord(decode(t, limited))
	a.unattendedRecord(decode(t, limited)) // the same limit, told once
	var shown []Event
	for _, ev := range r.events {
		if ev.Kind == KindLimitWait {
			shown = append(shown, ev)
		}
	}
	if len(shown) != 1 || shown[0].Phase != "shown" || shown[0].Limit != "usage_limit" || shown[0].ResetAt == nil || !shown[0].ResetAt.Equal(now.Add(5*time.Minute)) {
		t.Fatalf("limit events %+v; want one shown usage limit resetting at %s", shown, now.Add(5*time.Minute))
	}
	if _, _, ok := a.unattendedResult(decode(t, `{"type":"result","subtype":"success","is_error":true,"api_error_status":429,"api_error":"usage_limit_reached","result":"You've hit your 5-hour limit · resets 12:05pm (UTC)"}`)); ok || a.lim.wait != nil {
		t.Error("a wait started on a front whose turns a person starts")
	}
}
