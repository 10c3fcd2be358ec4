package transcript_test

import (
	"bufio"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/flowerhq/flower/transcript"
)

// records reads a captured stdout of the real harness (Claude Code
// 2.1.328, integration/limitfacts_test.go) from testdata/limits.
func records(t *testing.T, name string) []transcript.Event {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", "limits", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []transcript.Event
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		ev, err := transcript.Decode(append([]byte(nil), sc.Bytes()...))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		out = append(out, ev)
	}
	return out
}

func TestLimitOfCaptured(t *testing.T) {
	// The capture was made at 09:05 UTC with a reset scripted 3 h ahead
	// (epoch 1796126728, 12:05:28 UTC).
	now := time.Date(2026, 12, 1, 9, 5, 28, 0, time.UTC)
	reset := time.Unix(1796126728, 0)

	t.Run("usage limit", func(t *testing.T) {
		evs := records(t, "usage-limit-oauth.jsonl")
		var types []string
		for i := range evs {
			types = append(types, evs[i].Type)
		}
		if len(evs) != 3 || types[0] != "rate_limit_event" || types[1] != "assistant" || types[2] != "result" {
			t.Fatalf("records %v, want rate_limit_event, assistant, result", types)
		}
		for i, want := range []time.Time{reset, reset, time.Date(2026, 12, 1, 12, 6, 0, 0, time.UTC)} {
			l, ok := transcript.LimitOf(&evs[i], now)
			if !ok || l.Kind != transcript.LimitUsage {
				t.Fatalf("%s: LimitOf = %+v, %v; want a usage limit", types[i], l, ok)
			}
			if !l.ResetAt.Equal(want) {
				t.Errorf("%s: ResetAt %s, want %s", types[i], l.ResetAt.UTC(), want.UTC())
			}
			if i > 0 && l.Message != "You've hit your 5-hour limit · resets 12:05pm (UTC)" {
				t.Errorf("%s: Message %q", types[i], l.Message)
			}
			if i < 2 && l.Window != "five_hour" {
				t.Errorf("%s: Window %q, want five_hour", types[i], l.Window)
			}
		}
	})

	t.Run("rate limit", func(t *testing.T) {
		evs := records(t, "ratelimit-429.jsonl")
		wait, rate, ok := transcript.RetryAfterOf(&evs[0])
		if !ok || !rate || wait != 598*time.Millisecond {
			t.Errorf("RetryAfterOf(api_retry) = %s, %v, %v; want 598ms for a rate limit", wait, rate, ok)
		}
		if _, ok := transcript.LimitOf(&evs[0], now); ok {
			t.Error("an api_retry line is not a turn ended on a limit")
		}
		for _, ev := range evs[1:] {
			l, ok := transcript.LimitOf(&ev, now)
			if !ok || l.Kind != transcript.LimitRate || !l.ResetAt.IsZero() {
				t.Errorf("%s: LimitOf = %+v, %v; want a rate limit with no reset", ev.Type, l, ok)
			}
			if l.Message != "API Error: Request rejected (429) · This request would exceed the rate limit for your organization of 50 requests per minute." {
				t.Errorf("%s: Message %q", ev.Type, l.Message)
			}
		}
	})

	t.Run("529 is no limit", func(t *testing.T) {
		evs := records(t, "overloaded-529.jsonl")
		if _, rate, ok := transcript.RetryAfterOf(&evs[0]); !ok || rate {
			t.Errorf("RetryAfterOf(529 api_retry): rate %v ok %v; want a retry that is not a rate limit", rate, ok)
		}
		for _, ev := range evs {
			if l, ok := transcript.LimitOf(&ev, now); ok {
				t.Errorf("%s: LimitOf = %+v, want no limit", ev.Type, l)
			}
		}
	})
}

func TestLimitOfAllowedAndGarbage(t *testing.T) {
	for _, line := range []string{
		`{"type":"rate_limit_event","rate_limit_info":{"status":"allowed","isUsingOverage":false}}`,
		`{"type":"result","subtype":"success","is_error":false,"result":"resets 5pm (UTC)"}`,
		`{"type":"assistant","message":{"model":"claude","content":[{"type":"text","text":"You've hit your 5-hour limit · resets 5pm"}]}}`,
		`not json`,
		``,
	} {
		ev := transcript.Event{Raw: []byte(line)}
		if l, ok := transcript.LimitOf(&ev, time.Now()); ok {
			t.Errorf("LimitOf(%q) = %+v, want none", line, l)
		}
	}
}

