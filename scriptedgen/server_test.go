package scriptedgen

import (
	"bufio"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

func post(t *testing.T, s *Server, path, body string) (*http.Response, []string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, s.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-Goog-Api-Key", APIKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var chunks []string
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if d, ok := strings.CutPrefix(line, "data: "); ok {
			if !json.Valid([]byte(d)) {
				t.Fatalf("chunk is not JSON: %q", d)
			}
			chunks = append(chunks, d)
		} else if line != "" && !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
			chunks = append(chunks, line)
		}
	}
	return resp, chunks
}

const mainRequest = `{"contents":[{"role":"user","parts":[{"text":"<session_context>…</session_context>"},{"text":"run it"}]},
 {"role":"model","parts":[{"functionCall":{"name":"run_shell_command","args":{"command":"ls"}}}]},
 {"role":"user","parts":[{"functionResponse":{"name":"run_shell_command","response":{"output":"a.txt"}}}]}],
 "systemInstruction":{"parts":[{"text":"You are Gemini CLI"}]},
 "tools":[{"functionDeclarations":[{"name":"run_shell_command"},{"name":"read_file"}]}]}`

func TestStreamsTextCallsAndUsage(t *testing.T) {
	s, err := Start(Sequence(Reply{Text: "running", Calls: []Call{Shell("ls -l")},
		Usage: Usage{PromptTokens: 5000, CachedTokens: 4000, OutputTokens: 12}}))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	resp, chunks := post(t, s, "/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse", mainRequest)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("status %d, content type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	if len(chunks) != 2 {
		t.Fatalf("want a text chunk and a call chunk, got %d: %q", len(chunks), chunks)
	}
	if got := gjson.Get(chunks[0], "candidates.0.content.parts.0.text").String(); got != "running" {
		t.Errorf("text %q", got)
	}
	if gjson.Get(chunks[0], "usageMetadata").Exists() || gjson.Get(chunks[0], "candidates.0.finishReason").Exists() {
		t.Errorf("the first chunk carries the end: %s", chunks[0])
	}
	last := chunks[1]
	if got := gjson.Get(last, "candidates.0.content.parts.0.functionCall.args.command").String(); got != "ls -l" {
		t.Errorf("call %s", last)
	}
	if gjson.Get(last, "candidates.0.finishReason").String() != "STOP" ||
		gjson.Get(last, "usageMetadata.promptTokenCount").Int() != 5000 ||
		gjson.Get(last, "usageMetadata.cachedContentTokenCount").Int() != 4000 ||
		gjson.Get(last, "usageMetadata.candidatesTokenCount").Int() != 12 {
		t.Errorf("last chunk %s", last)
	}
	reqs := s.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests recorded", len(reqs))
	}
	r := reqs[0]
	if r.Model != "gemini-2.5-pro" || !r.Stream || r.Side || r.Compression || r.Answered.IsZero() {
		t.Errorf("request %+v", r)
	}
	if strings.Join(r.Tools, ",") != "run_shell_command,read_file" || r.System != "You are Gemini CLI" {
		t.Errorf("tools %q, system %q", r.Tools, r.System)
	}
	if r.LastUserText != "<session_context>…</session_context>\nrun it" {
		t.Errorf("last user text %q", r.LastUserText)
	}
	if len(r.Responses) != 1 || r.Responses[0].Name != "run_shell_command" || !strings.Contains(r.Responses[0].Response, "a.txt") {
		t.Errorf("responses %+v", r.Responses)
	}
	if r.Header.Get("X-Goog-Api-Key") != "REDACTED" {
		t.Errorf("the key is recorded: %q", r.Header.Get("X-Goog-Api-Key"))
	}
}

func TestSideAndCompressionRequests(t *testing.T) {
	s, err := Start(Sequence(Reply{Text: "main", Usage: Usage{PromptTokens: 100}}))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	_, side := post(t, s, "/v1beta/models/gemini-3.5-flash-lite:generateContent",
		`{"contents":[{"role":"user","parts":[{"text":"who speaks next?"}]}]}`)
	if len(side) != 1 || !strings.Contains(gjson.Get(side[0], "candidates.0.content.parts.0.text").String(), "next_speaker") {
		t.Errorf("side answer %q", side)
	}
	_, comp := post(t, s, "/v1beta/models/gemini-2.5-pro:generateContent",
		`{"contents":[{"role":"user","parts":[{"text":"First, reason"}]}],"systemInstruction":{"parts":[{"text":"You are a specialized system component responsible for `+CompressionPrompt+`."}]}}`)
	if len(comp) != 1 || gjson.Get(comp[0], "candidates.0.content.parts.0.text").String() != "main" {
		t.Errorf("compression answer %q (a script's, as a main request)", comp)
	}
	reqs := s.Requests()
	if len(reqs) != 2 || !reqs[0].Side || reqs[0].Stream || reqs[1].Side || !reqs[1].Compression {
		t.Fatalf("requests %+v", reqs)
	}
	if m := s.Main(); len(m) != 1 || m[0].Seq != 2 {
		t.Errorf("main %+v", m)
	}
}

func TestErrorsAndUnknownPaths(t *testing.T) {
	s, err := Start(Sequence(RateLimited(3), Overflow()))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	resp, body := post(t, s, "/v1beta/models/m:streamGenerateContent?alt=sse", mainRequest)
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != "1" ||
		len(body) != 1 || gjson.Get(body[0], "error.status").String() != "RESOURCE_EXHAUSTED" || gjson.Get(body[0], "error.code").Int() != 429 {
		t.Errorf("rate limit: %d %q %q", resp.StatusCode, resp.Header.Get("Retry-After"), body)
	}
	resp, body = post(t, s, "/v1beta/models/m:streamGenerateContent?alt=sse", mainRequest)
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(gjson.Get(body[0], "error.message").String(), "exceeds the maximum number of tokens") {
		t.Errorf("overflow: %d %q", resp.StatusCode, body)
	}
	if resp, _ := post(t, s, "/v1beta/models/m:countTokens", `{"contents":[]}`); resp.StatusCode != http.StatusOK || s.TokenCounts() != 1 {
		t.Errorf("countTokens: %d, %d counted", resp.StatusCode, s.TokenCounts())
	}
	post(t, s, "/v1/other", `{}`)
	resp, _ = post(t, s, "/v1beta/models/m:streamGenerateContent", `not json`)
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("bad JSON: %d", resp.StatusCode)
	}
	if u := s.Unexpected(); len(u) != 2 || u[0] != "POST /v1/other" || !strings.Contains(u[1], "parse generate request") {
		t.Errorf("unexpected %q", u)
	}
}

func TestShellOutput(t *testing.T) {
	got := ShellOutput(`{"output":"<untrusted_context>\nOutput: one\ntwo\nProcess Group PGID: 15979\n</untrusted_context>"}`)
	if got != "one\ntwo" {
		t.Errorf("output %q", got)
	}
	if got := ShellOutput(`{"output":"<untrusted_context>\nOutput: (empty)\nExit Code: 1\nProcess Group PGID: 1\n</untrusted_context>"}`); got != "(empty)" {
		t.Errorf("output %q", got)
	}
	if ShellOutput(`not json`) != "" {
		t.Error("output of no JSON")
	}
}
