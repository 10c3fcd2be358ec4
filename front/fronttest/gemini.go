package fronttest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/flowerhq/flower/acp"
	"github.com/flowerhq/flower/fifo"
	"github.com/flowerhq/flower/front"
	"github.com/flowerhq/flower/gemini"
	"github.com/flowerhq/flower/handoffwriter"
	"github.com/flowerhq/flower/jsonenc"
)

// geminiPipe is a session's way to the Gemini front (Launcher.Gemini):
// each record the scripted harness writes becomes what the Gemini CLI
// writes for it, a line of its record of the session (the file the front
// reads its meter from) and the ACP messages it sends, in the order the
// CLI writes them (DESIGN.md «Gemini front»).
type geminiPipe struct {
	s      *session
	path   string
	f      *os.File
	queue  fifo.Queue[acp.Message]
	nextID int
}

// geminiSession starts the Gemini front's own session (gemini.NewSession)
// on the scripted harness of ss, its record a file in the run's
// directory (else the temporary one).
func (l *Launcher) geminiSession(ss *session, s front.Spec) (front.Session, error) {
	dir := s.RunDir
	if dir == "" {
		dir = os.TempDir()
	}
	f, err := os.CreateTemp(dir, "gemini-record-*.jsonl")
	if err != nil {
		return nil, err
	}
	ss.gem = &geminiPipe{s: ss, path: f.Name(), f: f}
	model := ss.model()
	inner, err := gemini.NewSession(geminiConn{ss.gem}, acp.Session{ID: ss.p.session, Model: model}, gemini.PinnedVersion, f.Name(), s)
	if err != nil {
		f.Close()
		return nil, err
	}
	return &endLog{Session: inner, l: l, n: ss.p.N}, nil
}

// emit is record v as the Gemini CLI tells of it.
func (p *geminiPipe) emit(v map[string]any) {
	select {
	case <-p.s.kill:
		panic(errKilled{})
	default:
	}
	switch {
	case v["parent_tool_use_id"] != nil && v["parent_tool_use_id"] != "":
		// A subagent's calls go to a record of their own.
	case v["subtype"] == "compact_boundary":
		p.record(map[string]any{"$set": map[string]any{"messages": []any{
			map[string]any{"id": "summary", "type": "user", "content": "<state_snapshot>…</state_snapshot>"},
			map[string]any{"id": "ack", "type": "gemini", "content": gemini.CompressionAck}}}})
	case v["type"] == "assistant" && v["is_api_error_message"] != true:
		p.response(v)
	case v["type"] == "result":
		p.queue.Push(acp.Message{Session: p.s.p.session, End: p.ended(v)})
	}
}

// record appends one line to the session's record.
func (p *geminiPipe) record(line map[string]any) {
	b, err := jsonenc.Marshal(line)
	if err != nil {
		panic(err)
	}
	if _, err := p.f.Write(append(b, '\n')); err != nil {
		panic(err)
	}
}

// response is a model message: its line in the record (text and tokens),
// then a tool_call message for each of its calls.
func (p *geminiPipe) response(v map[string]any) {
	msg, _ := v["message"].(map[string]any)
	content, _ := msg["content"].([]any)
	var text []string
	var calls []acp.Message
	for _, c := range content {
		block, _ := c.(map[string]any)
		switch block["type"] {
		case "text":
			text = append(text, fmt.Sprint(block["text"]))
		case "tool_use":
			in, _ := block["input"].(map[string]any)
			upd, _ := jsonenc.Marshal(map[string]any{"sessionUpdate": "tool_call", "toolCallId": block["id"], "status": "in_progress",
				"title": fmt.Sprint(in["command"]), "kind": "execute"})
			calls = append(calls, acp.Message{Session: p.s.p.session, Kind: "tool_call", Update: upd})
		}
	}
	usage, _ := msg["usage"].(map[string]any)
	cached := toInt(usage["cache_read_input_tokens"])
	ctx := toInt(usage["input_tokens"]) + cached + toInt(usage["cache_creation_input_tokens"])
	p.nextID++
	p.record(map[string]any{"id": fmt.Sprintf("%s-msg-%d", p.s.p.session, p.nextID), "type": "gemini", "content": strings.Join(text, "\n"),
		"model": p.s.model(), "tokens": map[string]any{"input": ctx, "cached": cached, "output": toInt(usage["output_tokens"])}})
	p.queue.Push(calls...)
}

// ended is a result as the Gemini CLI answers the prompt: a stop reason,
// or an error whose code is the API's HTTP status.
func (p *geminiPipe) ended(v map[string]any) *acp.End {
	text, _ := v["result"].(string)
	switch {
	case v["terminal_reason"] == "prompt_too_long":
		return &acp.End{Err: &acp.RPCError{Code: 400, Message: "The input token count (1048577) exceeds the maximum number of tokens allowed (1048576)."}}
	case v["api_error"] == "usage_limit_reached":
		return &acp.End{Err: &acp.RPCError{Code: 429, Message: text}}
	case v["api_error_status"] != nil:
		return &acp.End{Err: &acp.RPCError{Code: toInt(v["api_error_status"]), Message: text}}
	case strings.HasPrefix(fmt.Sprint(v["terminal_reason"]), "aborted"):
		return &acp.End{StopReason: "cancelled"}
	case v["is_error"] == true:
		return &acp.End{Err: &acp.RPCError{Code: 500, Message: text}}
	}
	return &acp.End{StopReason: "end_turn"}
}

// close says the harness is gone.
func (p *geminiPipe) close() {
	p.queue.Close()
	_ = p.f.Close()
	_ = os.Remove(p.path)
}

// geminiConn is the scripted harness as the ACP agent the Gemini front's
// session speaks to: a prompt is a prompt (a writing turn's known by its
// tag, as nothing else tells it), a cancel the harness's one interrupt,
// closing it the end of the harness.
type geminiConn struct{ p *geminiPipe }

func (c geminiConn) Next(ctx context.Context) (acp.Message, error) { return c.p.queue.Next(ctx) }

func (c geminiConn) Prompt(_, text string) error {
	kind := front.TurnWork
	if strings.Contains(text, handoffwriter.PromptTag) {
		kind = front.TurnWriting
	}
	return c.p.s.queue(front.Turn{Kind: kind, Prompt: text})
}

func (c geminiConn) Cancel(string) error {
	c.p.s.l.mu.Lock()
	c.p.s.l.logf("interrupt %d", c.p.s.p.N)
	c.p.s.l.mu.Unlock()
	return c.p.s.interrupt()
}

func (c geminiConn) Close() error {
	c.p.s.Stop()
	return nil
}

func (c geminiConn) Done() <-chan struct{}   { return c.p.s.done }
func (c geminiConn) Err() error              { return nil }
func (c geminiConn) Exited() <-chan struct{} { return c.p.s.done }

// ExitErr is how the harness ended, in the words it ends with.
func (c geminiConn) ExitErr() error {
	if why := c.p.s.exit.Why; why != "" {
		return errors.New(why)
	}
	return nil
}