func TestResetFromText(t *testing.T) {
	paris, err := time.LoadLocation("Europe/Paris")
	if err != nil {
		t.Skip("no tzdata:", err)
	}
	now := time.Date(2026, 12, 1, 22, 30, 0, 0, time.UTC)
	for _, c := range []struct {
		text string
		want time.Time
	}{
		{"You've hit your 5-hour limit · resets 11:45pm (UTC)", time.Date(2026, 12, 1, 23, 46, 0, 0, time.UTC)},
		{"You've hit your 5-hour limit · resets 2am (UTC)", time.Date(2026, 12, 2, 2, 1, 0, 0, time.UTC)},
		// 22:30 UTC is 23:30 in Paris; 1am Paris is 00:00 UTC the next day.
		{"You've hit your 5-hour limit · resets 1am (Europe/Paris)", time.Date(2026, 12, 2, 1, 1, 0, 0, paris)},
		{"You've hit your weekly limit · resets Dec 3, 5pm (UTC)", time.Date(2026, 12, 3, 17, 1, 0, 0, time.UTC)},
		{"You've hit your weekly limit · resets Jan 2, 5:30pm (UTC)", time.Date(2027, 1, 2, 17, 31, 0, 0, time.UTC)},
		{"You've hit your weekly limit · resets Jan 2, 2027, 5:30pm (UTC)", time.Date(2027, 1, 2, 17, 31, 0, 0, time.UTC)},
		// An unknown zone name falls back to now's zone.
		{"resets 11pm (Mars/Olympus)", time.Date(2026, 12, 1, 23, 1, 0, 0, time.UTC)},
	} {
		got, ok := transcript.ResetFromText(c.text, now)
		if !ok || !got.Equal(c.want) {
			t.Errorf("ResetFromText(%q) = %s, %v; want %s", c.text, got, ok, c.want)
		}
	}
	for _, text := range []string{"", "You've hit your 5-hour limit", "resets soon", "resets 25pm (UTC)"} {
		if got, ok := transcript.ResetFromText(text, now); ok {
			t.Errorf("ResetFromText(%q) = %s, want none", text, got)
		}
	}
}

// TestLimitOfTranscriptFile: an interactive session's transcript file
// spells the fields apiError*; its informational line is no limit record.
func TestLimitOfTranscriptFile(t *testing.T) {
	evs := records(t, "usage-limit-interactive-transcript.jsonl")
	if len(evs) != 2 {
		t.Fatalf("%d records", len(evs))
	}
	l, ok := transcript.LimitOf(&evs[0], time.Date(2026, 12, 1, 9, 15, 20, 0, time.UTC))
	if !ok || l.Kind != transcript.LimitUsage || !l.ResetAt.Equal(time.Unix(1796127312, 0)) || l.Window != "five_hour" {
		t.Errorf("LimitOf(transcript assistant) = %+v, %v; want a usage limit resetting at 1796127312", l, ok)
	}
	if l, ok := transcript.LimitOf(&evs[1], time.Now()); ok {
		t.Errorf("LimitOf(informational) = %+v, want none", l)
	}
}

// No connection to the API, as 2.1.328 writes it once its retries of a
// refused connection are spent (captured against a closed port): the
// synthetic reply and the result both say api_error "connection_failed",
// with no HTTP status, and are a network outage; so is the transcript
// file's spelling.
func TestLimitOfConnectionFailed(t *testing.T) {
	const text = "API Error: Connection refused — a firewall or proxy may be blocking it (ECONNREFUSED)"
	for _, line := range []string{
		`{"type":"assistant","message":{"id":"b0","model":"<synthetic>","role":"assistant","stop_reason":"stop_sequence","content":[{"type":"text","text":"` + text + `"}]},"parent_tool_use_id":null,"session_id":"s","error":"server_error","is_api_error_message":true,"api_error":"connection_failed"}`,
		`{"type":"result","subtype":"success","is_error":true,"api_error_status":null,"api_error":"connection_failed","terminal_reason":"api_error","result":"` + text + `","session_id":"s"}`,
		`{"type":"assistant","sessionId":"s","isSidechain":false,"isApiErrorMessage":true,"apiError":"connection_failed","error":"server_error","message":{"id":"b1","model":"<synthetic>","content":[{"type":"text","text":"` + text + `"}]}}`,
	} {
		ev, err := transcript.Decode([]byte(line))
		if err != nil {
			t.Fatal(err)
		}
		if l, ok := transcript.LimitOf(&ev, time.Now()); !ok || l.Kind != transcript.LimitNetwork || l.Message != text || !l.ResetAt.IsZero() {
			t.Errorf("LimitOf(%s) = %+v, %v; want a network outage", ev.Type, l, ok)
		}
	}
}
