package transcript

import (
	"bytes"
	"errors"
	"strings"
	"time"
	"unsafe"

	"github.com/tidwall/gjson"
)

// Kind classifies one stream-json record.
type Kind int

// The kinds of records flower distinguishes. Anything else is KindOther and
// is passed through untouched.
const (
	KindOther           Kind = iota
	KindInit                 // {"type":"system","subtype":"init"}, at the start of every turn
	KindSystem               // other system lines (task_started, compact_boundary, …)
	KindAssistant            // an assistant message, main thread or subagent
	KindUser                 // tool results and interruption notes
	KindResult               // one per finished turn
	KindControlResponse      // the answer to a control_request we sent
)

var kindNames = [...]string{"other", "init", "system", "assistant", "user", "result", "control_response"}

// String names the kind, for logs and tests.
func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "unknown"
}

// ErrNotJSON is returned by Decode for a line that is not one JSON object.
var ErrNotJSON = errors.New("not a JSON object")

// Usage is the token accounting of one API response as the harness reports it.
type Usage struct {
	InputTokens              int
	CacheCreationInputTokens int
	CacheReadInputTokens     int
	OutputTokens             int
}

// Context is the size of the prompt that produced the response: what the
// model saw (DESIGN.md «Context meter»). Output tokens are not part of it.
func (u Usage) Context() int {
	return u.InputTokens + u.CacheCreationInputTokens + u.CacheReadInputTokens
}

// ToolUse is one tool call in an assistant message.
type ToolUse struct {
	ID    string
	Name  string
	Input string // raw JSON
}

// Compaction is what a compact_boundary line says of a compaction.
type Compaction struct {
	Trigger    string // "auto" or "manual"
	PreTokens  int
	PostTokens int
}

// Retry is what an api_retry line says: the harness will ask the API again
// after Delay, for the Attempt-th time of MaxRetries.
type Retry struct {
	Attempt, MaxRetries int
	Delay               time.Duration
	Status              int // the HTTP status that failed (429, 529, …)
	Error               string
}

// Event is one decoded stream-json record. Only the fields of its Kind are set.
type Event struct {
	Kind      Kind
	Type      string
	Subtype   string
	SessionID string

	// init
	Model string // also set on assistant lines (from message.model)

	// assistant
	MessageID       string
	ParentToolUseID string // non-empty for a subagent's messages
	Usage           Usage
	Text            string // text blocks joined with "\n"
	ToolUses        []ToolUse
	APIError        bool   // a synthetic message carrying an API error ("Prompt is too long")
	ErrorCode       string // such a message's error: "authentication_failed", "rate_limit", "invalid_request" …
	StopReason      string // message.stop_reason: "end_turn", "tool_use", …

	// Sidechain marks a subagent's assistant or user line in a transcript
	// file, where the mark is "isSidechain" rather than parent_tool_use_id.
	Sidechain bool

	// user
	Interrupted bool // the harness noted "[Request interrupted by user…]"
	// Replay: the harness's echo of a user line flower wrote to its stdin
	// (--replay-user-messages), written as it takes that prompt: into
	// the running turn, beside a tool's result, or as a turn of its own
	// (DESIGN.md «Queued cut»).
	Replay bool

	// result
	IsError        bool
	Result         string
	TotalCostUSD   float64 // cumulative for the harness process
	NumTurns       int
	TerminalReason string
	APIErrorStatus int            // the HTTP status of the API error that ended the turn, 0 for none
	ContextWindow  int            // largest modelUsage[*].contextWindow
	Windows        map[string]int // modelUsage: each model's contextWindow
	// StopReason (above) is also set on a result: the stop_reason of the
	// turn's last reply ("end_turn" when the turn ended on its own).

	// Version is the harness's version: claude_code_version on an init
	// line, "version" on the lines of a transcript file.
	Version string

	// system
	// Thrashing: a line other than a reply says "Autocompact is
	// thrashing", the harness's word that its compaction keeps failing.
	Thrashing bool
	// Compact is set on a compact_boundary line (compact_metadata).
	Compact *Compaction
	// Retry is set on an api_retry line: the harness waits and asks the
	// API again.
	Retry *Retry

	// control_response
	RequestID    string
	ControlError string // set when the response's subtype is "error"
	Response     gjson.Result

	// Raw is the line as read. It aliases the reader's buffer: copy it to keep it.
	Raw []byte
}

// MainThread reports whether an assistant or user record belongs to the main
// thread rather than to a subagent.
func (e *Event) MainThread() bool { return e.ParentToolUseID == "" && !e.Sidechain }

// Synthetic reports whether an assistant record was made up by the harness
// (e.g. an API error turned into a message) rather than returned by the API;
// its usage is zero and must not move the context meter.
func (e *Event) Synthetic() bool { return e.Model == "<synthetic>" || e.APIError }

