package transcript

import (
	"regexp"
	"strings"
	"time"

	"github.com/tidwall/gjson"
)

// LimitKind says which limit ended a turn (DESIGN.md «Limits»).
type LimitKind string

// The limits LimitOf recognises.
const (
	// LimitRate is an API key's rate limit: HTTP 429 rate_limit_error. The
	// harness retried it itself and gave up; what it prints carries no
	// reset time (it reads retry-after but does not show it).
	LimitRate LimitKind = "rate_limit"
	// LimitUsage is a subscription's usage limit: the unified rate-limit
	// headers said "rejected". The harness does not retry it and prints
	// its reset ("You've hit your 5-hour limit · resets 12:04pm (UTC)").
	LimitUsage LimitKind = "usage_limit"
	// LimitNetwork is no connection to the API at all: the harness retried
	// a request that got no HTTP answer and gave up (api_error
	// "connection_failed": refused, reset, timed out, a name that did not
	// resolve). Like a limit, it passes with time: a network that drops at
	// night must not end the job.
	LimitNetwork LimitKind = "network"
)

// Limit is what the harness showed of a limit that ended a turn.
type Limit struct {
	Kind LimitKind
	// ResetAt is when the limit lifts, as the harness said; zero when it
	// did not say (a rate limit, always).
	ResetAt time.Time
	// RetryAfter is the wait the harness last announced in an api_retry
	// line for this limit; zero when it announced none. Only
	// RetryAfterOf reads it: a result or an assistant line carries none.
	RetryAfter time.Duration
	// Window is the usage limit's window as the harness names it
	// (five_hour, seven_day, …); empty for a rate limit.
	Window string
	// Message is the harness's own text for it.
	Message string
}

// LimitOf reports whether ev says a turn ended on a limit, and what it
// says of the reset. It reads the three records the harness writes for one
// on stdout, and the assistant line of an interactive session's transcript
// file (DESIGN.md «Limits»):
//
//   - a rate_limit_event line with status "rejected" (its resetsAt, epoch
//     seconds);
//   - the synthetic assistant line with api_error_status 429 (for a usage
//     limit, api_error "usage_limit_reached" and
//     api_error_params.rate_limit_info.resetsAt);
//   - the turn's result with api_error_status 429; for a usage limit its
//     text says "resets 12:04pm (Europe/Paris)" and now places that clock
//     time on the calendar (the next such time at or after now).
//
// A 529 overloaded, a 500, or any other record is not a limit. A
// rate_limit_event with status "allowed" is not one either. ev may be any
// decoded record; only its Raw is read.
func LimitOf(ev *Event, now time.Time) (Limit, bool) {
	if !ev.mayBe("rate_limit_event", "") && !ev.mayBe("assistant", "") && !ev.mayBe("result", "") {
		return Limit{}, false
	}
	if len(ev.Raw) == 0 || !gjson.ValidBytes(ev.Raw) {
		return Limit{}, false
	}
	root := gjson.ParseBytes(ev.Raw)
	switch root.Get("type").String() {
	case "rate_limit_event":
		info := root.Get("rate_limit_info")
		if info.Get("status").String() != "rejected" {
			return Limit{}, false
		}
		return Limit{Kind: LimitUsage, ResetAt: epoch(info.Get("resetsAt")), Window: info.Get("rateLimitType").String()}, true
	case "assistant":
		// stdout spells the fields api_error_*, an interactive session's
		// transcript file apiError*.
		if either(root, "api_error", "apiError").String() == "connection_failed" {
			return Limit{Kind: LimitNetwork, Message: messageText(root.Get("message.content"))}, true
		}
		if either(root, "api_error_status", "apiErrorStatus").Int() != 429 {
			return Limit{}, false
		}
		l := Limit{Kind: LimitRate, Message: messageText(root.Get("message.content"))}
		if either(root, "api_error", "apiError").String() == "usage_limit_reached" {
			info := either(root, "api_error_params", "apiErrorParams").Get("rate_limit_info")
			l.Kind, l.ResetAt, l.Window = LimitUsage, epoch(info.Get("resetsAt")), info.Get("rateLimitType").String()
			if l.ResetAt.IsZero() {
				l.ResetAt, _ = ResetFromText(l.Message, now)
			}
		}
		return l, true
	case "result":
		if root.Get("api_error").String() == "connection_failed" {
			return Limit{Kind: LimitNetwork, Message: root.Get("result").String()}, true
		}
		if root.Get("api_error_status").Int() != 429 {
			return Limit{}, false
		}
		l := Limit{Kind: LimitRate, Message: root.Get("result").String()}
		if root.Get("api_error").String() == "usage_limit_reached" {
			l.Kind = LimitUsage
			l.ResetAt, _ = ResetFromText(l.Message, now)
		}
		return l, true
	}
	return Limit{}, false
}

