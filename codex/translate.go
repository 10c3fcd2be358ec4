package codex

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/tidwall/gjson"

	"github.com/flowerhq/flower/codexrpc"
	"github.com/flowerhq/flower/front"
	"github.com/flowerhq/flower/transcript"
)

// translator turns the app-server's notifications into facts. Codex
// reports a model response's usage (thread/tokenUsage/updated) only once
// the tool calls of that response have run, after its items: so one Round
// per response is reported at its usage, carrying the text and the tool
// calls of the items completed since the Round before (DESIGN.md «Codex
// front»). Not safe for concurrent use: the session's lock guards it.
type translator struct {
	thread, model string
	// endpoint is the model provider's base_url, as the config gave it.
	endpoint string
	// held: Codex's compaction is held off (front.Spec.Hold); the window
	// reported is then where Codex compacts whatever its settings say.
	held bool
	// interrupting: the front ended the running turn itself. writing:
	// the running turn is the handoff-writing turn, whose tool calls are
	// reported as they start (early), so that the engine stops one
	// before it has run, not after.
	interrupting, writing bool
	early                 map[string]bool
	// text and tools are the items of the response whose usage is still
	// to come; last is the turn's last message, rounds its responses.
	text   []string
	tools  []transcript.ToolUse
	last   string
	rounds int
	// window is the window in the engine's terms (0 until Codex says);
	// limits the last rate-limit windows it reported.
	window int
	limits codexrpc.RateLimits
}

// facts translates one notification, passing each fact it makes to out.
func (t *translator) facts(n codexrpc.Notification, out func(front.Fact)) {
	switch v := n.Value.(type) {
	case codexrpc.TokenUsage:
		t.usage(v, out)
	case codexrpc.TurnCompleted:
		t.flush(out)
		out(t.ended(v))
	case codexrpc.Error:
		if v.WillRetry {
			out(front.Retrying{Retry: transcript.Retry{Status: v.Error.HTTPStatus, Error: v.Error.Message}, Endpoint: t.endpoint})
		}
	case codexrpc.RateLimits:
		t.limits = v
	case codexrpc.ScreenInterrupt:
		// The person ended the turn at Codex's screen: its end is theirs,
		// not a compaction flower's hook stopped.
		t.interrupting = true
	case codexrpc.Item:
		switch {
		case v.Started && v.Type == codexrpc.ItemContextCompaction:
			out(front.Compacted{Sign: "a contextCompaction item", Boundary: true, Trigger: "auto"})
		case v.Started && t.writing && isTool(v.Type):
			t.startedTool(n, v, out)
		case !v.Started:
			t.item(n, v.Type, out)
		}
	}
}

// isTool: items of this type are tool calls.
func isTool(kind string) bool {
	switch kind {
	case "commandExecution", "fileChange", "mcpToolCall", "dynamicToolCall", "webSearch":
		return true
	}
	return false
}

// startedTool reports a tool call of the writing turn as it starts, in a
// Round of its own that moves no meter; its item's end adds nothing more.
func (t *translator) startedTool(n codexrpc.Notification, v codexrpc.Item, out func(front.Fact)) {
	if t.early == nil {
		t.early = map[string]bool{}
	}
	t.early[v.ID] = true
	it := gjson.GetBytes(n.Params, "item")
	out(front.Round{SessionID: t.thread, MainThread: true, Model: t.model,
		ToolUses: []transcript.ToolUse{{ID: v.ID, Name: v.Type, Input: toolInput(it)}}})
}

// item keeps what a completed item says for the response's Round.
func (t *translator) item(n codexrpc.Notification, kind string, out func(front.Fact)) {
	it := gjson.GetBytes(n.Params, "item")
	switch kind {
	case "userMessage":
		var parts []string
		it.Get("content").ForEach(func(_, c gjson.Result) bool {
			if c.Get("type").String() == "text" {
				parts = append(parts, c.Get("text").String())
			}
			return true
		})
		out(front.UserMessage{MainThread: true, Text: strings.Join(parts, "\n")})
	case "agentMessage":
		if s := it.Get("text").String(); s != "" {
			t.text = append(t.text, s)
			t.last = s
		}
	default:
		if id := it.Get("id").String(); isTool(kind) && !t.early[id] {
			t.tools = append(t.tools, transcript.ToolUse{ID: id, Name: kind, Input: toolInput(it)})
		}
	}
}