// Decode decodes one stream-json line. It returns ErrNotJSON for a line that
// is not a JSON object (garbage, a torn line); such lines are to be skipped.
func Decode(line []byte) (Event, error) {
	if !gjson.ValidBytes(line) {
		return Event{}, ErrNotJSON
	}
	return decode(line, gjson.ParseBytes(line))
}

// DecodeOwned is Decode for a line that is the caller's own and never
// changes again: it is parsed in place, not copied first, and the event's
// strings may share its memory (as its Raw does). A reader of a long
// stream copies each line once this way, not twice.
func DecodeOwned(line []byte) (Event, error) {
	if len(line) == 0 || !gjson.ValidBytes(line) {
		return Event{}, ErrNotJSON
	}
	return decode(line, gjson.Parse(unsafe.String(&line[0], len(line))))
}

func decode(line []byte, root gjson.Result) (Event, error) {
	if !root.IsObject() {
		return Event{}, ErrNotJSON
	}
	ev := Event{Raw: line}
	// The keys every line is asked for, in one pass over it: a Get of
	// each scanned the whole line again for every key it lacks (a stream
	// line has no isSidechain, sessionId or version). The first of a key
	// wins, as with Get.
	var sessionID string
	var seen uint8
	first := func(bit uint8) bool {
		if seen&bit != 0 {
			return false
		}
		seen |= bit
		return true
	}
	root.ForEach(func(k, v gjson.Result) bool {
		switch k.Str {
		case "type":
			if first(1) {
				ev.Type = v.String()
			}
		case "subtype":
			if first(2) {
				ev.Subtype = v.String()
			}
		case "session_id":
			if first(4) {
				ev.SessionID = v.String()
			}
		case "sessionId":
			if first(8) {
				sessionID = v.String()
			}
		case "isSidechain":
			if first(16) {
				ev.Sidechain = v.Bool()
			}
		case "version":
			if first(32) {
				ev.Version = v.String()
			}
		case "isReplay":
			if first(64) {
				ev.Replay = v.Bool()
			}
		}
		return true
	})
	if ev.SessionID == "" {
		// Transcript files spell it sessionId.
		ev.SessionID = sessionID
	}
	ev.Thrashing = ev.Type != "assistant" && bytes.Contains(line, []byte("Autocompact is thrashing"))
	switch ev.Type {
	case "system":
		decodeSystem(&ev, root)
	case "assistant":
		ev.Kind = KindAssistant
		decodeAssistant(&ev, root)
	case "user":
		ev.Kind = KindUser
		ev.ParentToolUseID = root.Get("parent_tool_use_id").String()
		// The text is joined only for a line that holds the mark: a tool
		// result is most of a stream, and long.
		ev.Interrupted = bytes.Contains(line, interruptMark) &&
			strings.Contains(messageText(root.Get("message.content")), string(interruptMark))
	case "result":
		decodeResult(&ev, root)
	case "control_response":
		decodeControlResponse(&ev, root)
	}
	return ev, nil
}

func decodeSystem(ev *Event, root gjson.Result) {
	ev.Kind = KindSystem
	switch ev.Subtype {
	case "init":
		ev.Kind = KindInit
		ev.Model = root.Get("model").String()
		ev.Version = root.Get("claude_code_version").String()
	case "compact_boundary":
		md := root.Get("compact_metadata")
		ev.Compact = &Compaction{Trigger: md.Get("trigger").String(),
			PreTokens: int(md.Get("pre_tokens").Int()), PostTokens: int(md.Get("post_tokens").Int())}
	case "api_retry":
		ev.Retry = &Retry{Attempt: int(root.Get("attempt").Int()), MaxRetries: int(root.Get("max_retries").Int()),
			Delay:  time.Duration(root.Get("retry_delay_ms").Int()) * time.Millisecond,
			Status: int(root.Get("error_status").Int()), Error: root.Get("error").String()}
	}
}

func decodeResult(ev *Event, root gjson.Result) {
	ev.Kind = KindResult
	ev.IsError = root.Get("is_error").Bool()
	ev.Result = root.Get("result").String()
	ev.TotalCostUSD = root.Get("total_cost_usd").Float()
	ev.NumTurns = int(root.Get("num_turns").Int())
	ev.TerminalReason = root.Get("terminal_reason").String()
	ev.APIErrorStatus = int(root.Get("api_error_status").Int())
	ev.StopReason = root.Get("stop_reason").String()
	root.Get("modelUsage").ForEach(func(model, mu gjson.Result) bool {
		w := int(mu.Get("contextWindow").Int())
		if w > ev.ContextWindow {
			ev.ContextWindow = w
		}
		if w > 0 {
			if ev.Windows == nil {
				ev.Windows = map[string]int{}
			}
			ev.Windows[model.String()] = w
		}
		return true
	})
}

