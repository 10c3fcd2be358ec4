package fleet

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/flowerhq/flower/event"
	"github.com/flowerhq/flower/inbox"
	"github.com/flowerhq/flower/supervisor"
	"github.com/flowerhq/flower/trust"
	"github.com/flowerhq/flower/workbench"
)

// Progress is what a running generation heartbeats: the meter, and the
// handoff phase a person watching it would see (DESIGN.md «Status lines»).
type Progress struct {
	Worker     string
	Generation int
	SessionID  string
	Context    int
	Window     int
	At         int
	WarnAt     int
	CostUSD    float64 // the step's, so far in this generation's run
	NumTurns   int
	// Near and Writing are the handoff events of this generation, once
	// they happened.
	Near    *event.Event `json:",omitempty"`
	Writing *event.Event `json:",omitempty"`
}

// Outcome is the activity's result: the engine's, and the handoff events of
// the generation (near, writing, done), which a follower shows as a local
// run's status lines.
type Outcome struct {
	supervisor.GenerationResult
	Events []event.Event
}

// Generations is the activity: it runs one generation of a step on this
// worker with the engine of a local run.
type Generations struct {
	// Options are the worker's run flags; Workspace, RunDir, Workbench
	// and OnEvent are set per generation.
	Options supervisor.Options
	// Identity names this worker in heartbeats and errors.
	Identity string
	// Roots are where this worker runs steps (ResolveRoots); a step whose
	// workspace is elsewhere is refused. None refuses every step.
	Roots Roots
	// Trust is this worker's trust store (DESIGN.md «Trust store»): a
	// workspace whose files can run commands or set the harness's
	// environment runs only if it trusts them as they are, or, with
	// SkipWorkspaceSettings, without them. Nil trusts nothing.
	Trust                 *trust.Store
	SkipWorkspaceSettings bool
	// Live, when set, is told of each generation as it starts (what flower
	// ps lists, DESIGN.md «Live registry»): its events go to onEvent, and
	// done is called when the generation ends.
	Live func(workspace, step, runDir string) (onEvent func(supervisor.Event), done func())
	// client asks the workflow's status query for handoffs asked for
	// (set by NewWorker; nil: none are heard).
	client client.Client
}

// askPoll is how often a running generation reads its workflow's count of
// handoffs asked for.
const askPoll = time.Second

// RunDir is where a step run as workflow workflowID keeps its manifest:
// <workspace>/.flower/runs/<workflow id, made safe>.
func RunDir(workspace, workflowID string) string {
	return filepath.Join(workbench.RunsDir(workbench.DirOf(workspace)), workbench.SafeStepName(workflowID))
}

