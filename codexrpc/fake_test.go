package codexrpc_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flowerhq/flower/codexrpc"
)

// A fake app-server (this test binary re-executed) for what the real one
// does not do on demand: lines that are not JSON, a very long line, a
// request of its own.
func TestMain(m *testing.M) {
	if os.Getenv("CODEXRPC_FAKE") == "1" {
		fakeAppServer()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// longLine is the size of the fake's long notification: well past any
// default line buffer.
const longLine = 4 << 20

func fakeAppServer() {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(nil, 1<<20)
	out := bufio.NewWriter(os.Stdout)
	write := func(s string) { out.WriteString(s + "\n"); out.Flush() }
	refused := false
	for in.Scan() {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Error  json.RawMessage `json:"error"`
		}
		_ = json.Unmarshal(in.Bytes(), &m)
		switch {
		case m.Method == "initialize":
			write("this is not JSON {")
			write(`{"method":"warning","params":{"message":"` + strings.Repeat("x", longLine) + `"}}`)
			write(`{"id":"srv-1","method":"item/commandExecution/requestApproval","params":{}}`)
			write(`{"id":` + string(m.ID) + `,"result":{}}`)
		case string(m.ID) == `"srv-1"` && m.Error != nil:
			refused = true
		case m.Method == "thread/start":
			write(fmt.Sprintf(`{"method":"fake/refused","params":{"refused":%v}}`, refused))
			write(`{"id":` + string(m.ID) + `,"result":{"thread":{"id":"thr-1"}}}`)
			write(`{"method":"thread/tokenUsage/updated","params":{"threadId":"thr-1","turnId":"t1","tokenUsage":{"last":{"inputTokens":7,"cachedInputTokens":1,"outputTokens":2,"reasoningOutputTokens":0,"totalTokens":9},"total":{"inputTokens":70,"cachedInputTokens":10,"outputTokens":20,"reasoningOutputTokens":0,"totalTokens":90},"modelContextWindow":190000}}}`)
			write(`{"method":"error","params":{"threadId":"thr-1","turnId":"t1","willRetry":true,"error":{"message":"m","codexErrorInfo":{"responseStreamDisconnected":{"httpStatusCode":502}}}}}`)
			write(`{"method":"account/rateLimits/updated","params":{"rateLimits":{"primary":{"usedPercent":42,"windowDurationMins":300,"resetsAt":1796140000},"secondary":null}}}`)
			write(`{"method":"turn/completed","params":{"threadId":"thr-1","turn":{"id":"t1","status":"failed","items":[],"error":{"message":"gone","codexErrorInfo":"usageLimitExceeded"}}}}`)
			write(`{"method":"item/completed","params":{"threadId":"thr-1","turnId":"t1","item":{"type":"contextCompaction","id":"c1"}}}`)
			write(`{"method":"turn/completed","params":{"threadId":"thr-1","turn":"not an object"}}`)
			return // stdout ends
		}
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestOddLinesAreSkippedNotFatal(t *testing.T) {
	var log syncBuffer
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := codexrpc.Start(ctx, codexrpc.Config{Binary: os.Args[0], Home: t.TempDir(), Env: []string{"CODEXRPC_FAKE=1"}, Log: &log})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if id, err := c.StartThread(ctx, codexrpc.ThreadOptions{}); err != nil || id != "thr-1" {
		t.Fatalf("thread %q, %v", id, err)
	}
	var notes []codexrpc.Notification
	for n := range c.Notifications() {
		notes = append(notes, n)
	}
	<-c.Done()
	if len(notes) != 8 {
		t.Fatalf("%d notifications, want 8: %+v", len(notes), notes)
	}
	var warn struct{ Message string }
	if err := json.Unmarshal(notes[0].Params, &warn); err != nil || len(warn.Message) != longLine {
		t.Errorf("the long line came through with %d bytes (%v)", len(warn.Message), err)
	}
	if string(notes[1].Params) != `{"refused":true}` {
		t.Errorf("the fake's own request was not refused: %s", notes[1].Params)
	}
	want := []any{
		codexrpc.TokenUsage{ThreadID: "thr-1", TurnID: "t1", ModelContextWindow: 190000,
			Last:  codexrpc.Tokens{InputTokens: 7, CachedInputTokens: 1, OutputTokens: 2, TotalTokens: 9},
			Total: codexrpc.Tokens{InputTokens: 70, CachedInputTokens: 10, OutputTokens: 20, TotalTokens: 90}},
		codexrpc.Error{ThreadID: "thr-1", TurnID: "t1", WillRetry: true, Error: codexrpc.ErrorInfo{Message: "m", Kind: "responseStreamDisconnected", HTTPStatus: 502}},
	}
	for i, w := range want {
		if got := fmt.Sprintf("%+v", notes[2+i].Value); got != fmt.Sprintf("%+v", w) {
			t.Errorf("%s decoded as %s, want %s", notes[2+i].Method, got, fmt.Sprintf("%+v", w))
		}
	}
	if rl, ok := notes[4].Value.(codexrpc.RateLimits); !ok || rl.Primary == nil || *rl.Primary != (codexrpc.Window{UsedPercent: 42, WindowDurationMins: 300, ResetsAt: 1796140000}) || rl.Secondary != nil {
		t.Errorf("rate limits %+v", rl)
	}
	tc, ok := notes[5].Value.(codexrpc.TurnCompleted)
	if !ok || tc.Status != codexrpc.StatusFailed || tc.Error == nil || tc.Error.Kind != "usageLimitExceeded" {
		t.Errorf("turn/completed decoded as %+v", notes[5].Value)
	}
	if it, ok := notes[6].Value.(codexrpc.Item); !ok || it.Started || it.Type != codexrpc.ItemContextCompaction {
		t.Errorf("item/completed decoded as %+v", notes[6].Value)
	}
	if bad := notes[7]; bad.Value != nil || bad.Err == nil {
		t.Errorf("a turn/completed with a bad turn decoded as %+v, err %v", bad.Value, bad.Err)
	}
	if !strings.Contains(log.String(), "not JSON") || !strings.Contains(log.String(), "refused the app-server's request item/commandExecution/requestApproval") {
		t.Errorf("log: %q", log.String())
	}
	if _, err := c.StartTurn(ctx, "thr-1", "x"); err == nil {
		t.Error("a call after the process ended succeeded")
	}
}
