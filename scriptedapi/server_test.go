package scriptedapi

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// sseEvent is one Server-Sent Event as a client sees it.
type sseEvent struct {
	Name string
	Data map[string]any
}

func readEvents(t *testing.T, r io.Reader) []sseEvent {
	t.Helper()
	var out []sseEvent
	var name string
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			var d map[string]any
			if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &d); err != nil {
				t.Fatalf("event %s: bad data %q: %v", name, line, err)
			}
			if d["type"] != name {
				t.Fatalf("event name %q but data type %v", name, d["type"])
			}
			out = append(out, sseEvent{name, d})
		}
	}
	return out
}

func post(t *testing.T, url, body string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("x-api-key", "sk-ant-should-not-leak")
	req.Header.Set("Authorization", "Bearer should-not-leak")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

func start(t *testing.T, script Script) *Server {
	t.Helper()
	s, err := Start(script)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if !strings.HasPrefix(s.URL, "http://127.0.0.1:") {
		t.Fatalf("URL = %q, want loopback", s.URL)
	}
	return s
}

const mainBody = `{"model":"claude-test","stream":true,"max_tokens":1000,
 "system":[{"type":"text","text":"x-anthropic-billing-header: cc_version=1; cc_entrypoint=sdk-cli;"},{"type":"text","text":"You are main."}],
 "tools":[{"name":"Bash"},{"name":"Agent"}],
 "messages":[{"role":"user","content":"first question"},
  {"role":"assistant","content":[{"type":"text","text":"calling"},{"type":"tool_use","id":"toolu_1","name":"Bash","input":{}}]},
  {"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":[{"type":"text","text":"tool said hi"}],"is_error":true},{"type":"text","text":"go on"}]},
  {"role":"system","content":"env block"}]}`

func TestStreamTextAndToolUse(t *testing.T) {
	s := start(t, func(r *Request) Reply {
		return Reply{
			Text:      "héllo wörld",
			ChunkText: 4,
			ToolUses:  []ToolUse{{Name: "Bash", Input: map[string]any{"command": "ls"}}, {ID: "toolu_fixed", Name: "Read", Input: map[string]any{"file_path": "/x"}}},
			Usage:     Usage{InputTokens: 7, CacheCreationInputTokens: 11, CacheReadInputTokens: 150000, OutputTokens: 42},
		}
	})
	resp := post(t, s.URL+"/v1/messages?beta=true", mainBody)
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("content type %q", ct)
	}
	ev := readEvents(t, resp.Body)
	var names []string
	for _, e := range ev {
		names = append(names, e.Name)
	}
	want := "message_start " +
		"content_block_start content_block_delta content_block_delta content_block_delta content_block_stop " +
		"content_block_start content_block_delta content_block_stop " +
		"content_block_start content_block_delta content_block_stop " +
		"message_delta message_stop"
	if got := strings.Join(names, " "); got != want {
		t.Fatalf("events:\n got %s\nwant %s", got, want)
	}

	msg := ev[0].Data["message"].(map[string]any)
	if id := msg["id"].(string); !strings.HasPrefix(id, "msg_") || len(id) < 10 {
		t.Errorf("message id %q", id)
	}
	if msg["model"] != "claude-test" {
		t.Errorf("model %v, want the requested one", msg["model"])
	}
	u := msg["usage"].(map[string]any)
	for k, v := range map[string]float64{"input_tokens": 7, "cache_creation_input_tokens": 11, "cache_read_input_tokens": 150000, "output_tokens": 42} {
		if u[k] != v {
			t.Errorf("usage.%s = %v, want %v", k, u[k], v)
		}
	}

	var text strings.Builder
	for _, e := range ev[2:5] {
		text.WriteString(e.Data["delta"].(map[string]any)["text"].(string))
	}
	if text.String() != "héllo wörld" {
		t.Errorf("text deltas join to %q", text.String())
	}
	if first := ev[2].Data["delta"].(map[string]any)["text"]; first != "héll" {
		t.Errorf("first chunk %q, want 4 runes", first)
	}

	tool := ev[6].Data["content_block"].(map[string]any)
	if tool["type"] != "tool_use" || tool["name"] != "Bash" || !strings.HasPrefix(tool["id"].(string), "toolu_") {
		t.Errorf("tool block %v", tool)
	}
	if pj := ev[7].Data["delta"].(map[string]any); pj["type"] != "input_json_delta" || pj["partial_json"] != `{"command":"ls"}` {
		t.Errorf("tool delta %v", pj)
	}
	if id := ev[9].Data["content_block"].(map[string]any)["id"]; id != "toolu_fixed" {
		t.Errorf("explicit tool id lost: %v", id)
	}
	md := ev[len(ev)-2].Data
	if sr := md["delta"].(map[string]any)["stop_reason"]; sr != "tool_use" {
		t.Errorf("stop_reason %v", sr)
	}
	if ot := md["usage"].(map[string]any)["output_tokens"]; ot != float64(42) {
		t.Errorf("message_delta output_tokens %v", ot)
	}
}

