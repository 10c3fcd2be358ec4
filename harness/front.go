package harness

import (
	"context"

	"github.com/flowerhq/flower/front"
	"github.com/flowerhq/flower/transcript"
)

// Headless is the headless front: the Claude Code CLI as a stream-json
// process. It translates every record the harness writes into
// facts with a front.Translator and decides nothing: a turn of any kind is
// a user line on stdin, a cut, a stopped tool and a cancel are each the
// interrupt request (the translator told, so that the turn's result reads
// as interrupted), the end after a turn is stdin closed (DESIGN.md
// «Fronts»).
type Headless struct{}

var (
	_ front.Launcher = Headless{}
	_ front.Session  = (*headlessSession)(nil)
	_ front.Prober   = (*headlessSession)(nil)
	_ front.Syncer   = (*headlessSession)(nil)
)

// Capabilities implements front.Launcher: a stream-json harness waits for
// its first user line on stdin, so it can be started before the line is
// known; the engine sends every turn, and nobody types.
func (Headless) Capabilities() front.Capabilities {
	return front.Capabilities{StartEarly: true, Overlap: true, Resumes: true, Queues: true,
		CredentialFix: CredentialFix, Prepare: Prepare, ResumeRefused: ResumeRefused, Untested: Untested}
}

// Launch starts a stream-json harness. The first prompt is sent by Begin
// (or, for a harness started early, by the first Send).
func (Headless) Launch(ctx context.Context, s front.Spec) (front.Session, error) {
	p, err := Start(ctx, Config{
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
	return &headlessSession{p: p, prompt: s.Prompt, rec: front.NewRecords(p.Events(), s.Now)}, nil
}

// headlessSession reads its harness with front.Records, the loop the
// in-memory front of the engine's tests runs too.
type headlessSession struct {
	p      *Process
	prompt string
	rec    *front.Records
}

func (h *headlessSession) Next(ctx context.Context) (front.Fact, error) { return h.rec.Next(ctx) }

// Sync implements front.Syncer: the stdout reader runs apart from Next,
// and may not have read yet what the harness wrote before its hook ran.
func (h *headlessSession) Sync(ctx context.Context) error { return h.rec.Sync(ctx, h.p.Drained()) }

func (h *headlessSession) Begin() error { return h.send(h.prompt) }

// Send runs a turn of any kind: the stream-json harness takes each as a
// user line.
func (h *headlessSession) Send(t front.Turn) error { return h.send(t.Prompt) }

func (h *headlessSession) send(prompt string) error {
	return h.rec.Turn(func() error { return h.p.SendUser(prompt) })
}

// Cut, StopTool and Cancel are all the harness's interrupt request: the
// stream-json harness knows no purpose, and needs none.
func (h *headlessSession) Cut() error      { return h.interrupt() }
func (h *headlessSession) StopTool() error { return h.interrupt() }
func (h *headlessSession) Cancel() error   { return h.interrupt() }

func (h *headlessSession) interrupt() error { return h.rec.Interrupt(h.p.Interrupt) }

func (h *headlessSession) EndAfterTurn() error { return h.p.CloseInput() }

func (h *headlessSession) Stop() { h.p.Stop() }

func (h *headlessSession) Probe(ctx context.Context) (transcript.ContextUsage, error) {
	resp, err := h.p.Control(ctx, "get_context_usage")
	if err != nil {
		return transcript.ContextUsage{}, err
	}
	return transcript.ContextUsageOf(resp), nil
}

// Exit describes a harness that is gone: its exit status and the last line
// it wrote to stderr.
func (h *headlessSession) Exit() front.Exit {
	<-h.p.Done() // Next ends before the exit status is known
	why := "the harness exited before the turn ended"
	if err := h.p.Err(); err != nil {
		why += " (" + err.Error() + ")"
	}
	if tail := lastLine(h.p.Stderr()); tail != "" {
		why += ": " + tail
	}
	return front.Exit{Why: why, Skipped: h.p.Skipped()}
}
