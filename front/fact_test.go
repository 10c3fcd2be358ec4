package front_test

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/flowerhq/flower/front"
	"github.com/flowerhq/flower/transcript"
)

// The lines here are the real harness's (Claude Code 2.1.328): stdout in
// stream-json mode against the scripted API (testdata, captured with the
// helpers of package integration), the limit captures of
// transcript/testdata/limits, and a transcript file of the harness's own
// screen (transcript/testdata).

// replay feeds the lines of a capture to tr and returns the facts, each
// Output left out; before, when set, is called ahead of the line at that
// index (to tell the translator of an interrupt where a front sends one).
func replay(t *testing.T, tr *front.Translator, path string, before map[int]func()) []front.Fact {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var facts []front.Fact
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	lines := 0
	for i := 0; sc.Scan(); i++ {
		if fn := before[i]; fn != nil {
			fn()
		}
		ev, err := transcript.Decode(append([]byte(nil), sc.Bytes()...))
		if err != nil {
			t.Fatalf("%s:%d: %v", path, i+1, err)
		}
		outputs := 0
		tr.Facts(&ev, func(f front.Fact) {
			if _, ok := f.(front.Output); ok {
				outputs++
				return
			}
			facts = append(facts, f)
		})
		if outputs != 1 {
			t.Errorf("%s:%d: %d Output facts, want the line passed on once", path, i+1, outputs)
		}
		lines++
	}
	if lines == 0 {
		t.Fatalf("%s: no lines", path)
	}
	return facts
}

func only[T front.Fact](facts []front.Fact) []T {
	var out []T
	for _, f := range facts {
		if x, ok := f.(T); ok {
			out = append(out, x)
		}
	}
	return out
}

func ended(t *testing.T, facts []front.Fact) front.TurnEnded {
	t.Helper()
	te := only[front.TurnEnded](facts)
	if len(te) != 1 {
		t.Fatalf("%d TurnEnded, want one per turn: %#v", len(te), facts)
	}
	return te[0]
}

const session = "615fce70-c34c-4557-b3ae-e758a5063c0b"

// A turn whose running Bash tool the front interrupted: its init, the one
// response written as two lines (text, then the tool call), the harness's
// note of the interrupt, and a result that ends the turn as interrupted;
// the same lines without the front's word read as an error.
func TestTranslatorInterruptedTool(t *testing.T) {
	const file = "testdata/interrupted-tool.jsonl"
	var tr front.Translator
	facts := replay(t, &tr, file, map[int]func(){4: tr.Interrupting}) // line 5 answers the interrupt request
	inits := only[front.Init](facts)
	if want := []front.Init{{SessionID: session, Model: "claude-opus-5-5", Version: "2.1.328"}}; !reflect.DeepEqual(inits, want) {
		t.Errorf("Init facts %+v, want %+v", inits, want)
	}
	rounds := only[front.Round](facts)
	if len(rounds) != 2 {
		t.Fatalf("%d Round facts, want 2 (one response, two lines)", len(rounds))
	}
	if r := rounds[0]; !r.MainThread || r.Repeat || r.Synthetic || r.Context != 120_005 || r.Text != "running it" || r.SessionID != session {
		t.Errorf("first Round %+v, want the main thread's response at 120005", r)
	}
	if r := rounds[1]; !r.Repeat || len(r.ToolUses) != 1 || r.ToolUses[0].Name != "Bash" {
		t.Errorf("second Round %+v, want the same response's tool call, a repeat", r)
	}
	users := only[front.UserMessage](facts)
	if len(users) != 2 || users[0].Interrupted || !users[1].Interrupted || users[1].Text != "[Request interrupted by user for tool use]" {
		t.Errorf("UserMessage facts %+v, want the tool's result, then the note of the interrupt", users)
	}
	te := ended(t, facts)
	if te.How != front.EndedInterrupted || te.SessionID != session || te.CostUSD != 0.02408 || te.Turns != 3 ||
		te.Windows["claude-opus-5-5"] != 1_000_000 || te.Detail != "aborted_tools" {
		t.Errorf("TurnEnded %+v, want interrupted, $0.02408, 3 turns, a 1M window for claude-opus-5-5", te)
	}
	if _, ok := facts[len(facts)-1].(front.TurnEnded); !ok {
		t.Errorf("last fact %T, want the TurnEnded", facts[len(facts)-1])
	}

	var plain front.Translator
	if te := ended(t, replay(t, &plain, file, nil)); te.How != front.EndedError {
		t.Errorf("the interrupted turn without the front's interrupt ends %v, want error", te.How)
	}
}

