package supervisor

import (
	"testing"
	"time"

	"github.com/flowerhq/flower/front"
	"github.com/flowerhq/flower/transcript"
)

// A retry's line says what the harness said and no more: Claude Code's
// delay, count and status, or Codex's own words with none of them.
func TestRetryLine(t *testing.T) {
	for _, tt := range []struct {
		f    front.Retrying
		want string
	}{
		{front.Retrying{Retry: transcript.Retry{Attempt: 3, MaxRetries: 10, Delay: 2300 * time.Millisecond, Status: 529, Error: "overloaded"}},
			"the harness asks the API again in 2.3 s (retry 3 of 10): HTTP 529 overloaded"},
		{front.Retrying{Retry: transcript.Retry{Attempt: 1, MaxRetries: 10, Delay: 545 * time.Millisecond}},
			"the harness asks the API again in 0.5 s (retry 1 of 10): no answer from the API (a connection error)"},
		{front.Retrying{Retry: transcript.Retry{Error: "Reconnecting... waiting for network"}},
			"the harness asks the API again: no answer from the API (Reconnecting... waiting for network)"},
		{front.Retrying{Retry: transcript.Retry{Status: 500}}, "the harness asks the API again: HTTP 500"},
		{front.Retrying{Retry: transcript.Retry{Attempt: 2}, Blind: true}, "the harness asks the API again (retry 2; its screen says why)"},
	} {
		if got := retryLine(tt.f); got != tt.want {
			t.Errorf("retryLine(%+v) = %q\nwant %q", tt.f, got, tt.want)
		}
	}
}
