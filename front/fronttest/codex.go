package fronttest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/flowerhq/flower/codex"
	"github.com/flowerhq/flower/codexrpc"
	"github.com/flowerhq/flower/front"
	"github.com/flowerhq/flower/handoffwriter"
	"github.com/flowerhq/flower/jsonenc"
	"github.com/flowerhq/flower/transcript"
)

// codexPipe is a session's way to the Codex front (Launcher.Codex): each
// record the scripted harness writes becomes the app-server notifications
// Codex sends for it (codexNotes), queued until the front's session reads
// them through codexConn, the app-server it is given.
type codexPipe struct {
	s     *session
	mu    sync.Mutex // guards started
	queue codexrpc.Queue
	// usage is the usage of the response last written, held back until
	// its tool has run: Codex reports a response's usage after its
	// commands (DESIGN.md «Codex facts»).
	usage *codexrpc.Notification
	tool  *codexrpc.Notification
	// turns counts the turns the harness started (its goroutine's);
	// started the turn/starts the front sent (under mu).
	turns, started int
}

// codexSession starts the Codex front's own session (codex.NewSession) on
// the scripted harness of ss, and keeps the Launcher's log of turn ends.
func (l *Launcher) codexSession(ss *session, s front.Spec) front.Session {
	ss.cdx = &codexPipe{s: ss}
	inner := codex.NewSession(codexConn{ss.cdx}, codexrpc.Thread{ID: ss.p.session, Model: ss.model()}, s, nil)
	return &codexSession{endLog{Session: inner, l: l, n: ss.p.N}}
}

// endLog is a front's own session that logs each turn's end in the
// Launcher's log ("ended N how").
type endLog struct {
	front.Session
	l *Launcher
	n int
}

// codexSession is the Codex front's session, which says its window.
type codexSession struct{ endLog }

func (c *endLog) Next(ctx context.Context) (front.Fact, error) {
	f, err := c.Session.Next(ctx)
	if e, ok := f.(front.TurnEnded); ok {
		c.l.mu.Lock()
		c.l.logf("ended %d %s", c.n, e.How)
		c.l.mu.Unlock()
	}
	return f, err
}

func (c *codexSession) Probe(ctx context.Context) (transcript.ContextUsage, error) {
	return c.Session.(front.Prober).Probe(ctx)
}

// emit is record v as Codex tells of it.
func (p *codexPipe) emit(v map[string]any) {
	select {
	case <-p.s.kill:
		panic(errKilled{})
	default:
	}
	p.queue.Push(p.notes(v)...)
}

// notes are the notifications Codex sends for what record v says; a
// subagent's lines, an init line and the harness's own lines of a retry
// or a prompt have none of their own.
func (p *codexPipe) notes(v map[string]any) []codexrpc.Notification {
	thread, turn := p.s.p.session, fmt.Sprintf("turn-%d", p.turns)
	switch {
	case v["parent_tool_use_id"] != nil && v["parent_tool_use_id"] != "":
		return nil
	case v["subtype"] == "init":
		p.turns++
		return nil
	case v["subtype"] == "compact_boundary":
		return []codexrpc.Notification{{Method: codexrpc.NoteItemStarted, Value: codexrpc.Item{Started: true, ThreadID: thread, TurnID: turn, Type: codexrpc.ItemContextCompaction}}}
	case v["subtype"] == "api_retry":
		return []codexrpc.Notification{{Method: codexrpc.NoteError, Value: codexrpc.Error{ThreadID: thread, TurnID: turn, WillRetry: true,
			Error: codexrpc.ErrorInfo{Message: "rate limited", Kind: "responseStreamDisconnected", HTTPStatus: 429}}}}
	case v["type"] == "rate_limit_event":
		info, _ := v["rate_limit_info"].(map[string]any)
		reset, _ := info["resetsAt"].(int64)
		return []codexrpc.Notification{{Method: codexrpc.NoteRateLimits, Value: codexrpc.RateLimits{Primary: &codexrpc.Window{UsedPercent: 100, ResetsAt: reset}}}}
	case v["type"] == "assistant":
		return p.response(thread, turn, v)
	case v["type"] == "user" && strings.Contains(fmt.Sprint(v["message"]), "[Request interrupted"):
		p.usage = nil // an interrupted response's usage is not reported
		return p.used()
	case v["type"] == "user":
		return p.used()
	case v["type"] == "result":
		return append(p.used(), codexrpc.Notification{Method: codexrpc.NoteTurnCompleted, Value: p.completed(thread, turn, v)})
	}
	return nil
}