func decodeControlResponse(ev *Event, root gjson.Result) {
	ev.Kind = KindControlResponse
	resp := root.Get("response")
	ev.RequestID = resp.Get("request_id").String()
	if resp.Get("subtype").String() == "error" {
		ev.ControlError = resp.Get("error").String()
		if ev.ControlError == "" {
			ev.ControlError = "control request failed"
		}
	}
	ev.Response = resp.Get("response")
}

func decodeAssistant(ev *Event, root gjson.Result) {
	msg := root.Get("message")
	ev.MessageID = msg.Get("id").String()
	ev.Model = msg.Get("model").String()
	ev.ParentToolUseID = root.Get("parent_tool_use_id").String()
	ev.StopReason = msg.Get("stop_reason").String()
	ev.APIError = root.Get("is_api_error_message").Bool() || root.Get("isApiErrorMessage").Bool() ||
		root.Get("error").Exists() && ev.Model == "<synthetic>"
	if ev.APIError {
		ev.ErrorCode = root.Get("error").String()
	}
	u := msg.Get("usage")
	ev.Usage = Usage{
		InputTokens:              int(u.Get("input_tokens").Int()),
		CacheCreationInputTokens: int(u.Get("cache_creation_input_tokens").Int()),
		CacheReadInputTokens:     int(u.Get("cache_read_input_tokens").Int()),
		OutputTokens:             int(u.Get("output_tokens").Int()),
	}
	content := msg.Get("content")
	ev.Text = messageText(content)
	content.ForEach(func(_, block gjson.Result) bool {
		if block.Get("type").String() == "tool_use" {
			ev.ToolUses = append(ev.ToolUses, ToolUse{
				ID:    block.Get("id").String(),
				Name:  block.Get("name").String(),
				Input: block.Get("input").Raw,
			})
		}
		return true
	})
}

// messageText joins the text of a message's content: a plain string, or the
// text blocks (and the text inside tool_result blocks) of a block array.
// interruptMark opens the note the harness adds to a turn the user (or
// flower) interrupted.
var interruptMark = []byte("[Request interrupted by user")

func messageText(content gjson.Result) string {
	if content.Type == gjson.String {
		return content.String()
	}
	var parts []string
	content.ForEach(func(_, block gjson.Result) bool {
		switch block.Get("type").String() {
		case "text":
			parts = append(parts, block.Get("text").String())
		case "tool_result":
			if c := messageText(block.Get("content")); c != "" {
				parts = append(parts, c)
			}
		}
		return true
	})
	return strings.Join(parts, "\n")
}

// UserText is what was typed in a user record: a plain string, or its text
// blocks joined with "\n" (tool results left out).
//
// Raw is read in place, not copied (a tool result's line is long and read
// for nothing here); only the text returned is.
func UserText(ev *Event) string {
	if len(ev.Raw) == 0 {
		return ""
	}
	c := gjson.Get(unsafe.String(&ev.Raw[0], len(ev.Raw)), "message.content")
	if c.Type == gjson.String {
		return strings.Clone(c.String())
	}
	var parts []string
	c.ForEach(func(_, b gjson.Result) bool {
		if b.Get("type").String() == "text" {
			parts = append(parts, b.Get("text").String())
		}
		return true
	})
	if len(parts) == 1 {
		return strings.Clone(parts[0])
	}
	return strings.Join(parts, "\n") // a new string
}

// ContextUsage is the harness's answer to the get_context_usage control
// request: what it knows of the session's context (DESIGN.md «Window from
// the harness»).
type ContextUsage struct {
	Model string
	// Window is the model's context window (maxTokens).
	Window int
	// Floor is what a session holds before any message: the tokens the
	// harness counts less its messages (system prompt, tools, skills,
	// memory files). Asked before any turn, messages are nearly nil.
	Floor int
	// AutoCompact is whether the harness's auto-compact is on; nil when
	// the answer does not say.
	AutoCompact *bool
	// Raw is the answer as the harness gave it, for logs.
	Raw string
}

// ContextUsageOf reads the response of a get_context_usage request.
func ContextUsageOf(resp gjson.Result) ContextUsage {
	u := ContextUsage{Model: resp.Get("model").String(), Window: int(resp.Get("maxTokens").Int()), Raw: resp.Raw}
	floor := int(resp.Get("totalTokens").Int())
	resp.Get("categories").ForEach(func(_, c gjson.Result) bool {
		if c.Get("id").String() == "messages" {
			floor -= int(c.Get("tokens").Int())
		}
		return true
	})
	u.Floor = max(floor, 0)
	if v := resp.Get("isAutoCompactEnabled"); v.Exists() {
		on := v.Bool()
		u.AutoCompact = &on
	}
	return u
}
