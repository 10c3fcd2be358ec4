package supervisor

import (
	"context"

	"github.com/tidwall/gjson"

	"github.com/flowerhq/flower/front"
	"github.com/flowerhq/flower/harness"
	"github.com/flowerhq/flower/transcript"
)

// Headless is the default front: the harness as a stream-json process
// (package harness), whose stdout already speaks the engine's vocabulary.
// It translates nothing: a prompt is a user line on stdin, a cut, a stopped
// tool and a cancel are each the interrupt request, the end after a turn is
// stdin closed (DESIGN.md «Fronts»).
type Headless struct{}

var (
	_ front.Launcher = Headless{}
	_ front.Session  = (*headlessSession)(nil)
	_ front.Prober   = (*headlessSession)(nil)
)

// Capabilities implements front.Launcher: a stream-json harness waits for
// its first user line on stdin, so it can be started before the line is
// known; the engine sends every turn, and nobody types.
func (Headless) Capabilities() front.Capabilities { return front.Capabilities{StartEarly: true} }

// Launch starts a stream-json harness. The first prompt is sent by Begin
// (or, for a harness started early, by the first Send).
func (Headless) Launch(ctx context.Context, s front.Spec) (front.Session, error) {
	p, err := harness.Start(ctx, harness.Config{
		Path: s.Path, Args: s.Args, Model: s.Model, Resume: s.Resume,
		Dir: s.Dir, Env: s.Env, Logger: s.Logger, Grace: s.Grace,
	})
	if err != nil {
		return nil, err
	}
	if s.Prompt == "" {
		// Started before its first prompt is known (a warm successor):
		// ready it while it waits (harness.Process.Warm).
		if err := p.Warm(); err != nil {
			p.Stop()
			return nil, err
		}
	}
	return &headlessSession{p: p, prompt: s.Prompt}, nil
}

type headlessSession struct {
	p       *harness.Process
	prompt  string
	stopped bool
}

// closed stands in for Records once the session is stopped: the harness
// package discards what nobody read by then.
var closed = func() chan transcript.Event { c := make(chan transcript.Event); close(c); return c }()

func (h *headlessSession) Records() <-chan transcript.Event {
	if h.stopped {
		return closed
	}
	return h.p.Events()
}
func (h *headlessSession) Begin() error             { return h.p.SendUser(h.prompt) }
func (h *headlessSession) Send(prompt string) error { return h.p.SendUser(prompt) }

// Cut, StopTool and Cancel are all the harness's interrupt request: the
// stream-json harness knows no purpose, and needs none.
func (h *headlessSession) Cut() error      { return h.p.Interrupt() }
func (h *headlessSession) StopTool() error { return h.p.Interrupt() }
func (h *headlessSession) Cancel() error   { return h.p.Interrupt() }

func (h *headlessSession) EndAfterTurn() error { return h.p.CloseInput() }
func (h *headlessSession) Stop()               { h.p.Stop(); h.stopped = true }

func (h *headlessSession) Probe(ctx context.Context) (gjson.Result, error) {
	return h.p.Control(ctx, "get_context_usage")
}

// Exit describes a harness that is gone: its exit status and the last line
// it wrote to stderr.
func (h *headlessSession) Exit() front.Exit {
	<-h.p.Done() // Records closes before the exit status is known
	why := "the harness exited before the turn ended"
	if err := h.p.Err(); err != nil {
		why += " (" + err.Error() + ")"
	}
	if tail := lastLine(h.p.Stderr()); tail != "" {
		why += ": " + tail
	}
	return front.Exit{Why: why, Skipped: h.p.Skipped()}
}
