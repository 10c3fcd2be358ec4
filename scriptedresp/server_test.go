package scriptedresp

import (
	"bufio"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"
)

// event is one SSE event of an answer.
type event struct {
	Name string
	Data map[string]any
}

func post(t *testing.T, s *Server, body string) (*http.Response, []event) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, s.URL+"/responses", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+APIKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var events []event
	sc := bufio.NewScanner(resp.Body)
	var name string
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			var d map[string]any
			if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &d); err != nil {
				t.Fatalf("data is not JSON: %q", line)
			}
			if d["type"] != name {
				t.Fatalf("event %q carries type %v", name, d["type"])
			}
			events = append(events, event{name, d})
		}
	}
	return resp, events
}

func names(events []event) string {
	var out []string
	for _, e := range events {
		out = append(out, e.Name)
	}
	return strings.Join(out, ",")
}

const firstRequest = `{"model":"gpt-5","instructions":"be brief","stream":true,
 "tools":[{"type":"function","name":"exec_command"},{"type":"web_search"}],
 "input":[{"type":"message","role":"developer","content":[{"type":"input_text","text":"dev"}]},
          {"type":"message","role":"user","content":[{"type":"input_text","text":"run it"}]},
          {"type":"function_call","call_id":"c1","name":"exec_command","arguments":"{}"},
          {"type":"function_call_output","call_id":"c1","output":"hello"}]}`

func TestStreamsMessageCallAndUsage(t *testing.T) {
	s, err := Start(Sequence(Reply{Text: "running", Calls: []Call{{ID: "call_1", Cmd: "ls -l"}},
		Usage: Usage{InputTokens: 5000, CachedInputTokens: 4000, OutputTokens: 12}}))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	resp, events := post(t, s, firstRequest)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("status %d, content type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	if got := names(events); got != "response.created,response.output_item.done,response.output_item.done,response.completed" {
		t.Fatalf("events %s", got)
	}
	msg := events[1].Data["item"].(map[string]any)
	if msg["type"] != "message" || msg["content"].([]any)[0].(map[string]any)["text"] != "running" {
		t.Errorf("message item %v", msg)
	}
	call := events[2].Data["item"].(map[string]any)
	if call["type"] != "function_call" || call["name"] != "exec_command" || call["call_id"] != "call_1" || call["arguments"] != `{"cmd":"ls -l"}` {
		t.Errorf("call item %v", call)
	}
	usage := events[3].Data["response"].(map[string]any)["usage"].(map[string]any)
	if usage["input_tokens"] != 5000.0 || usage["output_tokens"] != 12.0 || usage["total_tokens"] != 5012.0 ||
		usage["input_tokens_details"].(map[string]any)["cached_tokens"] != 4000.0 {
		t.Errorf("usage %v", usage)
	}

	reqs := s.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests recorded", len(reqs))
	}
	r := reqs[0]
	if r.Model != "gpt-5" || r.Instructions != "be brief" || !r.Stream || strings.Join(r.Tools, ",") != "exec_command,web_search" {
		t.Errorf("request %+v", r)
	}
	if r.LastUserText != "run it" || len(r.Messages) != 2 || r.Messages[0].Role != "developer" {
		t.Errorf("messages %+v, last user %q", r.Messages, r.LastUserText)
	}
	if len(r.Outputs) != 1 || r.Outputs[0] != (Output{CallID: "c1", Output: "hello"}) {
		t.Errorf("outputs %+v", r.Outputs)
	}
	if r.Compaction || r.Answered.IsZero() || r.Header.Get("Authorization") != "REDACTED" {
		t.Errorf("compaction %v, answered %v, authorization %q", r.Compaction, r.Answered, r.Header.Get("Authorization"))
	}
}

func TestMarksCompactionRequest(t *testing.T) {
	s, err := Start(Sequence(Reply{Text: "summary"}))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	post(t, s, `{"model":"m","stream":true,"input":[{"type":"message","role":"user","content":[{"type":"input_text","text":"`+CompactionPrompt+`. Create a handoff summary"}]}]}`)
	if r := s.Requests(); len(r) != 1 || !r[0].Compaction {
		t.Fatalf("requests %+v: want one marked as compaction", r)
	}
}

