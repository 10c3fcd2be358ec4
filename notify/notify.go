// Package notify owns --notify (DESIGN.md «Notify»): a command of the
// person's, run once per event of a step that someone away from the
// terminal wants to hear about, with the event as one JSON object on its
// stdin. It never blocks or fails the run: events queue in order for one
// goroutine that runs the command with a time bound, a full queue drops
// (and says so), and every failure of the command is logged, nothing more.
package notify

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/flowerhq/flower/envinject"
)

// Kind names what an Event reports.
type Kind string

// The event kinds (DESIGN.md «Notify», «Unattended: limits, budget, deadline»).
const (
	KindHandoff         Kind = "handoff"          // a handoff done: Path, Degraded, Why, Reason
	KindGenerationLimit Kind = "generation_limit" // the step stopped at --max-generations (or the futile guard)
	KindStepEnd         Kind = "step_end"         // the step ended: Status, CostUSD, Generations, Error
	KindWaitBegin       Kind = "limit_wait_begin" // a wait for a rate or usage limit began: Limit, ResetAt
	KindWaitEnd         Kind = "limit_wait_end"   // that wait ended
	KindBudget          Kind = "budget_reached"   // the step's --max-budget-usd was reached
	KindDeadline        Kind = "deadline_reached" // the step's --max-duration was reached
)

// Event is the JSON object a hook reads on stdin. It carries no secret: no
// task text, no environment, no handoff content, only what names and counts
// the step's progress. Fields not relevant to a kind are left out.
type Event struct {
	Kind       Kind      `json:"kind"`
	Time       time.Time `json:"time"`
	Step       string    `json:"step"`
	RunDir     string    `json:"run_dir"`
	Generation int       `json:"generation,omitempty"`
	SessionID  string    `json:"session_id,omitempty"`

	// KindHandoff.
	Path     string `json:"path,omitempty"`
	Degraded bool   `json:"degraded,omitempty"`
	Why      string `json:"why,omitempty"`
	Reason   string `json:"reason,omitempty"` // threshold | overflow

	// KindStepEnd.
	Status      string  `json:"status,omitempty"`
	CostUSD     float64 `json:"cost_usd,omitempty"`
	Generations int     `json:"generations,omitempty"`
	Error       string  `json:"error,omitempty"`

	// KindWaitBegin, KindWaitEnd.
	Limit   string     `json:"limit,omitempty"` // rate_limit | usage_limit
	ResetAt *time.Time `json:"reset_at,omitempty"`

	// KindGenerationLimit, KindBudget, KindDeadline.
	MaxGenerations int           `json:"max_generations,omitempty"`
	BudgetUSD      float64       `json:"budget_usd,omitempty"`
	MaxDuration    time.Duration `json:"max_duration_ns,omitempty"`

	// Text is a one-line summary for a person ("handoff 2 → 3 written to …").
	Text string `json:"text,omitempty"`
	// Dropped counts the events dropped since the last one delivered,
	// because the queue was full (a hook slower than the run).
	Dropped int `json:"dropped,omitempty"`
}

// Defaults.
const (
	DefaultTimeout = 10 * time.Second
	DefaultQueue   = 64
)

// Options configure a Notifier.
type Options struct {
	// Command is run with sh -c; empty means no Notifier (New returns nil).
	Command string
	// Timeout bounds one run of the command; after it the command's
	// process group is killed. 0 means DefaultTimeout.
	Timeout time.Duration
	// Queue is how many events may wait for a slow command; one more is
	// dropped and counted. 0 means DefaultQueue.
	Queue int
	// Env is the command's base environment (flower's own); the harness's
	// credentials are removed from it, and FLOWER_EVENT, FLOWER_STEP and
	// FLOWER_RUN_DIR are added.
	Env    []string
	Logger *slog.Logger
}

// Notifier delivers events to the command, in order, from one goroutine.
// A nil *Notifier is valid and does nothing.
type Notifier struct {
	opts  Options
	log   *slog.Logger
	queue chan Event
	done  chan struct{}

	mu      sync.Mutex
	closed  bool
	dropped int
	// stop ends the command that runs now (Close past its bound).
	stop context.CancelFunc
	ctx  context.Context
}