// A turn that ended on its own ends so even when the front's interrupt
// came too late for it (a cut at its last round): the result says
// end_turn. The interrupt is no later turn's either.
func TestTranslatorOwnEndBeatsInterrupt(t *testing.T) {
	var tr front.Translator
	tr.Interrupting()
	facts := replay(t, &tr, "testdata/own-end.jsonl", nil)
	if te := ended(t, facts); te.How != front.EndedOnOwn || te.Text != "carrying on" || te.CostUSD != 0.04816 {
		t.Errorf("TurnEnded %+v, want its own end, its text and the process's cost so far", te)
	}
	if inits := only[front.Init](facts); len(inits) != 1 {
		t.Errorf("Init facts %+v, want one for a fresh translator", inits)
	}
	// The interrupt was spent on that result: the next turn's error is an error.
	if te := ended(t, replay(t, &tr, "testdata/interrupted-tool.jsonl", nil)); te.How != front.EndedError {
		t.Errorf("a later turn ends %v, want error: the interrupt was the earlier turn's", te.How)
	}
}

// An init that repeats what is known says nothing new.
func TestTranslatorInitOnlyWhenChanged(t *testing.T) {
	var tr front.Translator
	replay(t, &tr, "testdata/interrupted-tool.jsonl", nil)
	if inits := only[front.Init](replay(t, &tr, "testdata/own-end.jsonl", nil)); len(inits) != 0 {
		t.Errorf("Init facts %+v for the same session, model and version, want none", inits)
	}
}

// The API refusing a prompt as too long is an overflow, with the
// harness's made-up reply a synthetic round that moves no meter.
func TestTranslatorOverflow(t *testing.T) {
	var tr front.Translator
	facts := replay(t, &tr, "testdata/overflow.jsonl", nil)
	te := ended(t, facts)
	if te.How != front.EndedOverflow || te.Detail != "prompt_too_long" {
		t.Errorf("TurnEnded %+v, want an overflow", te)
	}
	rounds := only[front.Round](facts)
	if len(rounds) != 1 || !rounds[0].Synthetic || rounds[0].Context != 0 {
		t.Errorf("Round facts %+v, want one synthetic round of no context", rounds)
	}
}

// Limits and the overload: the harness's api_retry lines are Retrying
// facts, a rate limit and a subscription's usage limit end the turn as
// limited (with when it lifts), an overload as an error.
func TestTranslatorLimits(t *testing.T) {
	now := time.Date(2026, 12, 1, 9, 5, 28, 0, time.UTC) // when the captures were made
	dir := filepath.Join("..", "transcript", "testdata", "limits")
	for _, tc := range []struct {
		file    string
		how     front.Ending
		kind    transcript.LimitKind
		reset   bool  // the limit says when it lifts
		retries []int // the statuses of the Retrying facts
	}{
		{"ratelimit-429.jsonl", front.EndedLimited, transcript.LimitRate, false, []int{429}},
		{"usage-limit-oauth.jsonl", front.EndedLimited, transcript.LimitUsage, true, nil},
		{"overloaded-529.jsonl", front.EndedError, "", false, []int{529}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			tr := front.Translator{Now: func() time.Time { return now }}
			facts := replay(t, &tr, filepath.Join(dir, tc.file), nil)
			te := ended(t, facts)
			if te.How != tc.how {
				t.Fatalf("TurnEnded %v (%q), want %v", te.How, te.Text, tc.how)
			}
			if tc.how == front.EndedLimited && (te.Limit == nil || te.Limit.Kind != tc.kind || te.Limit.ResetAt.IsZero() == tc.reset) {
				t.Errorf("Limit %+v, want a %s limit, with a reset: %v", te.Limit, tc.kind, tc.reset)
			}
			if tc.how != front.EndedLimited && te.Limit != nil {
				t.Errorf("Limit %+v on a turn that did not end on one", te.Limit)
			}
			var statuses []int
			for _, r := range only[front.Retrying](facts) {
				statuses = append(statuses, r.Status)
				if r.Delay <= 0 || r.MaxRetries != 1 {
					t.Errorf("Retrying %+v, want its announced delay and budget", r)
				}
			}
			if !reflect.DeepEqual(statuses, tc.retries) {
				t.Errorf("Retrying statuses %v, want %v", statuses, tc.retries)
			}
		})
	}
}

