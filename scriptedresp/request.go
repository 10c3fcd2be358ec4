package scriptedresp

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// CompactionPrompt is how Codex's compaction request begins (the text of
// one of its input messages).
const CompactionPrompt = "You are performing a CONTEXT CHECKPOINT COMPACTION"

// Message is one message item of a request's input, its text parts joined.
type Message struct {
	Role string
	Text string
}

// Output is one function_call_output item of a request's input.
type Output struct {
	CallID string
	Output string
}

// Request is one recorded /v1/responses call.
type Request struct {
	Seq int
	// Time is when the request arrived; Answered, when its answer was
	// written in full (zero while it is being answered, or when the client
	// went away first).
	Time     time.Time
	Answered time.Time
	Header   http.Header // authorization is REDACTED
	Body     []byte      // raw JSON

	Model        string
	Instructions string
	Stream       bool
	Tools        []string // names of the offered tools

	// Messages are the input's message items, in order.
	Messages []Message
	// Outputs are the input's function_call_output items, in order.
	Outputs []Output
	// LastUserText is the text of the last message with role "user".
	LastUserText string
	// Compaction: some message begins with CompactionPrompt.
	Compaction bool
	// Title: the Codex CLI's screen asks, on a side thread of its own
	// with no tools, for the title of a new thread (TitlePrompt). The
	// server answers it itself (TitleReply): no script of a job's
	// expects it.
	Title bool
}

// TitlePrompt begins the Codex CLI's screen's request for a thread's
// title (measured on 0.171.0).
const TitlePrompt = "Generate a concise, single-line task title"

// TitleReply is the server's answer to a Title request.
var TitleReply = Reply{Text: "Scripted task", Usage: Usage{InputTokens: 200, OutputTokens: 5}}

// apiRequest is the part of a Responses API request body we read.
type apiRequest struct {
	Model        string `json:"model"`
	Instructions string `json:"instructions"`
	Stream       bool   `json:"stream"`
	Tools        []struct {
		Name string `json:"name"`
		Type string `json:"type"`
	} `json:"tools"`
	Input []struct {
		Type    string          `json:"type"`
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
		CallID  string          `json:"call_id"`
		Output  json.RawMessage `json:"output"`
	} `json:"input"`
}

func parseRequest(body []byte) (Request, error) {
	var a apiRequest
	if err := json.Unmarshal(body, &a); err != nil {
		return Request{}, fmt.Errorf("parse responses request: %w", err)
	}
	r := Request{Body: body, Model: a.Model, Instructions: a.Instructions, Stream: a.Stream}
	for _, t := range a.Tools {
		name := t.Name
		if name == "" {
			name = t.Type
		}
		r.Tools = append(r.Tools, name)
	}
	for _, in := range a.Input {
		switch {
		case in.Type == "function_call_output":
			r.Outputs = append(r.Outputs, Output{CallID: in.CallID, Output: text(in.Output)})
		case in.Type == "message" || (in.Type == "" && in.Role != ""):
			m := Message{Role: in.Role, Text: text(in.Content)}
			r.Messages = append(r.Messages, m)
			if m.Role == "user" {
				r.LastUserText = m.Text
			}
			if strings.HasPrefix(strings.TrimSpace(m.Text), CompactionPrompt) {
				r.Compaction = true
			}
			if m.Role == "user" && len(a.Tools) == 0 && strings.HasPrefix(strings.TrimSpace(m.Text), TitlePrompt) {
				r.Title = true
			}
		}
	}
	return r, nil
}

// text flattens content that is a string or an array of parts with text.
func text(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &parts) != nil {
		return ""
	}
	var out []string
	for _, p := range parts {
		if p.Text != "" {
			out = append(out, p.Text)
		}
	}
	return strings.Join(out, "\n")
}
