package gemini

import (
	"encoding/json"
	"net/http"
	"strings"

	"github.com/flowerhq/flower/acp"
	"github.com/flowerhq/flower/front"
	"github.com/flowerhq/flower/transcript"
)

// translator turns what the CLI says into facts: its record's model
// messages into Rounds (the meter), a compression into Compacted, the ACP
// tool calls into Rounds that move no meter, and each prompt's answer into
// a TurnEnded. Not safe for concurrent use: the session's lock guards it.
type translator struct {
	session, model string
	window         int
	// interrupting: the front ended the running turn itself.
	interrupting bool
	// last is the turn's last model text; rounds, its model calls;
	// context the last call's prompt.
	last    string
	rounds  int
	context int
}

// recorded translates the record's new lines.
func (t *translator) recorded(ls []line, seen map[string]bool, out func(front.Fact)) {
	for _, l := range ls {
		switch {
		case l.compressed():
			// A compression flower did not ask for (DESIGN.md
			// «Compaction backstop»).
			out(front.Compacted{Sign: "a compression in the Gemini CLI's record", Boundary: true, Trigger: "auto", PreTokens: t.context})
		case l.Type == "gemini" && l.Tokens != nil && !seen[l.ID]:
			seen[l.ID] = true
			if l.Model != "" {
				t.model = l.Model
			}
			text := l.text()
			if text != "" {
				t.last = text
			}
			t.rounds++
			t.context = l.Tokens.Input
			cached := min(l.Tokens.Cached, l.Tokens.Input)
			out(front.Round{SessionID: t.session, MainThread: true, Context: l.Tokens.Input, Model: t.model, Text: text,
				MessageID: l.ID, Usage: transcript.Usage{InputTokens: l.Tokens.Input - cached, CacheReadInputTokens: cached,
					OutputTokens: l.Tokens.Output + l.Tokens.Thoughts}})
		}
	}
}

// said translates one ACP message.
func (t *translator) said(m acp.Message, out func(front.Fact)) {
	switch {
	case m.End != nil:
		out(t.ended(m.End))
	case m.Kind == "tool_call":
		var c struct {
			ID    string `json:"toolCallId"`
			Title string `json:"title"`
			Kind  string `json:"kind"`
		}
		_ = json.Unmarshal(m.Update, &c)
		in, _ := json.Marshal(map[string]string{"command": c.Title})
		out(front.Round{SessionID: t.session, MainThread: true, Model: t.model,
			ToolUses: []transcript.ToolUse{{ID: c.ID, Name: c.Kind, Input: string(in)}}})
	}
}

// ended is the TurnEnded of a prompt's answer.
func (t *translator) ended(e *acp.End) front.TurnEnded {
	te := front.TurnEnded{SessionID: t.session, Text: t.last, Turns: t.rounds}
	if t.window > 0 && t.model != "" {
		te.Windows = map[string]int{t.model: t.window}
	}
	interrupted := t.interrupting
	t.interrupting, t.last, t.rounds = false, "", 0
	if e.Err != nil {
		t.failed(&te, e.Err)
		return te
	}
	te.Detail = e.StopReason
	switch e.StopReason {
	case "end_turn":
		te.How = front.EndedOnOwn
	case "cancelled":
		te.How = front.EndedInterrupted
		if !interrupted {
			te.Detail = "cancelled by the CLI"
		}
	case "max_tokens":
		// The CLI saw the next prompt would not fit (its
		// ContextWindowWillOverflow).
		te.How, te.Text = front.EndedOverflow, "the Gemini CLI said the context would overflow the window"
	default:
		te.How = front.EndedError
		te.Text = "the Gemini CLI ended the turn: " + e.StopReason
	}
	return te
}

// failed says how a turn the CLI answered with an error ended: its code is
// the API's HTTP status, its message the API's error.
func (t *translator) failed(te *front.TurnEnded, err *acp.RPCError) {
	te.How, te.Text, te.Detail = front.EndedError, apiMessage(err.Message), "api_error"
	msg := strings.ToLower(err.Message)
	switch {
	case err.Code == http.StatusTooManyRequests:
		te.How, te.Limit = front.EndedLimited, &transcript.Limit{Kind: transcript.LimitRate, Message: err.Message}
	case strings.Contains(msg, "exceeds the maximum number of tokens"):
		te.How = front.EndedOverflow
	case strings.Contains(msg, "api key not valid") || strings.Contains(msg, "api_key_invalid"):
		te.APIErrorStatus, te.NoCredentials = err.Code, true
	case err.Code == http.StatusUnauthorized || err.Code == http.StatusForbidden:
		te.APIErrorStatus = err.Code
	case err.Code >= 400 && err.Code < 600:
		te.APIErrorStatus = err.Code
	}
}

// apiMessage is the API's own message where the CLI passed its error body
// on whole ({"error":{"message":…}}), else msg.
func apiMessage(msg string) string {
	var body struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal([]byte(msg), &body) == nil && body.Error.Message != "" {
		return body.Error.Message
	}
	return msg
}