// A transcript file of the harness's own screen: its lines name the
// session and version (an Init), a subagent's replies are no main-thread
// rounds, and a file has no results, so no TurnEnded.
func TestTranslatorTranscriptFile(t *testing.T) {
	var tr front.Translator
	facts := replay(t, &tr, filepath.Join("..", "transcript", "testdata", "interactive-2.1.328.jsonl"), nil)
	inits := only[front.Init](facts)
	if len(inits) == 0 || inits[0].SessionID != "06dd8746-ded5-4101-af6d-316cbbf39253" || inits[0].Version != "2.1.328" {
		t.Fatalf("Init facts %+v, want the file's session and version", inits)
	}
	var main, sub int
	for _, r := range only[front.Round](facts) {
		if r.MainThread {
			main++
		} else {
			sub++
		}
	}
	if main == 0 || sub == 0 {
		t.Errorf("%d main-thread and %d subagent rounds, want both (the file runs an agent)", main, sub)
	}
	if n := len(only[front.TurnEnded](facts)); n != 0 {
		t.Errorf("%d TurnEnded from a transcript file, want none", n)
	}
	if users := only[front.UserMessage](facts); len(users) == 0 || users[0].Text != "use agent" || !users[0].MainThread {
		t.Errorf("UserMessage facts %+v, want the typed prompt first", users)
	}
}

