package scriptedapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// Kind says which part of the harness sent a request.
type Kind string

// Request kinds.
const (
	// KindMain is the main thread's turn.
	KindMain Kind = "main"
	// KindSubagent is a subagent (Task/Agent tool) turn.
	KindSubagent Kind = "subagent"
	// KindSide is a non-streamed or tool-less side call (titles, topic
	// detection, …) that is part of no conversation flower cares about.
	KindSide Kind = "side"
)

// ToolResult is one tool_result block of the last user message.
type ToolResult struct {
	ToolUseID string
	Content   string
	IsError   bool
}

// Request is one recorded /v1/messages call.
type Request struct {
	Seq int
	// Time is when the request arrived; Answered, when its answer was
	// written in full (zero while it is being answered, or when the client
	// went away first).
	Time     time.Time
	Answered time.Time
	Path     string
	Header   http.Header // x-api-key and authorization are REDACTED
	Body     []byte      // raw JSON

	Model     string
	System    string // system prompt flattened to text
	Stream    bool
	MaxTokens int
	Tools     []string // names of the offered tools

	// LastUserText is the text of the last message with role "user" (the
	// array may end with role "system"), text blocks only, concatenated;
	// then MidTurn, on a line of its own: what the user said last; then
	// the harness's reminders that it put inside a tool's result instead
	// (reminders).
	LastUserText string
	// MidTurn is how the harness surfaced the prompts the user sent while
	// the turn ran, beside the tool's result, from its words "The user
	// sent a new message while you were working:\n<the prompt>" on
	// (midTurnMark). On 2.1.328 they come in a message with role
	// "system" after the last user message, or, in a <system-reminder>
	// at the end of the last tool result's content (seen with a Read
	// tool and claude-haiku-4-5); on 2.1.332, in a text block of the
	// last user message, after the tool result.
	MidTurn string
	// LastToolResults are the tool_result blocks of that message.
	LastToolResults []ToolResult
	// AllText is every text of every message (tool results included; the
	// system prompt is in System).
	AllText     string
	NumMessages int
	// Replies counts the messages with role "assistant": 0 in a
	// session's first request, however many user messages the harness
	// split its prompt into (a file the prompt mentions makes one more).
	Replies int

	// SessionID is the harness session that sent the request: the
	// X-Claude-Code-Session-Id header, else the session_id inside
	// metadata.user_id (both carry it on 2.1.328).
	SessionID string
	// RetryCount is the harness's X-Stainless-Retry-Count: 0 for a first
	// try, n for its n-th retry of the same request.
	RetryCount int

	// Kind classifies the request; see the package doc for the rule.
	Kind Kind
	// IsSubagent is Kind == KindSubagent.
	IsSubagent bool
}

// apiRequest is the part of a Messages API request body we read.
type apiRequest struct {
	Model     string          `json:"model"`
	System    json.RawMessage `json:"system"`
	Stream    bool            `json:"stream"`
	MaxTokens int             `json:"max_tokens"`
	Tools     []struct {
		Name string `json:"name"`
	} `json:"tools"`
	Messages []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
	Metadata struct {
		// UserID is itself JSON: {"device_id":…,"session_id":…}.
		UserID string `json:"user_id"`
	} `json:"metadata"`
}

type contentBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
	IsError   bool            `json:"is_error"`
}