// New starts a Notifier for opts.Command, or returns nil when it is empty.
func New(opts Options) *Notifier {
	if strings.TrimSpace(opts.Command) == "" {
		return nil
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.Queue <= 0 {
		opts.Queue = DefaultQueue
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	ctx, stop := context.WithCancel(context.Background())
	n := &Notifier{opts: opts, log: opts.Logger.With("notify", opts.Command), queue: make(chan Event, opts.Queue),
		done: make(chan struct{}), ctx: ctx, stop: stop}
	go n.loop()
	return n
}

// Send queues ev for the command and returns at once. A full queue drops
// ev (logged; the next delivered event counts it in Dropped). After Close,
// Send drops silently.
func (n *Notifier) Send(ev Event) {
	if n == nil {
		return
	}
	if ev.Time.IsZero() {
		ev.Time = time.Now().UTC()
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return
	}
	select {
	case n.queue <- ev:
	default:
		n.dropped++
		n.log.Warn("notify queue full: event dropped", "kind", ev.Kind, "step", ev.Step, "queue", n.opts.Queue, "dropped", n.dropped)
	}
}

// Close delivers what is queued and stops. It waits at most timeout (0:
// the command's own Timeout) for the queue to drain, then kills the command
// that runs and drops the rest, logging what it dropped. Close is safe to
// call twice.
func (n *Notifier) Close(timeout time.Duration) {
	if n == nil {
		return
	}
	n.mu.Lock()
	if !n.closed {
		n.closed = true
		close(n.queue)
	}
	n.mu.Unlock()
	if timeout <= 0 {
		timeout = n.opts.Timeout
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-n.done:
	case <-t.C:
		n.stop()
		<-n.done
	}
}

func (n *Notifier) loop() {
	defer close(n.done)
	for ev := range n.queue {
		if n.ctx.Err() != nil {
			n.log.Warn("notify: event dropped at close", "kind", ev.Kind, "step", ev.Step)
			continue
		}
		n.mu.Lock()
		ev.Dropped, n.dropped = n.dropped, 0
		n.mu.Unlock()
		n.deliver(ev)
	}
}

// deliver runs the command once for ev; it returns within the Timeout (and
// the WaitDelay after it) whatever the command does.
func (n *Notifier) deliver(ev Event) {
	body, err := json.Marshal(ev)
	if err != nil {
		n.log.Error("notify: encode event", "kind", ev.Kind, "err", err)
		return
	}
	ctx, cancel := context.WithTimeout(n.ctx, n.opts.Timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "/bin/sh", "-c", n.opts.Command)
	cmd.Stdin = bytes.NewReader(append(body, '\n'))
	var out limitedBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.Env = hookEnv(n.opts.Env, ev)
	// Its own process group, so that the kill reaches whatever it started
	// (a curl under the sh).
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	// A grandchild that keeps the output pipe open past the kill does not
	// hold the queue.
	cmd.WaitDelay = time.Second
	start := time.Now()
	err = cmd.Run()
	took := time.Since(start).Round(time.Millisecond)
	log := n.log.With("kind", ev.Kind, "step", ev.Step, "took", took.String())
	switch {
	case ctx.Err() != nil && errors.Is(ctx.Err(), context.DeadlineExceeded):
		log.Warn("notify command timed out and was killed", "timeout", n.opts.Timeout.String(), "output", out.String())
	case ctx.Err() != nil:
		log.Warn("notify command killed at close", "output", out.String())
	case err != nil:
		log.Warn("notify command failed", "err", err, "output", out.String())
	default:
		log.Debug("notify command done")
	}
}

// hookEnv is base without the harness's credentials, plus the event's
// variables (last, so they win).
func hookEnv(base []string, ev Event) []string {
	if base == nil {
		base = os.Environ()
	}
	drop := envinject.CredentialVars()
	env := make([]string, 0, len(base)+3)
	for _, kv := range base {
		name, _, _ := strings.Cut(kv, "=")
		secret := false
		for _, d := range drop {
			secret = secret || name == d
		}
		if !secret {
			env = append(env, kv)
		}
	}
	return append(env, "FLOWER_EVENT="+string(ev.Kind), "FLOWER_STEP="+ev.Step, "FLOWER_RUN_DIR="+ev.RunDir)
}

// limitedBuffer keeps the first 2 KiB of the command's output, for the log.
type limitedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

const outputLimit = 2048

func (l *limitedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if room := outputLimit - l.b.Len(); room > 0 {
		l.b.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

func (l *limitedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.TrimSpace(l.b.String())
}

var _ fmt.Stringer = (*limitedBuffer)(nil)
