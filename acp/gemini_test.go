package acp_test

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/flowerhq/flower/acp"
	"github.com/flowerhq/flower/integration/itest"
	"github.com/flowerhq/flower/scriptedgen"
)

// start runs the real Gemini CLI's ACP mode against s in a workspace of
// its own, as trusted, with every tool approved.
func start(t *testing.T, s *scriptedgen.Server) (*acp.Client, string) {
	t.Helper()
	bin := itest.GeminiPath(t)
	home, ws := t.TempDir(), t.TempDir()
	if err := scriptedgen.WriteHome(home); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := acp.Start(ctx, acp.Config{Binary: bin, Args: []string{"--acp", "--skip-trust", "--approval-mode", "yolo"}, Dir: ws,
		Env: append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + home}, s.Env()...)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c, ws
}

// until reads messages until a prompt's End, and returns them all.
func until(t *testing.T, c *acp.Client) []acp.Message {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out []acp.Message
	for {
		m, err := c.Next(ctx)
		if err != nil {
			t.Fatalf("after %d messages: %v", len(out), err)
		}
		if m.Kind == "available_commands_update" {
			continue
		}
		out = append(out, m)
		if m.End != nil {
			return out
		}
	}
}

func kinds(ms []acp.Message) string {
	var k []string
	for _, m := range ms {
		switch {
		case m.End != nil && m.End.Err != nil:
			k = append(k, "error")
		case m.End != nil:
			k = append(k, "end:"+m.End.StopReason)
		default:
			k = append(k, m.Kind)
		}
	}
	return strings.Join(k, ",")
}

func TestRealAgentTurnWithAToolCall(t *testing.T) {
	s, err := scriptedgen.Start(scriptedgen.Sequence(
		scriptedgen.Reply{Text: "listing", Calls: []scriptedgen.Call{scriptedgen.Shell("echo hello")}, Usage: scriptedgen.Usage{PromptTokens: 9000}},
		scriptedgen.Reply{Text: "listed", Usage: scriptedgen.Usage{PromptTokens: 9100}}))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	c, ws := start(t, s)
	if a := c.Agent(); a.Name != "gemini-cli" || a.Version != itest.GeminiVersion || !a.LoadSession {
		t.Errorf("agent %+v", a)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sess, err := c.NewSession(ctx, ws)
	if err != nil {
		t.Fatal(err)
	}
	if sess.ID == "" || sess.Model != scriptedgen.Model {
		t.Errorf("session %+v", sess)
	}
	if err := c.Prompt(sess.ID, "list it"); err != nil {
		t.Fatal(err)
	}
	ms := until(t, c)
	if got, want := kinds(ms), "agent_message_chunk,tool_call,tool_call_update,agent_message_chunk,end:end_turn"; got != want {
		t.Errorf("messages %s, want %s", got, want)
	}
	for _, m := range ms {
		if m.Session != sess.ID {
			t.Errorf("message of session %q", m.Session)
		}
	}
	var upd struct {
		Status string `json:"status"`
		Title  string `json:"title"`
	}
	if err := json.Unmarshal(ms[2].Update, &upd); err != nil || upd.Status != "completed" || upd.Title != "echo hello" {
		t.Errorf("tool call update %s", ms[2].Update)
	}
	if main := s.Main(); len(main) == 2 && (len(main[1].Responses) != 1 || !strings.Contains(main[1].Responses[0].Response, "hello")) {
		t.Errorf("the command's output did not reach the model: %+v", main[1].Responses)
	}
	if n := len(s.Main()); n != 2 {
		t.Errorf("%d main requests", n)
	}
}

func TestRealAgentCancelEndsTheTurn(t *testing.T) {
	s, err := scriptedgen.Start(scriptedgen.Sequence(
		scriptedgen.Reply{Text: "waiting", Calls: []scriptedgen.Call{scriptedgen.Shell("sleep 30")}, Usage: scriptedgen.Usage{PromptTokens: 9000}},
		scriptedgen.Reply{Text: "next", Usage: scriptedgen.Usage{PromptTokens: 9100}}))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	c, ws := start(t, s)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sess, err := c.NewSession(ctx, ws)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Prompt(sess.ID, "wait"); err != nil {
		t.Fatal(err)
	}
	for {
		m, err := c.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if m.Kind == "tool_call" {
			break
		}
	}
	began := time.Now()
	if err := c.Cancel(sess.ID); err != nil {
		t.Fatal(err)
	}
	ms := until(t, c)
	if end := ms[len(ms)-1].End; end.StopReason != "cancelled" {
		t.Errorf("end %+v", end)
	}
	if d := time.Since(began); d > 10*time.Second {
		t.Errorf("the cancel took %v: the sleep ran on", d)
	}
	// The session takes the next turn; the model's text before the
	// cancelled call is in its history, the call is not.
	if err := c.Prompt(sess.ID, "go on"); err != nil {
		t.Fatal(err)
	}
	if got := kinds(until(t, c)); got != "agent_message_chunk,end:end_turn" {
		t.Errorf("next turn %s", got)
	}
	main := s.Main()
	last := main[len(main)-1]
	var roles []string
	for _, ct := range last.Contents {
		roles = append(roles, ct.Role+":"+ct.Text)
	}
	if len(last.Contents) < 3 || last.Contents[len(last.Contents)-2].Text != "waiting" || last.LastUserText != "go on" {
		t.Errorf("history after the cancel: %q", roles)
	}
}

func TestRealAgentAPIErrorEndsThePrompt(t *testing.T) {
	s, err := scriptedgen.Start(scriptedgen.Sequence(scriptedgen.Forbidden()))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	c, ws := start(t, s)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sess, err := c.NewSession(ctx, ws)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Prompt(sess.ID, "hi"); err != nil {
		t.Fatal(err)
	}
	ms := until(t, c)
	end := ms[len(ms)-1].End
	if end.Err == nil {
		t.Fatalf("end %+v, want an error", end)
	}
	t.Logf("403 gives %v after %d requests", end.Err, len(s.Main()))
}