func TestParsedRequest(t *testing.T) {
	s := start(t, Harmless)
	post(t, s.URL+"/v1/messages?beta=true", mainBody)
	reqs := s.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests", len(reqs))
	}
	r := reqs[0]
	checks := []struct {
		name      string
		got, want any
	}{
		{"Seq", r.Seq, 1},
		{"Path", r.Path, "/v1/messages?beta=true"},
		{"Model", r.Model, "claude-test"},
		{"Stream", r.Stream, true},
		{"MaxTokens", r.MaxTokens, 1000},
		{"NumMessages", r.NumMessages, 4},
		{"Replies", r.Replies, 1},
		{"LastUserText", r.LastUserText, "go on"},
		{"Kind", r.Kind, KindMain},
		{"System", r.System, "x-anthropic-billing-header: cc_version=1; cc_entrypoint=sdk-cli;\nYou are main."},
		{"Tools", strings.Join(r.Tools, ","), "Bash,Agent"},
		{"x-api-key", r.Header.Get("X-Api-Key"), "REDACTED"},
		{"authorization", r.Header.Get("Authorization"), "REDACTED"},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %#v, want %#v", c.name, c.got, c.want)
		}
	}
	if len(r.LastToolResults) != 1 || r.LastToolResults[0] != (ToolResult{ToolUseID: "toolu_1", Content: "tool said hi", IsError: true}) {
		t.Errorf("LastToolResults = %+v", r.LastToolResults)
	}
	if r.MidTurn != "" {
		t.Errorf("MidTurn = %q: the env block is no prompt", r.MidTurn)
	}
	if strings.Contains(r.AllText, "You are main.") {
		t.Error("AllText holds the system prompt")
	}
	for _, want := range []string{"first question", "calling", "tool said hi", "go on", "env block"} {
		if !strings.Contains(r.AllText, want) {
			t.Errorf("AllText lacks %q", want)
		}
	}
	if bytes.Contains(r.Body, []byte("should-not-leak")) || strings.Contains(r.Header.Get("X-Api-Key"), "leak") {
		t.Error("credential recorded")
	}
}

