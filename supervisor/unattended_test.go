package supervisor

import (
	"testing"
	"time"

	"github.com/flowerhq/flower/front"
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

func TestSpendMeter(t *testing.T) {
	var m spendMeter
	u := transcript.Usage{InputTokens: 1000, CacheCreationInputTokens: 2000, CacheReadInputTokens: 100000, OutputTokens: 500}
	r := front.Round{MainThread: true, MessageID: "m1", Model: "claude-sonnet-4-5", Usage: u}
	m.observe(r, "")
	m.observe(r, "") // the same response's second line
	want := (1000*3 + 2000*3*1.25 + 100000*3*0.1 + 500*15) / 1e6
	if d := m.turn - want; d > 1e-9 || d < -1e-9 {
		t.Errorf("estimate $%v, want $%v (one response, counted once)", m.turn, want)
	}
	m.observe(front.Round{MainThread: true, MessageID: "m2", Synthetic: true, Usage: transcript.Usage{InputTokens: 5000}}, "")
	if d := m.turn - want; d > 1e-9 || d < -1e-9 {
		t.Errorf("a synthetic reply moved the estimate to $%v", m.turn)
	}
	m.ended(0) // a result with no cost: the estimate goes on counting
	if m.turn != 0 || m.seen != nil || m.running() != want {
		t.Errorf("after a result without cost: %+v, running $%v; want the estimate $%v carried", m, m.running(), want)
	}
	r.MessageID, r.MainThread = "m3", false // a subagent's response counts too
	m.observe(r, "")
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