func TestOverflowFailsTheStream(t *testing.T) {
	s, err := Start(Sequence(Overflow()))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	resp, events := post(t, s, firstRequest)
	if resp.StatusCode != http.StatusOK || names(events) != "response.created,response.failed" {
		t.Fatalf("status %d, events %s", resp.StatusCode, names(events))
	}
	e := events[1].Data["response"].(map[string]any)["error"].(map[string]any)
	if e["code"] != "context_length_exceeded" {
		t.Errorf("error %v", e)
	}
}

func TestHTTPErrors(t *testing.T) {
	for _, tc := range []struct {
		reply  Reply
		status int
		code   string
		retry  string
	}{
		{Unauthorized(), 401, "invalid_api_key", ""},
		{RateLimited(1500 * time.Millisecond), 429, "rate_limit_exceeded", "2"},
	} {
		s, err := Start(Sequence(tc.reply))
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.Post(s.URL+"/responses", "application/json", strings.NewReader(firstRequest))
		if err != nil {
			t.Fatal(err)
		}
		var body struct {
			Error struct{ Code string } `json:"error"`
		}
		_ = json.NewDecoder(resp.Body).Decode(&body)
		resp.Body.Close()
		_ = s.Close()
		if resp.StatusCode != tc.status || body.Error.Code != tc.code || resp.Header.Get("Retry-After") != tc.retry {
			t.Errorf("got %d %q retry-after %q, want %d %q %q", resp.StatusCode, body.Error.Code, resp.Header.Get("Retry-After"), tc.status, tc.code, tc.retry)
		}
	}
}

func TestModelsAndUnexpected(t *testing.T) {
	s, err := Start(Sequence(Reply{Text: "x"}))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	u, _ := url.Parse(s.URL)
	if host := u.Hostname(); host != "127.0.0.1" {
		t.Fatalf("listens on %s, want 127.0.0.1 only", host)
	}
	resp, err := http.Get(s.URL + "/models")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || s.ModelListings() != 1 {
		t.Errorf("GET /v1/models: %d, %d listings counted", resp.StatusCode, s.ModelListings())
	}
	resp, err = http.Get(s.URL + "/elsewhere")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound || strings.Join(s.Unexpected(), ";") != "GET /v1/elsewhere" {
		t.Errorf("status %d, unexpected %v", resp.StatusCode, s.Unexpected())
	}
	if len(s.Requests()) != 0 {
		t.Errorf("recorded %d responses requests, want 0", len(s.Requests()))
	}
}

// The Codex screen's title request, on a thread with no tools, is answered
// by the server with TitleReply, not by the job's script; the same words
// with tools offered are the script's.
func TestAnswersTitleRequest(t *testing.T) {
	called := 0
	s, err := Start(func(*Request) Reply { called++; return Reply{Text: "from the script"} })
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	title := `{"type":"message","role":"user","content":[{"type":"input_text","text":"` + TitlePrompt + ` for this."}]}`
	_, evs := post(t, s, `{"model":"m","stream":true,"input":[`+title+`]}`)
	got := ""
	for _, e := range evs {
		if b, err := json.Marshal(e.Data); err == nil {
			if t := gjson.GetBytes(b, "item.content.0.text").String(); t != "" {
				got = t
			}
		}
	}
	if called != 0 || got != TitleReply.Text {
		t.Fatalf("the title request reached the script %d times and was answered %q", called, got)
	}
	post(t, s, `{"model":"m","stream":true,"tools":[{"type":"function","name":"exec_command"}],"input":[`+title+`]}`)
	if r := s.Requests(); called != 1 || len(r) != 2 || !r[0].Title || r[1].Title {
		t.Fatalf("script called %d times; requests %+v", called, r)
	}
}