// A prompt sent while the turn ran comes in a message with role "system"
// after the tool's result, as the harness surfaces it: MidTurn has it, and
// LastUserText ends with it.
func TestMidTurnPrompt(t *testing.T) {
	s := start(t, Harmless)
	post(t, s.URL+"/v1/messages?beta=true", `{"model":"claude-test","stream":true,"max_tokens":1000,
 "system":[{"type":"text","text":"x-anthropic-billing-header: cc_version=1; cc_entrypoint=sdk-cli;"}],
 "tools":[{"name":"Bash"}],
 "messages":[{"role":"user","content":"the task"},
  {"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"Bash","input":{}}]},
  {"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"ok"}]},
  {"role":"system","content":"env block"},
  {"role":"system","content":[{"type":"text","text":"The user sent a new message while you were working:\nwrite the handoff\n\nThis is how Claude Code surfaces messages the user sends mid-turn."}]}]}`)
	r := s.Requests()[0]
	if !strings.HasPrefix(r.MidTurn, "The user sent a new message") || !strings.Contains(r.MidTurn, "write the handoff") || strings.Contains(r.MidTurn, "env block") {
		t.Errorf("MidTurn = %q", r.MidTurn)
	}
	if r.LastUserText != r.MidTurn || len(r.LastToolResults) != 1 {
		t.Errorf("LastUserText = %q, %d tool results: want the mid-turn prompt beside the tool's result", r.LastUserText, len(r.LastToolResults))
	}
	// The other way the harness surfaces it: a reminder at the end of the
	// tool's result.
	post(t, s.URL+"/v1/messages?beta=true", `{"model":"claude-test","stream":true,"max_tokens":1000,
 "system":[{"type":"text","text":"x-anthropic-billing-header: cc_version=1; cc_entrypoint=sdk-cli;"}],
 "tools":[{"name":"Read"}],
 "messages":[{"role":"user","content":"the task"},
  {"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"Read","input":{}}]},
  {"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"1\tfile line\n\n<system-reminder>\nThe user sent a new message while you were working:\nwrite the handoff\n</system-reminder>"}]}]}`)
	r = s.Requests()[1]
	if want := "The user sent a new message while you were working:\nwrite the handoff\n</system-reminder>"; r.MidTurn != want || r.LastUserText != want {
		t.Errorf("MidTurn = %q, LastUserText = %q: want %q", r.MidTurn, r.LastUserText, want)
	}
	// 2.1.332's way: a text block after the tool result.
	post(t, s.URL+"/v1/messages?beta=true", `{"model":"claude-test","stream":true,"max_tokens":1000,
 "system":[{"type":"text","text":"x-anthropic-billing-header: cc_version=1; cc_entrypoint=sdk-cli;"}],
 "tools":[{"name":"Bash"}],
 "messages":[{"role":"user","content":"the task"},
  {"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"Bash","input":{}}]},
  {"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"ok"},{"type":"text","text":"The user sent a new message while you were working:\nwrite the handoff\n\nThis is how Claude Code surfaces messages."}]}]}`)
	r = s.Requests()[2]
	if want := "The user sent a new message while you were working:\nwrite the handoff\n\nThis is how Claude Code surfaces messages."; r.MidTurn != want || r.LastUserText != want {
		t.Errorf("MidTurn = %q, LastUserText = %q: want %q once", r.MidTurn, r.LastUserText, want)
	}
}

// A file the prompt mentions, when the message begins with an interrupted
// tool's result: the harness puts its reminders (the file's text) inside
// that result, and LastUserText has them after the prompt (2.1.328).
func TestRemindersInsideAToolResult(t *testing.T) {
	s := start(t, Harmless)
	post(t, s.URL+"/v1/messages?beta=true", `{"model":"claude-test","stream":true,"max_tokens":1000,
 "system":[{"type":"text","text":"x-anthropic-billing-header: cc_version=1; cc_entrypoint=sdk-cli;"}],
 "tools":[{"name":"Bash"}],
 "messages":[{"role":"user","content":"the task"},
  {"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"Bash","input":{}}]},
  {"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","is_error":true,"content":"The user doesn't want to proceed with this tool use.\n\n<system-reminder>\nResult of calling the Read tool:\n1\tFILE-TEXT\n</system-reminder>"},
   {"type":"text","text":"[Request interrupted by user for tool use]"},{"type":"text","text":"do as @\"/p.md\" says"}]}]}`)
	r := s.Requests()[0]
	if want := "[Request interrupted by user for tool use]\ndo as @\"/p.md\" says\n<system-reminder>\nResult of calling the Read tool:\n1\tFILE-TEXT\n</system-reminder>"; r.LastUserText != want || r.MidTurn != "" {
		t.Errorf("LastUserText = %q, MidTurn = %q; want %q", r.LastUserText, r.MidTurn, want)
	}
	if len(r.LastToolResults) != 1 || !strings.Contains(r.LastToolResults[0].Content, "FILE-TEXT") {
		t.Errorf("tool results %+v: the result is kept whole", r.LastToolResults)
	}
}