// toolInput is what a tool item says it ran, as JSON.
func toolInput(it gjson.Result) string {
	if c := it.Get("command"); c.Exists() {
		return `{"command":` + c.Raw + `}`
	}
	return "{}"
}

// usage is the Round of the response it reports, and the window.
func (t *translator) usage(u codexrpc.TokenUsage, out func(front.Fact)) {
	if u.ModelContextWindow > 0 {
		t.window = windowOf(int(u.ModelContextWindow), t.held)
	}
	l := u.Last
	cached := int(min(l.CachedInputTokens, l.InputTokens))
	t.rounds++
	out(front.Round{SessionID: t.thread, MainThread: true, Context: int(l.InputTokens), Model: t.model,
		Text: strings.Join(t.text, "\n"), ToolUses: t.tools, MessageID: u.TurnID + "#" + strconv.Itoa(t.rounds),
		Usage: transcript.Usage{InputTokens: int(l.InputTokens) - cached, CacheReadInputTokens: cached, OutputTokens: int(l.OutputTokens)}})
	t.text, t.tools = nil, nil
}

// flush reports the items of a response that ended with no usage (an
// interrupted one) as a Round that moves no meter.
func (t *translator) flush(out func(front.Fact)) {
	if len(t.text) == 0 && len(t.tools) == 0 {
		return
	}
	out(front.Round{SessionID: t.thread, MainThread: true, Model: t.model, Text: strings.Join(t.text, "\n"), ToolUses: t.tools})
	t.text, t.tools = nil, nil
}

// windowOf is the window the engine works with, from modelContextWindow
// (95 % of Codex's effective window). With compaction held it is where
// Codex compacts all the same, 90 % of the effective window: past it the
// thread takes no more turns, so a handoff must come before (DESIGN.md
// «Codex front»). Otherwise the effective window itself.
func windowOf(modelContextWindow int, held bool) int {
	if held {
		return modelContextWindow * 18 / 19
	}
	return modelContextWindow * 20 / 19
}

// ended is the TurnEnded of a turn/completed.
func (t *translator) ended(c codexrpc.TurnCompleted) front.TurnEnded {
	e := front.TurnEnded{SessionID: t.thread, Text: t.last, Turns: t.rounds}
	if t.window > 0 {
		e.Windows = map[string]int{t.model: t.window}
	}
	interrupted := t.interrupting
	t.interrupting, t.writing, t.early, t.last, t.rounds = false, false, nil, "", 0
	switch c.Status {
	case codexrpc.StatusCompleted:
		e.How = front.EndedOnOwn
	case codexrpc.StatusInterrupted:
		if interrupted {
			e.How = front.EndedInterrupted
			break
		}
		// Nothing but flower's PreCompact hook stops a turn unasked: Codex
		// was about to compact, and the thread takes no more turns.
		e.How, e.Detail = front.EndedOverflow, "compaction stopped"
		e.Text = "Codex was about to compact its context; flower's hook stopped it, and the thread takes no more turns"
	default:
		t.failed(&e, c.Error)
	}
	return e
}

// failed says how a failed turn ended, from its error.
func (t *translator) failed(e *front.TurnEnded, err *codexrpc.ErrorInfo) {
	e.How = front.EndedError
	if err == nil {
		e.Text = "the turn failed and Codex said no more"
		return
	}
	e.Text, e.Detail = err.Message, err.Kind
	switch {
	case err.Kind == "contextWindowExceeded":
		e.How = front.EndedOverflow
	case err.Kind == "usageLimitExceeded":
		e.How, e.Limit = front.EndedLimited, &transcript.Limit{Kind: transcript.LimitUsage, ResetAt: t.resetAt(), Message: err.Message}
	case err.Kind == "rateLimitExceeded" || err.HTTPStatus == http.StatusTooManyRequests:
		e.How, e.Limit = front.EndedLimited, &transcript.Limit{Kind: transcript.LimitRate, Message: err.Message}
	case err.HTTPStatus == http.StatusUnauthorized || err.HTTPStatus == http.StatusForbidden:
		e.APIErrorStatus = err.HTTPStatus
	}
}

// resetAt is when the exhausted rate-limit window Codex reported lifts;
// zero when it reported none.
func (t *translator) resetAt() time.Time {
	for _, w := range []*codexrpc.Window{t.limits.Primary, t.limits.Secondary} {
		if w != nil && w.UsedPercent >= 100 && w.ResetsAt > 0 {
			return time.Unix(w.ResetsAt, 0)
		}
	}
	return time.Time{}
}