func parseRequest(body []byte) (Request, error) {
	var a apiRequest
	if err := json.Unmarshal(body, &a); err != nil {
		return Request{}, fmt.Errorf("parse messages request: %w", err)
	}
	r := Request{
		Body:        body,
		Model:       a.Model,
		System:      flatten(a.System),
		Stream:      a.Stream,
		MaxTokens:   a.MaxTokens,
		NumMessages: len(a.Messages),
	}
	for _, t := range a.Tools {
		r.Tools = append(r.Tools, t.Name)
	}
	var user struct {
		SessionID string `json:"session_id"`
	}
	if json.Unmarshal([]byte(a.Metadata.UserID), &user) == nil {
		r.SessionID = user.SessionID
	}
	var all []string
	last := -1
	for i, m := range a.Messages {
		if t := flatten(m.Content); t != "" {
			all = append(all, t)
		}
		switch m.Role {
		case "user":
			last = i
		case "assistant":
			r.Replies++
		}
	}
	r.AllText = strings.Join(all, "\n")
	if last >= 0 {
		c := a.Messages[last].Content
		r.LastUserText = flattenTop(c)
		r.LastToolResults = toolResults(c)
		// Where the message is not in LastUserText already, it is
		// added to it.
		var mid, elsewhere []string
		if t, ok := midTurn(r.LastUserText); ok {
			mid = append(mid, t)
		}
		for _, tr := range r.LastToolResults {
			if t, ok := midTurn(tr.Content); ok {
				mid, elsewhere = append(mid, t), append(elsewhere, t)
			} else if t, ok := reminders(tr.Content); ok {
				elsewhere = append(elsewhere, t)
			}
		}
		for _, m := range a.Messages[last+1:] {
			if t, ok := midTurn(flattenTop(m.Content)); m.Role == "system" && ok {
				mid, elsewhere = append(mid, t), append(elsewhere, t)
			}
		}
		r.MidTurn = strings.Join(mid, "\n")
		if len(elsewhere) > 0 {
			r.LastUserText = strings.TrimPrefix(r.LastUserText+"\n"+strings.Join(elsewhere, "\n"), "\n")
		}
	}
	return r, nil
}

// blocks decodes content that is either a string or an array of blocks.
func blocks(raw json.RawMessage) []contentBlock {
	if len(raw) == 0 {
		return nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return []contentBlock{{Type: "text", Text: s}}
	}
	var bs []contentBlock
	if json.Unmarshal(raw, &bs) != nil {
		return nil
	}
	return bs
}

// flattenTop joins the top-level text blocks only.
func flattenTop(raw json.RawMessage) string {
	var parts []string
	for _, b := range blocks(raw) {
		if b.Type == "text" && b.Text != "" {
			parts = append(parts, b.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// flatten joins every text, including the texts inside tool results.
func flatten(raw json.RawMessage) string {
	var parts []string
	for _, b := range blocks(raw) {
		switch b.Type {
		case "text":
			if b.Text != "" {
				parts = append(parts, b.Text)
			}
		case "tool_result":
			if t := flatten(b.Content); t != "" {
				parts = append(parts, t)
			}
		}
	}
	return strings.Join(parts, "\n")
}

func toolResults(raw json.RawMessage) []ToolResult {
	var out []ToolResult
	for _, b := range blocks(raw) {
		if b.Type == "tool_result" {
			out = append(out, ToolResult{ToolUseID: b.ToolUseID, Content: flatten(b.Content), IsError: b.IsError})
		}
	}
	return out
}

// midTurnMark opens the message with role "system" in which the harness
// surfaces a prompt sent while its turn ran (2.1.328; checked on the real
// binary by the integration tests' harness facts).
const midTurnMark = "sent a new message while you were working"

// midTurn is text from the line that holds midTurnMark on, if it holds
// one.
func midTurn(text string) (string, bool) {
	i := strings.Index(text, midTurnMark)
	if i < 0 {
		return "", false
	}
	return text[strings.LastIndexByte(text[:i], '\n')+1:], true
}

// reminderMark opens one of the harness's own reminders. Where a user
// message begins with a tool's result, the harness puts the reminders it
// sends with the message (the text of a file the prompt mentions
// included) inside that result, after the tool's output (2.1.328: the
// rejected result of a tool use a person interrupted).
const reminderMark = "\n<system-reminder>"

// reminders is a tool result's text from the harness's first reminder on,
// if it holds one.
func reminders(text string) (string, bool) {
	i := strings.Index(text, reminderMark)
	if i < 0 {
		return "", false
	}
	return text[i+1:], true
}

// subagentMark is what the harness puts in the billing line that opens a
// subagent's system prompt.
const subagentMark = "cc_is_subagent=true"

// classify tells main turns from subagent turns and side calls; see the
// package doc for the evidence.
func classify(r *Request) Kind {
	switch {
	case strings.Contains(r.System, subagentMark):
		return KindSubagent
	case !r.Stream || len(r.Tools) == 0:
		return KindSide
	default:
		return KindMain
	}
}