// EndingOf also reads a transcript file's synthetic error reply (a file
// has no result): a usage limit there is a limit.
func TestEndingOfSyntheticReply(t *testing.T) {
	f, err := os.Open(filepath.Join("..", "transcript", "testdata", "limits", "usage-limit-interactive-transcript.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	if !sc.Scan() {
		t.Fatal("empty capture")
	}
	ev, err := transcript.Decode(sc.Bytes())
	if err != nil || ev.Kind != transcript.KindAssistant || !ev.Synthetic() {
		t.Fatalf("first line: %v, %v synthetic %v; want the synthetic reply", err, ev.Kind, ev.Synthetic())
	}
	how, lim := front.EndingOf(&ev, false, time.Date(2026, 12, 1, 9, 15, 20, 0, time.UTC))
	if how != front.EndedLimited || lim == nil || lim.Kind != transcript.LimitUsage {
		t.Errorf("EndingOf = %v, %+v; want a usage limit", how, lim)
	}
	// Interrupted by the front or not, a limit is a limit.
	if how, _ := front.EndingOf(&ev, true, time.Now()); how != front.EndedLimited {
		t.Errorf("interrupted: EndingOf = %v, want limit", how)
	}
}

// What the harness says of its compaction: a compact_boundary line and the
// thrashing message (written here in the shape of the harness's lines; no
// capture of a real compaction is kept).
func TestTranslatorCompacted(t *testing.T) {
	for _, tc := range []struct {
		line string
		want front.Compacted
	}{
		{`{"type":"system","subtype":"compact_boundary","session_id":"s","compact_metadata":{"trigger":"auto","pre_tokens":167000,"post_tokens":9000}}`,
			front.Compacted{Sign: "a compact_boundary line", Boundary: true, Trigger: "auto", PreTokens: 167000, PostTokens: 9000}},
		{`{"type":"system","subtype":"informational","session_id":"s","content":"Autocompact is thrashing: the context refilled three times"}`,
			front.Compacted{Sign: `"Autocompact is thrashing"`}},
	} {
		ev, err := transcript.Decode([]byte(tc.line))
		if err != nil {
			t.Fatal(err)
		}
		var tr front.Translator
		var got []front.Compacted
		tr.Facts(&ev, func(f front.Fact) {
			if c, ok := f.(front.Compacted); ok {
				got = append(got, c)
			}
		})
		if len(got) != 1 || got[0] != tc.want {
			t.Errorf("%s: Compacted %+v, want %+v", tc.line, got, tc.want)
		}
	}
}

// A limited turn's TurnEnded carries what the turn's records said of the
// limit: a rate_limit_event's exact reset before the result's minute, the
// retry-after the harness announced for a 429; a 529 is no limit, and
// nothing of one turn's limit reaches the next turn's end.
func TestTranslatorLimitOfTurn(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	tr := &front.Translator{Now: func() time.Time { return now }}
	feed := func(lines ...string) []front.Fact {
		var facts []front.Fact
		for _, l := range lines {
			ev, err := transcript.Decode([]byte(l))
			if err != nil {
				t.Fatal(err)
			}
			tr.Facts(&ev, func(f front.Fact) { facts = append(facts, f) })
		}
		return facts
	}
	ended := func(facts []front.Fact) front.TurnEnded {
		t.Helper()
		for _, f := range facts {
			if te, ok := f.(front.TurnEnded); ok {
				return te
			}
		}
		t.Fatal("no TurnEnded")
		return front.TurnEnded{}
	}
	te := ended(feed(
		`{"type":"rate_limit_event","rate_limit_info":{"status":"rejected","resetsAt":1800000003,"rateLimitType":"five_hour"}}`,
		`{"type":"assistant","message":{"id":"m1","model":"<synthetic>","role":"assistant","content":[{"type":"text","text":"You've hit your 5-hour limit"}]},"api_error_status":429,"api_error":"usage_limit_reached","is_api_error_message":true,"error":"rate_limit"}`,
		`{"type":"result","subtype":"success","is_error":true,"api_error_status":429,"api_error":"usage_limit_reached","result":"You've hit your 5-hour limit · resets 11:30am (UTC)","session_id":"s"}`))
	if te.How != front.EndedLimited || te.Limit == nil || te.Limit.Kind != transcript.LimitUsage ||
		!te.Limit.ResetAt.Equal(now.Add(3*time.Second)) || te.Limit.Window != "five_hour" {
		t.Fatalf("usage limit: %+v %+v; want the event's exact reset", te, te.Limit)
	}
	te = ended(feed(
		`{"type":"system","subtype":"api_retry","attempt":1,"max_retries":1,"retry_delay_ms":3120,"error_status":429,"error":"rate_limit"}`,
		`{"type":"result","subtype":"success","is_error":true,"api_error_status":429,"result":"API Error: Request rejected (429)","session_id":"s"}`))
	if te.How != front.EndedLimited || te.Limit.Kind != transcript.LimitRate || !te.Limit.ResetAt.IsZero() || te.Limit.RetryAfter != 3120*time.Millisecond {
		t.Fatalf("rate limit: %+v; want no reset, retry-after 3.12s", te.Limit)
	}
	te = ended(feed(
		`{"type":"system","subtype":"api_retry","attempt":1,"max_retries":1,"retry_delay_ms":500,"error_status":529,"error":"overloaded"}`,
		`{"type":"result","subtype":"success","is_error":true,"api_error_status":529,"result":"API Error: 529 Overloaded.","session_id":"s"}`))
	if te.How == front.EndedLimited || te.Limit != nil {
		t.Fatalf("a 529 taken for a limit: %+v", te)
	}
	te = ended(feed(`{"type":"result","subtype":"success","is_error":true,"api_error_status":429,"result":"API Error: Request rejected (429)","session_id":"s"}`))
	if te.Limit == nil || te.Limit.RetryAfter != 0 || !te.Limit.ResetAt.IsZero() {
		t.Fatalf("an earlier turn's limit leaked into this one: %+v", te.Limit)
	}
}

// A Round carries its response's id and usage, for the cost estimate.
func TestTranslatorRoundUsage(t *testing.T) {
	tr := &front.Translator{}
	ev, err := transcript.Decode([]byte(`{"type":"assistant","session_id":"s","parent_tool_use_id":null,"message":{"id":"m7","model":"claude-sonnet-4-5","role":"assistant","content":[{"type":"text","text":"hi"}],"usage":{"input_tokens":10,"cache_creation_input_tokens":20,"cache_read_input_tokens":30,"output_tokens":40}}}`))
	if err != nil {
		t.Fatal(err)
	}
	var r front.Round
	tr.Facts(&ev, func(f front.Fact) {
		if x, ok := f.(front.Round); ok {
			r = x
		}
	})
	want := transcript.Usage{InputTokens: 10, CacheCreationInputTokens: 20, CacheReadInputTokens: 30, OutputTokens: 40}
	if r.MessageID != "m7" || r.Usage != want {
		t.Fatalf("round %+v; want id m7 and usage %+v", r, want)
	}
}

// The harness's echo of a prompt it takes (--replay-user-messages) is a
// PromptTaken: the task's as its turn begins, and the writing prompt sent
// while the crossing reply's tool ran, taken mid-turn, beside the tool's
// result; one result ends both (DESIGN.md «Queued cut»).
func TestTranslatorPromptTakenMidTurn(t *testing.T) {
	var tr front.Translator
	facts := replay(t, &tr, "testdata/queued-midturn.jsonl", nil)
	var order []string
	for _, f := range facts {
		switch f := f.(type) {
		case front.PromptTaken:
			order = append(order, fmt.Sprintf("taken mid-turn=%v %.8s", f.MidTurn, f.Text))
		case front.UserMessage:
			order = append(order, "user")
		case front.TurnEnded:
			order = append(order, "ended "+f.How.String())
		}
	}
	want := []string{"taken mid-turn=false Append l", "user", "user", "user", "user", "taken mid-turn=true <<flower", "ended on its own"}
	if !slices.Equal(order, want) {
		t.Errorf("facts %q, want %q", order, want)
	}
	if u := only[front.UserMessage](facts); slices.ContainsFunc(u, func(m front.UserMessage) bool { return m.Text != "" }) {
		t.Errorf("UserMessage facts %+v: an echo read as a prompt", u)
	}
}

// A prompt queued behind a turn that the interrupt ends is the harness's
// next turn: taken, not mid-turn, after that turn's init.
func TestTranslatorPromptTakenAfterInterrupt(t *testing.T) {
	var tr front.Translator
	facts := replay(t, &tr, "testdata/queued-interrupted.jsonl", map[int]func(){13: tr.Interrupting}) // line 14 answers the interrupt
	var order []string
	for _, f := range facts {
		switch f := f.(type) {
		case front.PromptTaken:
			order = append(order, fmt.Sprintf("taken mid-turn=%v", f.MidTurn))
		case front.TurnEnded:
			order = append(order, "ended "+f.How.String())
		}
	}
	if want := []string{"taken mid-turn=false", "ended interrupted", "taken mid-turn=false", "ended on its own"}; !slices.Equal(order, want) {
		t.Errorf("facts %q, want %q", order, want)
	}
}

// Records counts the turns it was sent whose result is not translated: a
// turn taken into the running one ends with it, so an interrupt sent
// after their one result is no turn's, and the next turn's error reads
// as an error, not as interrupted.
func TestRecordsTurnTakenMidTurnEndsWithItsTurn(t *testing.T) {
	f, err := os.ReadFile("testdata/queued-midturn.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	src := make(chan transcript.Event, 64)
	for _, l := range bytes.Split(bytes.TrimSpace(f), []byte("\n")) {
		ev, err := transcript.Decode(l)
		if err != nil {
			t.Fatal(err)
		}
		src <- ev
	}
	ev, err := transcript.Decode([]byte(`{"type":"result","subtype":"error_during_execution","is_error":true,"result":"API Error: 500","terminal_reason":"api_error"}`))
	if err != nil {
		t.Fatal(err)
	}
	r := front.NewRecords(src, nil)
	send := func() error { return nil }
	_ = r.Turn(send) // the task
	var ends []front.Ending
	for len(ends) < 1 {
		f, err := r.Next(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := f.(front.Round); ok && len(ends) == 0 {
			if rd := f.(front.Round); strings.Contains(rd.Text, "crossing") {
				_ = r.Turn(send) // the writing prompt, queued
			}
		}
		if te, ok := f.(front.TurnEnded); ok {
			ends = append(ends, te.How)
		}
	}
	_ = r.Interrupt(send) // no turn runs
	_ = r.Turn(send)
	src <- ev
	for {
		f, err := r.Next(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if te, ok := f.(front.TurnEnded); ok {
			ends = append(ends, te.How)
			break
		}
	}
	if want := []front.Ending{front.EndedOnOwn, front.EndedError}; !slices.Equal(ends, want) {
		t.Errorf("turn ends %v, want %v", ends, want)
	}
}

// A harness with no credentials at all answers with a reply of its own,
// "authentication_failed" and no HTTP status (as 2.1.328 does on a fresh
// HOME with no key): its TurnEnded says NoCredentials; another turn's
// error, and the next turn, do not.
func TestTranslatorNoCredentials(t *testing.T) {
	tr := &front.Translator{}
	ended := func(lines ...string) front.TurnEnded {
		t.Helper()
		var te *front.TurnEnded
		for _, l := range lines {
			ev, err := transcript.Decode([]byte(l))
			if err != nil {
				t.Fatal(err)
			}
			tr.Facts(&ev, func(f front.Fact) {
				if e, ok := f.(front.TurnEnded); ok {
					te = &e
				}
			})
		}
		if te == nil {
			t.Fatal("no TurnEnded")
		}
		return *te
	}
	const result = `{"type":"result","subtype":"success","is_error":true,"api_error_status":null,"terminal_reason":"api_error","result":"Not logged in · Please run /login","session_id":"s","num_turns":1}`
	te := ended(`{"type":"assistant","message":{"id":"x","model":"<synthetic>","role":"assistant","stop_reason":"stop_sequence","content":[{"type":"text","text":"Not logged in · Please run /login"}]},"parent_tool_use_id":null,"session_id":"s","error":"authentication_failed","is_api_error_message":true}`, result)
	if te.How != front.EndedError || !te.NoCredentials || te.APIErrorStatus != 0 {
		t.Errorf("not logged in: %+v", te)
	}
	te = ended(`{"type":"assistant","message":{"id":"y","model":"<synthetic>","role":"assistant","content":[{"type":"text","text":"Prompt is too long"}]},"parent_tool_use_id":null,"session_id":"s","error":"invalid_request","is_api_error_message":true,"api_error_status":400}`,
		`{"type":"result","subtype":"success","is_error":true,"api_error_status":400,"result":"API Error: 500","session_id":"s"}`)
	if te.NoCredentials {
		t.Errorf("another error taken for no credentials: %+v", te)
	}
	if te = ended(`{"type":"result","subtype":"success","is_error":true,"result":"API Error: 500","session_id":"s"}`); te.NoCredentials {
		t.Errorf("an earlier turn's refusal leaked into this one: %+v", te)
	}
}