// Generation runs one generation (activity type FlowerGeneration). A step
// that ends, succeeded or not, is a result, not an error: the workflow ends
// it. Errors are for a generation that could not run here (its workspace
// is missing on this worker, the step is busy), or was cancelled.
//
// A second attempt after a first one that heartbeated is a generation
// whose worker was lost: the engine records it and starts afresh from the
// last handoff, or a degraded one built from the task and that heartbeat.
func (g *Generations) Generation(ctx context.Context, t GenerationTask) (*Outcome, error) {
	info := activity.GetInfo(ctx)
	workspace, err := g.admit(t)
	if err != nil {
		return nil, err
	}
	extra, note, err := trust.Gate(g.Trust, nil, workspace, g.SkipWorkspaceSettings)
	if err != nil {
		// Refused, not retried, as a workspace outside the roots is.
		return nil, temporal.NewNonRetryableApplicationError(fmt.Sprintf("worker %s refuses step %s: %v", g.Identity, t.Step, err), ErrTypeUntrusted, nil)
	}
	in := supervisor.GenerationInput{Step: t.Step, Task: t.Task, Handoff: t.Handoff, Replaced: t.Replaced, Lost: lostBefore(ctx, info)}

	hb := &heartbeat{ctx: ctx, p: Progress{Worker: g.Identity}}
	opts := g.Options
	opts.Workspace = workspace // the path checked, links resolved
	opts.Trust = g.Trust
	if !g.SkipWorkspaceSettings {
		// Weighed again before each later harness start, as a run on
		// the command line is: a file a script wrote mid-run is never
		// loaded by a successor.
		opts.Admit = func() error { return trust.Recheck(g.Trust, workspace) }
	}
	opts.HarnessArgs = append(append([]string(nil), extra...), opts.HarnessArgs...)
	opts.Workbench = true
	opts.WorkbenchDir = ""
	opts.RunDir = RunDir(workspace, info.WorkflowExecution.ID)
	// unattended: the step's budget, counted across workers, and its deadline
	opts.MaxBudgetUSD, opts.SpentUSD = t.BudgetUSD, t.SpentUSD
	if t.Deadline != nil {
		opts.Deadline = *t.Deadline
	}
	next := opts.OnEvent
	var live func(supervisor.Event)
	if g.Live != nil {
		var done func()
		live, done = g.Live(workspace, t.Step, opts.RunDir)
		defer done()
	}
	opts.OnEvent = func(ev supervisor.Event) {
		hb.observe(ev)
		if live != nil {
			live(ev)
		}
		if next != nil {
			next(ev)
		}
	}
	rt, err := supervisor.New(opts)
	if err != nil {
		return nil, temporal.NewNonRetryableApplicationError("set up step "+t.Step+" on worker "+g.Identity+": "+err.Error(), ErrTypeSetup, err)
	}
	if note != "" {
		opts.OnEvent(supervisor.Event{Kind: supervisor.KindNotice, Step: t.Step, Text: note})
	}
	hb.send()
	stop := hb.every(heartbeatEvery(t.HeartbeatTimeout))
	stopAsks := g.relayAsks(ctx, info.WorkflowExecution.ID, info.WorkflowExecution.RunID, t, inbox.Dir(opts.RunDir, t.Step))
	res, err := rt.RunGeneration(ctx, in)
	stopAsks()
	stop()
	if res == nil || res.End == supervisor.EndInterrupted {
		return nil, g.notRun(res, err, rt.RunDir())
	}
	return &Outcome{GenerationResult: *res, Events: hb.events}, nil
}

// admit is t's workspace on this worker, its links resolved, once the
// worker's roots admit it and it is a directory here.
func (g *Generations) admit(t GenerationTask) (string, error) {
	workspace, err := g.Roots.Admit(t.Workspace)
	var fi os.FileInfo
	if err == nil {
		fi, err = os.Stat(workspace)
	}
	switch {
	case err != nil && errors.Is(err, fs.ErrNotExist):
		return "", temporal.NewApplicationError(fmt.Sprintf("workspace %s is missing (%v) on worker %s: a step's workspace must be on a volume every worker mounts, at the same path", t.Workspace, err, g.Identity), ErrTypeWorkspace)
	case err != nil:
		// DESIGN.md «Workspace roots»: refused, not retried.
		return "", temporal.NewNonRetryableApplicationError(fmt.Sprintf("worker %s refuses step %s: %v", g.Identity, t.Step, err), ErrTypeWorkspaceRefused, nil)
	case !fi.IsDir():
		return "", temporal.NewApplicationError(fmt.Sprintf("workspace %s is not a directory on worker %s: a step's workspace must be on a volume every worker mounts, at the same path", t.Workspace, g.Identity), ErrTypeWorkspace)
	}
	return workspace, nil
}

// lostBefore is what the last heartbeat of a lost attempt said, on a
// retry that has one; nil otherwise.
func lostBefore(ctx context.Context, info activity.Info) *supervisor.LostGeneration {
	if info.Attempt <= 1 || !activity.HasHeartbeatDetails(ctx) {
		return nil
	}
	var last Progress
	if err := activity.GetHeartbeatDetails(ctx, &last); err != nil {
		return nil
	}
	return &supervisor.LostGeneration{
		Why:       fmt.Sprintf("worker %s stopped heartbeating (timeout %v); attempt %d", firstNonEmpty(last.Worker, "?"), info.HeartbeatTimeout, info.Attempt),
		SessionID: last.SessionID, Context: last.Context, NumTurns: last.NumTurns, CostUSD: last.CostUSD,
	}
}

