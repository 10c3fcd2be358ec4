package supervisor

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/flowerhq/flower/front/fronttest"
	"github.com/flowerhq/flower/handoffwriter"
	"github.com/flowerhq/flower/manifest"
)

// memCutRows are the guarantees table's rows of the cut (DESIGN.md «The
// cut», «Queued cut»): on a harness that queues turns, a reply that calls a
// tool is cut by the writing prompt sent into its turn; the interrupt is
// what is left for a tool that runs long (here), a harness that does not
// queue (the rows of the other fronts) and a cut decided on no reply.
func memCutRows() []memGuarantee {
	return []memGuarantee{
		{"queued cut: the writing prompt goes with the tool's result", memQueuedCut},
		{"queued cut: a tool that runs on is interrupted, the queued prompt its next turn", memQueuedCutLongTool},
		{"queued cut: an interrupt that crosses the taken prompt asks again", memQueuedCutLate},
		{"queued cut: flower stopped before the prompt is taken", memQueuedCutCancelled},
		{"queued cut: the harness ends the turn after the tool, the prompt its next turn", memQueuedCutStopped},
		{"a crossing reply that ends its turn ends the step", memCrossingLast},
	}
}

// memQueuedCut: the crossing reply's tool runs (a second on the fake
// clock), and the request after it is the writing request, in the same
// turn: no interrupt, one result for both, and the crossing reply → writing
// request is the tool's run and nothing more. The reply comes a line per
// content block, its tool call after its text, as the real harness writes
// it: the cut waits for the tool call's line.
func memQueuedCut(t *testing.T) {
	crossing := memTool(155_000, "echo two >> work.txt")
	crossing.Split = true
	r := newMemRun(t, [][]fronttest.Round{{memTool(100_000, "echo one >> work.txt"), crossing}, {memDone(20_000)}}, memHandoff)
	st, err := r.runtime(Options{Handoff: window(200_000)}).RunStep(t.Context(), memStep, memTask)
	if err != nil {
		t.Fatalf("RunStep: %v", err)
	}
	if st.Status != manifest.StatusSucceeded || len(st.Generations) != 2 {
		t.Fatalf("status %s, %d generations: want succeeded over a handoff", st.Status, len(st.Generations))
	}
	if h := st.Generations[0].Handoff; h == nil || h.Degraded || h.Reason != manifest.ReasonThreshold || h.Context != 155_000 {
		t.Fatalf("receipt %+v: want a whole handoff at the threshold, 155K", h)
	}
	log := r.front.Log()
	if cutIndex(log, 1) < 0 || slices.Contains(log, "cut 1") || slices.Contains(log, "cancel 1") {
		t.Errorf("want the writing prompt taken into the cut turn, no interrupt:\n%s", strings.Join(log, "\n"))
	}
	var w fronttest.Request
	for _, q := range r.front.Requests() {
		if q.Writing {
			w = q
			break
		}
	}
	// The writing request is the cut turn's third: it carries the
	// crossing reply's tool call (its result) and then the prompt.
	if w.Proc != 1 || w.Turn != 1 || w.Round != 3 {
		t.Errorf("the writing request is harness %d's turn %d round %d: want the cut turn's third request", w.Proc, w.Turn, w.Round)
	}
	if n := len(w.History); n < 2 || w.History[n-2] != "tool: echo two >> work.txt" || !strings.Contains(w.History[n-1], handoffwriter.PromptTag) {
		t.Errorf("the writing request's history ends %q: want the crossing tool's call, then the writing prompt", w.History[max(len(w.History)-2, 0):])
	}
	if p := r.front.Procs()[0].Prompts(); len(p) != 2 {
		t.Errorf("the first harness was sent %d prompts: want the task and the writing prompt, once", len(p))
	}
	r.checkEnds("1 on its own", "2 on its own")
	r.checkLineage(st)
}

// memQueuedCutLongTool: the crossing reply's tool runs for ten minutes. The
// queued cut waits queueWait for the harness to take the prompt, then
// interrupts as any cut does; the prompt it queued is the harness's next
// turn, sent once.
func memQueuedCutLongTool(t *testing.T) {
	long := memTool(155_000, "make -j8")
	long.Tool.Took = 10 * time.Minute
	r := newMemRun(t, [][]fronttest.Round{{memTool(100_000, "echo one >> work.txt"), long}, {memDone(20_000)}}, memHandoff)
	start := time.Now()
	st, err := r.runtime(Options{Handoff: window(200_000)}).RunStep(t.Context(), memStep, memTask)
	if err != nil {
		t.Fatalf("RunStep: %v", err)
	}
	if h := st.Generations[0].Handoff; len(st.Generations) != 2 || h == nil || h.Degraded {
		t.Fatalf("%d generations: want a whole handoff", len(st.Generations))
	}
	log := r.front.Log()
	cut, ended := slices.Index(log, "cut 1"), slices.Index(log, "ended 1 interrupted")
	if cut < 0 || ended < cut || slices.Contains(log, "taken 1") {
		t.Errorf("want the tool interrupted, the writing prompt its own turn:\n%s", strings.Join(log, "\n"))
	}
	if p := r.front.Procs()[0].Prompts(); len(p) != 2 || !strings.Contains(p[1], handoffwriter.PromptTag) {
		t.Errorf("the first harness's prompts %d: want the task and the writing prompt, once", len(p))
	}
	// One second for the first tool, queueWait for the cut: not the ten
	// minutes of the second.
	if took := time.Since(start); took < queueWait || took > queueWait+5*time.Second {
		t.Errorf("the step took %v on the clock: want the first tool and queueWait (%v)", took, queueWait)
	}
	r.checkEnds("1 interrupted", "1 on its own", "2 on its own")
	r.checkLineage(st)
}

