package codex

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/flowerhq/flower/codexrpc"
	"github.com/flowerhq/flower/front"
	"github.com/flowerhq/flower/handoffwriter"
	"github.com/flowerhq/flower/manifest"
	"github.com/flowerhq/flower/policy"
	"github.com/flowerhq/flower/supervisor"
)

// TestDecidedBeforeNextNotification: the engine has decided on a fact
// before the Codex front translates the next notification (DESIGN.md
// «Fronts»). The app-server here has sent a whole work turn before the
// engine reads any of it: a response over the threshold, then the turn's
// end as "interrupted". The engine cuts on the round; the end, translated
// only once the engine asks, is then the cut turn's, and the writing turn
// follows in the thread. A front that translated ahead would read an
// interrupt nobody sent (flower's hook stopping a compaction: the thread
// takes no more turns) and degrade the handoff.
func TestDecidedBeforeNextNotification(t *testing.T) {
	ws := filepath.Join(t.TempDir(), "ws")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	l := &aheadLauncher{}
	rt, err := supervisor.New(supervisor.Options{Workspace: ws, RunDir: filepath.Join(ws, ".flower", "runs", "order"), Workbench: true,
		Front: l, HarnessPath: "codex", Env: []string{"HOME=" + ws}, InboxPostsOnly: true,
		Handoff: &policy.HandoffPolicy{Enabled: true, Window: 200_000}})
	if err != nil {
		t.Fatal(err)
	}
	st, err := rt.RunStep(t.Context(), "order", "the task")
	if err != nil {
		t.Fatalf("RunStep: %v (errors %q)", err, st.Errors)
	}
	if len(st.Generations) != 2 || st.Generations[0].Handoff == nil {
		t.Fatalf("%d generations: want the cut turn's end read as interrupted and a handoff", len(st.Generations))
	}
	if h := st.Generations[0].Handoff; h.Reason != manifest.ReasonThreshold || h.Degraded {
		t.Errorf("handoff %+v: want a whole one at the threshold", h)
	}
	if l.interrupts != 1 {
		t.Errorf("%d interrupts, want the one cut", l.interrupts)
	}
}

// aheadLauncher's sessions are scripted app-servers that queue each turn's
// notifications whole as the turn starts.
type aheadLauncher struct {
	mu         sync.Mutex
	launched   int
	interrupts int
}

func (l *aheadLauncher) Capabilities() front.Capabilities { return Launcher{}.Capabilities() }

func (l *aheadLauncher) Launch(ctx context.Context, s front.Spec) (front.Session, error) {
	l.mu.Lock()
	l.launched++
	n := l.launched
	l.mu.Unlock()
	log := slog.New(slog.DiscardHandler)
	c := &aheadConn{l: l, gen: n, done: make(chan struct{})}
	return newSession(c, codexrpc.Thread{ID: fmt.Sprintf("thread-%d", n), Model: "gpt-test"}, s, log, &front.Tail{}), nil
}

type aheadConn struct {
	l     *aheadLauncher
	gen   int
	mu    sync.Mutex
	queue codexrpc.Queue
	turns int
	done  chan struct{}
	once  sync.Once
}

func (c *aheadConn) Next(ctx context.Context) (codexrpc.Notification, error) {
	return c.queue.Next(ctx)
}

// StartTurn queues the whole turn: the first session's work turn crosses
// the threshold and ends "interrupted" (as the cut will make it), its
// writing turn answers the document, the successor's turn ends the job.
func (c *aheadConn) StartTurn(ctx context.Context, thread, text string) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.turns++
	turn := fmt.Sprintf("turn-%d-%d", c.gen, c.turns)
	reply, context, status := "all done", 20_000, codexrpc.StatusCompleted
	switch {
	case strings.Contains(text, handoffwriter.PromptTag):
		reply, context = "## doing\nporting\n## decided\n(空)\n## deadends\n(空)\n## next\nport the rest\n## scene\n(空)\n", 165_000
	case c.gen == 1:
		reply, context, status = "working", 160_000, codexrpc.StatusInterrupted
	}
	if c.gen == 1 && status == codexrpc.StatusInterrupted {
		// A first response well below the threshold: a fresh session's.
		c.queue.Push(usage(thread, turn, 30_000))
	}
	c.queue.Push(agentMessage(thread, turn, reply), usage(thread, turn, context),
		codexrpc.Notification{Value: codexrpc.TurnCompleted{ThreadID: thread, TurnID: turn, Status: status}})
	return turn, nil
}

func usage(thread, turn string, context int) codexrpc.Notification {
	return codexrpc.Notification{Value: codexrpc.TokenUsage{ThreadID: thread, TurnID: turn, Last: codexrpc.Tokens{InputTokens: int64(context)}, ModelContextWindow: 190_000}}
}

func agentMessage(thread, turn, text string) codexrpc.Notification {
	raw, _ := json.Marshal(map[string]any{"threadId": thread, "turnId": turn, "item": map[string]any{"type": "agentMessage", "text": text}})
	return codexrpc.Notification{Method: codexrpc.NoteItemCompleted, Params: raw, Value: codexrpc.Item{ThreadID: thread, TurnID: turn, Type: "agentMessage"}}
}

func (c *aheadConn) Interrupt(ctx context.Context, thread, turn string) error {
	c.l.mu.Lock()
	c.l.interrupts++
	c.l.mu.Unlock()
	return nil
}

func (c *aheadConn) Close() error {
	c.once.Do(func() {
		c.queue.Close()
		close(c.done)
	})
	return nil
}

func (c *aheadConn) Done() <-chan struct{}   { return c.done }
func (c *aheadConn) Err() error              { return nil }
func (c *aheadConn) Exited() <-chan struct{} { return c.done }
func (c *aheadConn) ExitErr() error          { return nil }