// notRun is the activity's error for a generation with no result, or one
// cancelled, as Temporal should book it.
func (g *Generations) notRun(res *supervisor.GenerationResult, err error, runDir string) error {
	var busy *supervisor.BusyError
	switch {
	case res == nil && errors.As(err, &busy) && busy.RunDir != "" && busy.RunDir != runDir:
		// Another run owns the step in this workspace (another workflow,
		// or a local flower): waiting would not make it this one's
		// (DESIGN.md «One step, one owner»).
		return temporal.NewNonRetryableApplicationError("on worker "+g.Identity+": "+err.Error(), ErrTypeBusy, err)
	case res == nil && errors.Is(err, supervisor.ErrStepBusy):
		// This workflow's own run dir: a lost worker's generation still
		// holds it, and goes once its harness does.
		return temporal.NewApplicationError(err.Error(), ErrTypeBusy)
	case res == nil:
		return temporal.NewNonRetryableApplicationError(err.Error(), ErrTypeSetup, err)
	}
	return err // cancelled: Temporal books it as such
}

// heartbeatEvery is how often a running generation heartbeats: often enough
// that one late beat does not lose the worker.
func heartbeatEvery(timeout time.Duration) time.Duration {
	if timeout <= 0 {
		timeout = DefaultHeartbeatTimeout
	}
	return max(timeout/4, 200*time.Millisecond)
}

// heartbeat keeps the latest Progress and sends it.
type heartbeat struct {
	ctx context.Context
	mu  sync.Mutex
	p   Progress
	// events are the handoff events so far, for the Outcome.
	events []event.Event
}

func (h *heartbeat) observe(ev supervisor.Event) {
	h.mu.Lock()
	p := &h.p
	if ev.Generation > 0 {
		if ev.Generation != p.Generation {
			p.Near, p.Writing = nil, nil
		}
		p.Generation = ev.Generation
	}
	if ev.SessionID != "" {
		p.SessionID = ev.SessionID
	}
	if ev.Window > 0 {
		p.Window, p.At, p.WarnAt = ev.Window, ev.At, ev.WarnAt
	}
	if ev.Context > 0 && ev.Kind != supervisor.KindHandoff {
		p.Context = ev.Context
	}
	if ev.CostUSD > 0 {
		p.CostUSD = ev.CostUSD
	}
	important := false
	switch ev.Kind {
	case supervisor.KindTurn:
		p.NumTurns++
	case supervisor.KindHandoff:
		e := ev
		e.Raw = nil
		h.events = append(h.events, e)
		e.Handoff = nil
		switch ev.Phase {
		case supervisor.PhaseNear:
			p.Near, important = &e, true
		case supervisor.PhaseWriting:
			p.Writing, important = &e, true
		}
	}
	h.mu.Unlock()
	if important {
		h.send()
	}
}

func (h *heartbeat) send() {
	h.mu.Lock()
	p := h.p
	h.mu.Unlock()
	activity.RecordHeartbeat(h.ctx, p)
}

// every sends the progress every d until the returned stop is called.
func (h *heartbeat) every(d time.Duration) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(d)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				h.send()
			}
		}
	}()
	return func() { close(done); wg.Wait() }
}

func firstNonEmpty(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}

// relayAsks reads the workflow's count of handoffs asked for (flower
// handoff now --temporal signals it) and posts a request to the step's
// inbox for each new one: the engine hands off as for a local request
// (DESIGN.md «Handoff on request»).
func (g *Generations) relayAsks(ctx context.Context, workflowID, runID string, t GenerationTask, box string) (stop func()) {
	if g.client == nil {
		return func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		seen := t.AskedBefore
		tick := time.NewTicker(askPoll)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			v, err := g.client.QueryWorkflow(ctx, workflowID, runID, QueryStatus)
			if err != nil {
				continue
			}
			var st Status
			if v.Get(&st) != nil || st.HandoffsAsked <= seen {
				continue
			}
			seen = st.HandoffsAsked
			if _, err := inbox.Post(box, inbox.Request{Kind: inbox.KindHandoff, From: "flower handoff now --temporal"}); err != nil {
				activity.GetLogger(ctx).Warn("handoff asked for, but the step's inbox is not there", "err", err)
			}
		}
	}()
	return func() { cancel(); <-done }
}