// memQueuedCutLate: the harness takes the queued prompt just before the
// cut's patience runs out, and the front reads it only after: the
// interrupt reaches the writing turn. The engine asks for the document
// again, and the handoff is whole.
func memQueuedCutLate(t *testing.T) {
	crossing := memTool(155_000, "sleep 2.2")
	crossing.Tool.Took = queueWait + 200*time.Millisecond
	asks := 0
	r := newMemRun(t, [][]fronttest.Round{{memTool(100_000, "echo one >> work.txt"), crossing}, {memDone(20_000)}}, func(g int) fronttest.Round {
		h := memHandoff(g)
		if asks++; asks == 1 {
			h.Took = time.Minute // the interrupt lands in it
		}
		return h
	})
	r.front.Behind = 500 * time.Millisecond
	st, err := r.runtime(Options{Handoff: window(200_000)}).RunStep(t.Context(), memStep, memTask)
	if err != nil {
		t.Fatalf("RunStep: %v", err)
	}
	if h := st.Generations[0].Handoff; len(st.Generations) != 2 || h == nil || h.Degraded {
		t.Fatalf("%d generations, receipt %+v: want a whole handoff", len(st.Generations), h)
	}
	log := r.front.Log()
	taken, cut := slices.Index(log, "taken 1"), slices.Index(log, "cut 1")
	if taken < 0 || cut < taken {
		t.Errorf("want the prompt taken, then the cut's interrupt:\n%s", strings.Join(log, "\n"))
	}
	if p := r.front.Procs()[0].Prompts(); len(p) != 3 || !strings.Contains(p[2], handoffwriter.PromptTag) {
		t.Errorf("the first harness's prompts %d: want the task, the writing prompt and the writing prompt again", len(p))
	}
	r.checkEnds("1 interrupted", "1 on its own", "2 on its own")
	r.checkLineage(st)
}

// memQueuedCutCancelled: flower is stopped while the crossing tool runs and
// the writing prompt waits in the harness. The cancelled turn ends, and
// the writing prompt the harness then takes as its next turn is
// interrupted as it starts: no handoff, and the step is interrupted.
func memQueuedCutCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	long := memTool(155_000, "make -j8")
	long.Tool.Took = 10 * time.Minute
	long.Tool.Started = func(*fronttest.Proc) { time.AfterFunc(time.Second, cancel) }
	r := newMemRun(t, [][]fronttest.Round{{memTool(100_000, "echo one >> work.txt"), long}, {memDone(20_000)}}, func(g int) fronttest.Round {
		h := memHandoff(g)
		h.Took = time.Minute
		return h
	})
	st := r.runCancelled(ctx)
	if st.Generations[0].Handoff != nil {
		t.Errorf("a handoff %+v: want none", st.Generations[0].Handoff)
	}
	if log := r.front.Log(); count(log, "cancel 1") != 2 || slices.Contains(log, "cut 1") {
		t.Errorf("want the work turn cancelled, then the queued writing turn as it started:\n%s", strings.Join(log, "\n"))
	}
	r.checkEnds("1 interrupted", "1 interrupted")
	r.checkLineage(st)
}

// memQueuedCutStopped: the harness ends the cut turn once the crossing
// reply's tool has run, without another request (a Stop hook): the agent
// was not done, and the queued writing prompt is the harness's next turn,
// written from as any writing turn.
func memQueuedCutStopped(t *testing.T) {
	crossing := memTool(155_000, "echo two >> work.txt")
	crossing.Stopped = true
	r := newMemRun(t, [][]fronttest.Round{{memTool(100_000, "echo one >> work.txt"), crossing}, {memDone(20_000)}}, memHandoff)
	st, err := r.runtime(Options{Handoff: window(200_000)}).RunStep(t.Context(), memStep, memTask)
	if err != nil {
		t.Fatalf("RunStep: %v", err)
	}
	if h := st.Generations[0].Handoff; len(st.Generations) != 2 || h == nil || h.Degraded {
		t.Fatalf("%d generations: want a whole handoff", len(st.Generations))
	}
	if log := r.front.Log(); cutIndex(log, 1) >= 0 || len(r.front.Procs()[0].Prompts()) != 2 {
		t.Errorf("want no interrupt, and the writing prompt sent once, taken as a turn of its own:\n%s", strings.Join(log, "\n"))
	}
	r.checkEnds("1 on its own", "1 on its own", "2 on its own")
	r.checkLineage(st)
}

// memCrossingLast: the reply over the threshold calls no tool, and its turn
// ends on its own: the agent is done, and nothing is handed off (DESIGN.md
// «The cut»): no writing prompt, no interrupt.
func memCrossingLast(t *testing.T) {
	r := newMemRun(t, [][]fronttest.Round{{memTool(100_000, "echo one >> work.txt"), memDone(160_000)}}, memHandoff)
	st, err := r.runtime(Options{Handoff: window(200_000)}).RunStep(t.Context(), memStep, memTask)
	if err != nil {
		t.Fatalf("RunStep: %v", err)
	}
	if st.Status != manifest.StatusSucceeded || len(st.Generations) != 1 || st.Generations[0].Handoff != nil {
		t.Fatalf("status %s, %d generations: want done in one, no handoff", st.Status, len(st.Generations))
	}
	if log := r.front.Log(); cutIndex(log, 1) >= 0 || len(r.front.Procs()[0].Prompts()) != 1 {
		t.Errorf("want no cut and no writing prompt:\n%s", strings.Join(log, "\n"))
	}
	r.checkEnds("1 on its own")
	r.checkLineage(st)
}