// response is an API response: its items now, its usage once its tool
// has run.
func (p *codexPipe) response(thread, turn string, v map[string]any) []codexrpc.Notification {
	if v["is_api_error_message"] == true {
		return nil // an error is the turn's end in Codex's words
	}
	msg, _ := v["message"].(map[string]any)
	var out []codexrpc.Notification
	content, _ := msg["content"].([]any)
	for _, c := range content {
		block, _ := c.(map[string]any)
		switch block["type"] {
		case "text":
			out = append(out, codexItem(thread, turn, map[string]any{"type": "agentMessage", "text": block["text"]}))
		case "tool_use":
			// The command starts now; it completes once it has run.
			in, _ := block["input"].(map[string]any)
			item := map[string]any{"type": "commandExecution", "id": block["id"], "command": in["command"]}
			started := codexItem(thread, turn, item)
			started.Method, started.Value = codexrpc.NoteItemStarted, codexrpc.Item{Started: true, ThreadID: thread, TurnID: turn, ID: fmt.Sprint(block["id"]), Type: "commandExecution"}
			done := codexItem(thread, turn, item)
			done.Value = codexrpc.Item{ThreadID: thread, TurnID: turn, ID: fmt.Sprint(block["id"]), Type: "commandExecution"}
			out, p.tool = append(out, started), &done
		}
	}
	usage, _ := msg["usage"].(map[string]any)
	ctx := toInt(usage["input_tokens"]) + toInt(usage["cache_read_input_tokens"]) + toInt(usage["cache_creation_input_tokens"])
	u := codexrpc.Notification{Method: codexrpc.NoteTokenUsage, Value: codexrpc.TokenUsage{ThreadID: thread, TurnID: turn,
		Last:               codexrpc.Tokens{InputTokens: int64(ctx), CachedInputTokens: int64(toInt(usage["cache_read_input_tokens"])), OutputTokens: int64(toInt(usage["output_tokens"]))},
		ModelContextWindow: p.window()}}
	p.usage = &u
	return out
}

// used is the usage held back, now that its response's tool has run (or
// the turn ended without one); an interrupted response has none.
func (p *codexPipe) used() []codexrpc.Notification {
	var out []codexrpc.Notification
	if p.tool != nil {
		out = append(out, *p.tool)
	}
	if p.usage != nil {
		out = append(out, *p.usage)
	}
	p.tool, p.usage = nil, nil
	return out
}

// window is what Codex says of the window (modelContextWindow) for the
// front to work with the Launcher's Window; 0 says none.
func (p *codexPipe) window() int64 {
	w := int64(p.s.l.Window)
	if w == 0 {
		return 0
	}
	if p.s.p.Spec.Hold != nil {
		return (w*19 + 17) / 18 // the front works with 18/19 of it
	}
	return (w*19 + 19) / 20 // the front works with 20/19 of it
}

// completed is a result as Codex ends a turn.
func (p *codexPipe) completed(thread, turn string, v map[string]any) codexrpc.TurnCompleted {
	c := codexrpc.TurnCompleted{ThreadID: thread, TurnID: turn, Status: codexrpc.StatusCompleted}
	text, _ := v["result"].(string)
	switch {
	case v["terminal_reason"] == "prompt_too_long":
		c.Status, c.Error = codexrpc.StatusFailed, &codexrpc.ErrorInfo{Message: text, Kind: "contextWindowExceeded"}
	case v["api_error"] == "usage_limit_reached":
		c.Status, c.Error = codexrpc.StatusFailed, &codexrpc.ErrorInfo{Message: text, Kind: "usageLimitExceeded"}
	case v["api_error_status"] != nil:
		c.Status, c.Error = codexrpc.StatusFailed, &codexrpc.ErrorInfo{Message: text, Kind: "responseTooManyFailedAttempts", HTTPStatus: toInt(v["api_error_status"])}
	case strings.HasPrefix(fmt.Sprint(v["terminal_reason"]), "aborted"):
		c.Status = codexrpc.StatusInterrupted
	case v["is_error"] == true:
		c.Status, c.Error = codexrpc.StatusFailed, &codexrpc.ErrorInfo{Message: text, Kind: "other"}
	}
	return c
}

func codexItem(thread, turn string, item map[string]any) codexrpc.Notification {
	raw, _ := jsonenc.Marshal(map[string]any{"threadId": thread, "turnId": turn, "item": item})
	kind, _ := item["type"].(string)
	return codexrpc.Notification{Method: codexrpc.NoteItemCompleted, Params: raw, Value: codexrpc.Item{ThreadID: thread, TurnID: turn, Type: kind}}
}

func toInt(v any) int {
	switch n := v.(type) {
	case int:
		return n
	case int64:
		return int(n)
	case float64:
		return int(n)
	}
	return 0
}

// codexConn is the scripted harness as the app-server the Codex front's
// session speaks to: a turn/start is a prompt (a writing turn's known by
// its tag, as nothing else tells it), turn/interrupt the harness's one
// interrupt, closing it the end of the harness.
type codexConn struct{ p *codexPipe }

func (c codexConn) Next(ctx context.Context) (codexrpc.Notification, error) {
	return c.p.queue.Next(ctx)
}

func (c codexConn) StartTurn(ctx context.Context, thread, text string) (string, error) {
	kind := front.TurnWork
	if strings.Contains(text, handoffwriter.PromptTag) {
		kind = front.TurnWriting
	}
	if err := c.p.s.queue(front.Turn{Kind: kind, Prompt: text}); err != nil {
		return "", err
	}
	c.p.mu.Lock()
	defer c.p.mu.Unlock()
	c.p.started++
	return fmt.Sprintf("turn-%d", c.p.started), nil
}

func (c codexConn) Interrupt(ctx context.Context, thread, turn string) error {
	c.p.s.l.mu.Lock()
	c.p.s.l.logf("interrupt %d", c.p.s.p.N)
	c.p.s.l.mu.Unlock()
	return c.p.s.interrupt()
}

func (c codexConn) Close() error {
	c.p.s.Stop()
	return nil
}

func (c codexConn) Done() <-chan struct{}   { return c.p.s.done }
func (c codexConn) Err() error              { return nil }
func (c codexConn) Exited() <-chan struct{} { return c.p.s.done }

// ExitErr is how the harness ended, in the words it ends with.
func (c codexConn) ExitErr() error {
	if why := c.p.s.exit.Why; why != "" {
		return errors.New(why)
	}
	return nil
}