// RetryAfterOf reads an api_retry system line: the wait the harness
// announced before its next attempt, and whether the attempt is for a rate
// limit (error_status 429). The harness honours a retry-after of up to 60
// s this way (adding up to a quarter); a longer one it does not retry at
// all (DESIGN.md «Limits»).
func RetryAfterOf(ev *Event) (wait time.Duration, rateLimit, ok bool) {
	if !ev.mayBe("system", "api_retry") {
		return 0, false, false
	}
	if len(ev.Raw) == 0 || !gjson.ValidBytes(ev.Raw) {
		return 0, false, false
	}
	root := gjson.ParseBytes(ev.Raw)
	if root.Get("type").String() != "system" || root.Get("subtype").String() != "api_retry" {
		return 0, false, false
	}
	ms := root.Get("retry_delay_ms").Int()
	return time.Duration(ms) * time.Millisecond, root.Get("error_status").Int() == 429, true
}

// mayBe reports whether ev may be a record of type typ (and subtype sub,
// when given): a decoded record says what it is, and one that is not of it
// is not parsed again (each line of a stream passes here); a record with
// only its Raw may be anything.
func (ev *Event) mayBe(typ, sub string) bool {
	if ev.Type == "" {
		return true
	}
	return ev.Type == typ && (sub == "" || ev.Subtype == sub)
}

func either(root gjson.Result, a, b string) gjson.Result {
	if r := root.Get(a); r.Exists() {
		return r
	}
	return root.Get(b)
}

func epoch(r gjson.Result) time.Time {
	if r.Int() <= 0 {
		return time.Time{}
	}
	return time.Unix(r.Int(), 0)
}

// resetRe finds the harness's reset phrase: "resets 12:04pm (UTC)",
// "resets 5pm (Europe/Paris)", "resets Dec 3, 5pm (UTC)", "resets Jan 2,
// 2027, 5:30pm (UTC)".
var resetRe = regexp.MustCompile(`resets ([A-Z][a-z]{2} \d{1,2}, (?:\d{4}, )?)?(\d{1,2}(?::\d{2})?[ap]m)(?: \(([^)]+)\))?`)

// ResetFromText reads the reset time out of the harness's usage-limit text
// (DESIGN.md «Limits»). The harness writes the clock time to the minute,
// seconds cut off, so the limit lifts within the minute it names: the time
// returned is that minute's end, the first moment the limit has surely
// lifted. The harness writes the clock time in the zone it
// names in parentheses (its own local zone); a name Go cannot load falls
// back to now's zone. A time with no date is the next such time at or after
// now (a minute's slack, for the harness's rounding); a date with no year is
// in now's year, or the next one if that is past.
func ResetFromText(text string, now time.Time) (time.Time, bool) {
	m := resetRe.FindStringSubmatch(text)
	if m == nil {
		return time.Time{}, false
	}
	loc := now.Location()
	if m[3] != "" {
		if l, err := time.LoadLocation(m[3]); err == nil {
			loc = l
		}
	}
	now = now.In(loc)
	clock, ok := parseClock(m[2])
	if !ok {
		return time.Time{}, false
	}
	date := strings.TrimSuffix(strings.TrimSpace(m[1]), ",")
	if date == "" {
		t := time.Date(now.Year(), now.Month(), now.Day(), clock.Hour(), clock.Minute(), 0, 0, loc)
		if t.Before(now.Add(-time.Minute)) {
			t = t.AddDate(0, 0, 1)
		}
		return t.Add(time.Minute), true
	}
	for _, layout := range []string{"Jan 2, 2006", "Jan 2"} {
		d, err := time.Parse(layout, date)
		if err != nil {
			continue
		}
		year := d.Year()
		if layout == "Jan 2" {
			year = now.Year()
		}
		t := time.Date(year, d.Month(), d.Day(), clock.Hour(), clock.Minute(), 0, 0, loc)
		if layout == "Jan 2" && t.Before(now.Add(-time.Minute)) {
			t = t.AddDate(1, 0, 0)
		}
		return t.Add(time.Minute), true
	}
	return time.Time{}, false
}

func parseClock(s string) (time.Time, bool) {
	for _, layout := range []string{"3:04pm", "3pm"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, true
		}
	}
	return time.Time{}, false
}
