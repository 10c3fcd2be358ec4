package supervisor

import (
	"context"
	"sync"

	"github.com/flowerhq/flower/front"
	"github.com/flowerhq/flower/harness"
	"github.com/flowerhq/flower/transcript"
)

// Headless is the default front: the harness as a stream-json process
// (package harness). It translates every record the harness writes into
// facts with a front.Translator and decides nothing: a turn of any kind is
// a user line on stdin, a cut, a stopped tool and a cancel are each the
// interrupt request (the translator told, so that the turn's result reads
// as interrupted), the end after a turn is stdin closed (DESIGN.md
// «Fronts»).
type Headless struct{}

var (
	_ front.Launcher     = Headless{}
	_ front.Session      = (*headlessSession)(nil)
	_ front.Prober       = (*headlessSession)(nil)
	_ front.Acknowledger = (*headlessSession)(nil)
)

// Capabilities implements front.Launcher: a stream-json harness waits for
// its first user line on stdin, so it can be started before the line is
// known; the engine sends every turn, and nobody types.
func (Headless) Capabilities() front.Capabilities {
	return front.Capabilities{StartEarly: true, Resumes: true}
}

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
	h := &headlessSession{p: p, prompt: s.Prompt, facts: make(chan front.Fact), quit: make(chan struct{}),
		acked: make(chan struct{}, 1)}
	go h.translate()
	return h, nil
}

type headlessSession struct {
	p      *harness.Process
	prompt string
	facts  chan front.Fact
	// quit is closed by Stop: what the harness says after it is
	// discarded, as the harness package discards what nobody read.
	quit     chan struct{}
	stopOnce sync.Once

	// mu guards the translator: the translating goroutine feeds it, the
	// engine's goroutine tells it of an interrupt.
	mu sync.Mutex
	tr front.Translator
	// running: a turn was sent and its result not yet translated; an
	// interrupt sent while none runs is no turn's.
	running bool
	// delivered and handled count the facts the engine took and the ones
	// it had its say on (Handled); acked signals a Handled.
	delivered, handled int
	acked              chan struct{}
}

// translate turns the harness's records into facts, in order, until the
// harness is gone; then Facts is closed.
func (h *headlessSession) translate() {
	defer close(h.facts)
	var batch []front.Fact
	for ev := range h.p.Events() {
		if ev.Kind == transcript.KindResult {
			// A turn's result is read once the engine has had its say on
			// everything before it: an interrupt it sent on the way (a cut
			// at the round before) is the translator's to know, whatever
			// the timing (front.EndingOf).
			h.settle()
		}
		batch = batch[:0]
		h.mu.Lock()
		h.tr.Facts(&ev, func(f front.Fact) {
			if _, ok := f.(front.TurnEnded); ok {
				h.running = false
			}
			batch = append(batch, f)
		})
		h.mu.Unlock()
		for _, f := range batch {
			select {
			case h.facts <- f:
				h.mu.Lock()
				h.delivered++
				h.mu.Unlock()
			case <-h.quit:
			}
		}
	}
}

// settle waits until the engine has handled every fact delivered, or the
// session is stopped (a fact that ends the attempt is followed by Stop).
func (h *headlessSession) settle() {
	for {
		h.mu.Lock()
		done := h.handled >= h.delivered
		h.mu.Unlock()
		if done {
			return
		}
		select {
		case <-h.acked:
		case <-h.quit:
			return
		}
	}
}

// Handled implements front.Acknowledger: the engine had its say on a fact.
func (h *headlessSession) Handled() {
	h.mu.Lock()
	h.handled++
	h.mu.Unlock()
	select {
	case h.acked <- struct{}{}:
	default:
	}
}

func (h *headlessSession) Facts() <-chan front.Fact { return h.facts }

func (h *headlessSession) Begin() error { return h.send(h.prompt) }

// Send runs a turn of any kind: the stream-json harness takes each as a
// user line.
func (h *headlessSession) Send(t front.Turn) error { return h.send(t.Prompt) }

func (h *headlessSession) send(prompt string) error {
	h.mu.Lock()
	h.running = true
	h.mu.Unlock()
	return h.p.SendUser(prompt)
}

// Cut, StopTool and Cancel are all the harness's interrupt request: the
// stream-json harness knows no purpose, and needs none.
func (h *headlessSession) Cut() error      { return h.interrupt() }
func (h *headlessSession) StopTool() error { return h.interrupt() }
func (h *headlessSession) Cancel() error   { return h.interrupt() }

func (h *headlessSession) interrupt() error {
	h.mu.Lock()
	if h.running {
		h.tr.Interrupting()
	}
	h.mu.Unlock()
	return h.p.Interrupt()
}

func (h *headlessSession) EndAfterTurn() error { return h.p.CloseInput() }

func (h *headlessSession) Stop() {
	h.p.Stop()
	h.stopOnce.Do(func() { close(h.quit) })
}

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
	<-h.p.Done() // Facts closes before the exit status is known
	why := "the harness exited before the turn ended"
	if err := h.p.Err(); err != nil {
		why += " (" + err.Error() + ")"
	}
	if tail := lastLine(h.p.Stderr()); tail != "" {
		why += ": " + tail
	}
	return front.Exit{Why: why, Skipped: h.p.Skipped()}
}
