package scriptedapi

import (
	"net/http"
	"strconv"
	"time"

	"github.com/flowerhq/flower/scriptedhttp"
)

// RateLimited is the reply of an API key's rate limit: HTTP 429
// rate_limit_error. retryAfter > 0 sends a retry-after header (whole
// seconds, rounded up); a non-zero reset sends the
// anthropic-ratelimit-{requests,tokens,input-tokens,output-tokens}-reset
// headers (RFC 3339), as the API does. What the harness does with each is
// in docs/DESIGN.md «Limits».
func RateLimited(retryAfter time.Duration, reset time.Time) Reply {
	h := scriptedhttp.RetryAfter(retryAfter)
	if !reset.IsZero() {
		for _, what := range []string{"requests", "tokens", "input-tokens", "output-tokens"} {
			h.Set("anthropic-ratelimit-"+what+"-limit", "50")
			h.Set("anthropic-ratelimit-"+what+"-remaining", "0")
			h.Set("anthropic-ratelimit-"+what+"-reset", reset.UTC().Format(time.RFC3339))
		}
	}
	return Reply{Status: http.StatusTooManyRequests, ErrorType: "rate_limit_error",
		ErrorMessage: "This request would exceed the rate limit for your organization of 50 requests per minute.", Header: h}
}

// UsageLimited is the reply of a subscription past its usage limit: HTTP
// 429 rate_limit_error with the unified rate-limit headers the harness
// reads (status rejected, the reset in epoch seconds, the 5-hour window as
// the representative claim).
func UsageLimited(reset time.Time) Reply {
	at := strconv.FormatInt(reset.Unix(), 10)
	h := http.Header{}
	h.Set("anthropic-ratelimit-unified-status", "rejected")
	h.Set("anthropic-ratelimit-unified-reset", at)
	h.Set("anthropic-ratelimit-unified-representative-claim", "five_hour")
	h.Set("anthropic-ratelimit-unified-5h-status", "rejected")
	h.Set("anthropic-ratelimit-unified-5h-reset", at)
	h.Set("anthropic-ratelimit-unified-5h-utilization", "1.0")
	h.Set("anthropic-ratelimit-unified-7d-status", "allowed")
	h.Set("anthropic-ratelimit-unified-7d-utilization", "0.4")
	h.Set("anthropic-ratelimit-unified-fallback", "available")
	return Reply{Status: http.StatusTooManyRequests, ErrorType: "rate_limit_error",
		ErrorMessage: "Number of request tokens has exceeded your per-minute rate limit", Header: h}
}