func TestKind(t *testing.T) {
	tests := []struct {
		name string
		body string
		want Kind
	}{
		{"main", `{"model":"m","stream":true,"system":"x-anthropic-billing-header: cc_version=1;","tools":[{"name":"Bash"}],"messages":[]}`, KindMain},
		{"subagent", `{"model":"m","stream":true,"system":[{"type":"text","text":"x-anthropic-billing-header: cc_version=1; cc_is_subagent=true;"}],"tools":[{"name":"Bash"}],"messages":[]}`, KindSubagent},
		{"no stream", `{"model":"m","stream":false,"tools":[{"name":"Bash"}],"messages":[]}`, KindSide},
		{"no tools", `{"model":"m","stream":true,"messages":[{"role":"user","content":"title?"}]}`, KindSide},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := parseRequest([]byte(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			if got := classify(&r); got != tt.want {
				t.Errorf("classify = %s, want %s", got, tt.want)
			}
		})
	}
}

func TestNonStreamAndErrors(t *testing.T) {
	s := start(t, func(r *Request) Reply {
		if strings.Contains(r.LastUserText, "big") {
			return Reply{Status: 400, ErrorType: "invalid_request_error", ErrorMessage: "prompt is too long: 250123 tokens > 200000 maximum"}
		}
		return Reply{Text: "plain", Usage: Usage{InputTokens: 3}}
	})

	resp := post(t, s.URL+"/v1/messages", `{"model":"m","stream":false,"messages":[{"role":"user","content":"hi"}]}`)
	var m struct {
		ID         string `json:"id"`
		Model      string `json:"model"`
		StopReason string `json:"stop_reason"`
		Content    []struct{ Type, Text string }
		Usage      map[string]int
	}
	if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 || !strings.HasPrefix(m.ID, "msg_") || m.Model != "m" || m.StopReason != "end_turn" ||
		len(m.Content) != 1 || m.Content[0].Text != "plain" || m.Usage["input_tokens"] != 3 {
		t.Errorf("non-stream reply: %d %+v", resp.StatusCode, m)
	}

	resp = post(t, s.URL+"/v1/messages?beta=true", `{"model":"m","stream":true,"messages":[{"role":"user","content":"a big one"}]}`)
	var e struct {
		Type  string
		Error struct{ Type, Message string }
	}
	if err := json.NewDecoder(resp.Body).Decode(&e); err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 400 || e.Type != "error" || e.Error.Type != "invalid_request_error" || !strings.HasPrefix(e.Error.Message, "prompt is too long") {
		t.Errorf("error reply: %d %+v", resp.StatusCode, e)
	}

	resp = post(t, s.URL+"/v1/messages/count_tokens?beta=true", `{"model":"m","messages":[{"role":"user","content":"`+strings.Repeat("x", 400)+`"}]}`)
	var ct struct {
		InputTokens int `json:"input_tokens"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&ct); err != nil {
		t.Fatal(err)
	}
	if ct.InputTokens < 100 || ct.InputTokens > 200 {
		t.Errorf("count_tokens = %d for ~450 bytes", ct.InputTokens)
	}

	resp = post(t, s.URL+"/api/hello", `{}`)
	if resp.StatusCode != 404 {
		t.Errorf("unknown path status %d", resp.StatusCode)
	}
	if got := s.Unexpected(); len(got) != 1 || got[0] != "POST /api/hello" {
		t.Errorf("Unexpected = %q", got)
	}
	if n := len(s.Requests()); n != 2 {
		t.Errorf("%d recorded requests, want 2 (count_tokens and 404 excluded)", n)
	}
	if n := s.CountTokensCalls(); n != 1 {
		t.Errorf("CountTokensCalls = %d", n)
	}

	// A gateway without the endpoint.
	s.SetCountTokensReply(Reply{Status: 404, ErrorType: "not_found_error", ErrorMessage: "no count_tokens here"})
	resp = post(t, s.URL+"/v1/messages/count_tokens?beta=true", `{"model":"m","messages":[]}`)
	if resp.StatusCode != 404 {
		t.Errorf("count_tokens with a 404 reply set: status %d", resp.StatusCode)
	}
	if got := s.CountTokensRequests(); len(got) != 2 || got[1].Time.Before(got[0].Time) {
		t.Errorf("CountTokensRequests = %+v", got)
	}
}

// A stalled count_tokens answers nothing until the client gives up.
func TestCountTokensStall(t *testing.T) {
	s := &Server{script: Harmless}
	s.SetCountTokensReply(Reply{Fault: FaultStall})
	ctx, cancel := context.WithCancel(context.Background())
	hr := httptest.NewRequestWithContext(ctx, http.MethodPost, "/v1/messages/count_tokens", strings.NewReader(`{"model":"m","messages":[]}`))
	rec := httptest.NewRecorder()
	done := make(chan struct{})
	go func() {
		s.ServeHTTP(rec, hr)
		close(done)
	}()
	select {
	case <-done:
		t.Fatal("a stalled count_tokens answered")
	case <-time.After(200 * time.Millisecond):
	}
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the stalled count_tokens did not end when the client left")
	}
	if rec.Body.Len() != 0 {
		t.Errorf("a stalled count_tokens wrote %q", rec.Body.String())
	}
}

func TestDelayEndsWhenClientLeaves(t *testing.T) {
	s := &Server{script: func(*Request) Reply { return Reply{Text: "late", Delay: 20 * time.Second} }}
	ctx, cancel := context.WithCancel(context.Background())
	hr := httptest.NewRequestWithContext(ctx, http.MethodPost, "/v1/messages", strings.NewReader(mainBody))
	done := make(chan struct{})
	go func() {
		s.ServeHTTP(httptest.NewRecorder(), hr)
		close(done)
	}()
	time.Sleep(50 * time.Millisecond)
	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("handler still waiting out its delay after the client left")
	}
}

func TestSequenceAndRoute(t *testing.T) {
	main := &Request{Kind: KindMain}
	sub := &Request{Kind: KindSubagent}
	side := &Request{Kind: KindSide}

	seq := Sequence(Reply{Text: "one"}, Reply{Text: "two"})
	var got []string
	for _, r := range []*Request{main, sub, main, side, main, main} {
		got = append(got, seq(r).Text)
	}
	if want := "one ok two ok two two"; strings.Join(got, " ") != want {
		t.Errorf("Sequence gave %q, want %q", strings.Join(got, " "), want)
	}
	if Sequence()(main).Text != "ok" {
		t.Error("empty Sequence should be Harmless")
	}

	route := Route(func(*Request) Reply { return Reply{Text: "M"} }, func(*Request) Reply { return Reply{Text: "S"} }, nil)
	got = nil
	for _, r := range []*Request{main, sub, side} {
		got = append(got, route(r).Text)
	}
	if want := "M S ok"; strings.Join(got, " ") != want {
		t.Errorf("Route gave %q, want %q", strings.Join(got, " "), want)
	}
}

func TestFaultReset(t *testing.T) {
	s := start(t, func(*Request) Reply {
		return Reply{Text: "this answer never ends", Usage: Usage{InputTokens: 5}, Fault: FaultReset}
	})
	resp := post(t, s.URL+"/v1/messages?beta=true", mainBody)
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	b, err := io.ReadAll(resp.Body)
	if err == nil || !strings.Contains(err.Error(), "connection reset") {
		t.Fatalf("read error %v, want a connection reset", err)
	}
	ev := readEvents(t, bytes.NewReader(b))
	var names []string
	for _, e := range ev {
		names = append(names, e.Name)
	}
	if got := strings.Join(names, " "); got != "message_start content_block_start content_block_delta" {
		t.Errorf("events before the reset: %s", got)
	}
	if len(s.Requests()) != 1 {
		t.Errorf("the broken request was not recorded")
	}
}

func TestFaultStallHoldsUntilClientLeaves(t *testing.T) {
	s := start(t, func(*Request) Reply { return Reply{Text: "stuck", Fault: FaultStall} })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, s.URL+"/v1/messages?beta=true", strings.NewReader(mainBody))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	got := make(chan string, 1)
	go func() {
		// Reads what was sent, then blocks: the stream stalls.
		br := bufio.NewReader(resp.Body)
		var seen []string
		for {
			l, err := br.ReadString('\n')
			if strings.HasPrefix(l, "event: ") {
				seen = append(seen, strings.TrimSpace(strings.TrimPrefix(l, "event: ")))
				if len(seen) == 3 {
					got <- strings.Join(seen, " ")
				}
			}
			if err != nil {
				return
			}
		}
	}()
	select {
	case g := <-got:
		if g != "message_start content_block_start content_block_delta" {
			t.Errorf("events before the stall: %s", g)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the stream's start never arrived")
	}
	// Nothing more comes while the client waits.
	done := make(chan struct{})
	go func() { io.Copy(io.Discard, resp.Body); close(done) }()
	select {
	case <-done:
		t.Fatal("the stalled stream ended by itself")
	case <-time.After(300 * time.Millisecond):
	}
	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the stalled stream outlived the client")
	}
}

func TestFaultStallEndsOnClose(t *testing.T) {
	s, err := Start(func(*Request) Reply { return Reply{Fault: FaultStall} })
	if err != nil {
		t.Fatal(err)
	}
	resp := post(t, s.URL+"/v1/messages?beta=true", mainBody)
	done := make(chan error, 1)
	go func() { _, err := io.ReadAll(resp.Body); done <- err }()
	time.Sleep(100 * time.Millisecond)
	s.Close()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Close left a stalled stream open")
	}
}

func TestErrorReplies(t *testing.T) {
	for _, tc := range []struct {
		reply  Reply
		status int
		typ    string
		msg    string
	}{
		{ServerError(), 500, "api_error", "Internal server error"},
		{Overloaded(), 529, "overloaded_error", "Overloaded"},
		{Overflow(250123, 200000), 400, "invalid_request_error", "prompt is too long: 250123 tokens > 200000 maximum"},
	} {
		s := start(t, func(*Request) Reply { return tc.reply })
		resp := post(t, s.URL+"/v1/messages?beta=true", mainBody)
		var e struct {
			Type  string
			Error struct{ Type, Message string }
		}
		if err := json.NewDecoder(resp.Body).Decode(&e); err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != tc.status || e.Type != "error" || e.Error.Type != tc.typ || e.Error.Message != tc.msg {
			t.Errorf("%d %+v, want %d %s %q", resp.StatusCode, e, tc.status, tc.typ, tc.msg)
		}
	}
}

func TestSessionIDAndRetryCount(t *testing.T) {
	s := start(t, Harmless)
	withMeta := strings.Replace(mainBody, `"stream":true,`,
		`"stream":true,"metadata":{"user_id":"{\"device_id\":\"d\",\"account_uuid\":\"\",\"session_id\":\"from-metadata\"}"},`, 1)
	post(t, s.URL+"/v1/messages?beta=true", withMeta)

	req, _ := http.NewRequest(http.MethodPost, s.URL+"/v1/messages?beta=true", strings.NewReader(withMeta))
	req.Header.Set("X-Claude-Code-Session-Id", "from-header")
	req.Header.Set("X-Stainless-Retry-Count", "2")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	post(t, s.URL+"/v1/messages?beta=true", mainBody)

	reqs := s.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d requests", len(reqs))
	}
	for i, want := range []struct {
		session string
		retry   int
	}{{"from-metadata", 0}, {"from-header", 2}, {"", 0}} {
		if reqs[i].SessionID != want.session || reqs[i].RetryCount != want.retry {
			t.Errorf("request %d: session %q retry %d, want %q %d", i+1, reqs[i].SessionID, reqs[i].RetryCount, want.session, want.retry)
		}
	}
}
