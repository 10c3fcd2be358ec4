package supervisor

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/flowerhq/flower/front"
	"github.com/flowerhq/flower/front/fronttest"
	"github.com/flowerhq/flower/manifest"
)

// memRefusedRows are the guarantees table's rows of the commands a
// session refuses (command.go): each is decided on as a fact is.
func memRefusedRows() []memGuarantee {
	return []memGuarantee{
		{"the first prompt refused: the attempt fails, a new harness retries", memRefusedFirst},
		{"the queued writing prompt refused: the turn is interrupted, the prompt sent after it", memRefusedQueued},
		{"every writing prompt refused: the handoff degrades", memRefusedWriting},
	}
}

// errRefused is the refusal of the rows' harnesses.
var errRefused = errors.New("stdin closed")

// memRefusedFirst: harness 1 refuses its first prompt. The attempt fails
// (counted, recorded), and the retry's harness is given the task.
func memRefusedFirst(t *testing.T) {
	r := newMemRun(t, [][]fronttest.Round{{memDone(20_000)}}, memHandoff)
	r.front.Refuse = func(proc int, turn front.Turn) error {
		if proc == 1 {
			return errRefused
		}
		return nil
	}
	st, err := r.runtime(Options{Handoff: window(200_000)}).RunStep(t.Context(), memStep, memTask)
	if err != nil {
		t.Fatalf("RunStep: %v", err)
	}
	if st.Status != manifest.StatusSucceeded || st.Attempts != 1 || len(st.Generations) != 1 {
		t.Fatalf("status %s, attempts %d, %d generations: want succeeded after one failed attempt", st.Status, st.Attempts, len(st.Generations))
	}
	if !slices.ContainsFunc(st.Errors, func(e string) bool {
		return strings.Contains(e, "attempt 1:") && strings.Contains(e, "send prompt: stdin closed")
	}) {
		t.Errorf("errors %q do not record the refused prompt", st.Errors)
	}
	if procs := r.front.Procs(); len(procs) != 2 || !strings.Contains(r.firstPrompt(st, 0), "GUAR-TASK-MARK") {
		t.Errorf("%d harnesses: want the retry's harness given the task", len(procs))
	}
}

// memRefusedQueued: the cut queues the writing prompt beside the crossing
// reply's tool, and harness 1 refuses it once. The cut interrupts the turn
// at once, as a cut that cannot queue does (not at the next reply's tool
// call, nor after the queued cut's patience), and the writing prompt is
// the next turn: the handoff is whole.
func memRefusedQueued(t *testing.T) {
	r := newMemRun(t, memTwoGens, memHandoff)
	var writes []time.Time // the writing prompts' sends, on the row's clock
	r.front.Refuse = func(proc int, turn front.Turn) error {
		if proc != 1 || turn.Kind != front.TurnWriting {
			return nil
		}
		writes = append(writes, time.Now())
		if len(writes) == 1 {
			return errRefused
		}
		return nil
	}
	st, err := r.runtime(Options{Handoff: window(200_000)}).RunStep(t.Context(), memStep, memTask)
	if err != nil {
		t.Fatalf("RunStep: %v", err)
	}
	if st.Status != manifest.StatusSucceeded || len(st.Generations) != 2 {
		t.Fatalf("status %s, %d generations: want succeeded over a handoff", st.Status, len(st.Generations))
	}
	if h := st.Generations[0].Handoff; h == nil || h.Degraded || h.Reason != manifest.ReasonThreshold {
		t.Fatalf("receipt %+v: want a whole handoff at the threshold", h)
	}
	log := r.front.Log()
	refused, cut := slices.Index(log, "refused 1"), slices.Index(log, "cut 1")
	if refused < 0 || cut != refused+1 || !slices.Contains(log, "ended 1 interrupted") {
		t.Errorf("want the refusal, then at once the cut's interrupt, which ends the turn:\n%s", strings.Join(log, "\n"))
	}
	if len(writes) != 2 || !writes[1].Equal(writes[0]) {
		t.Errorf("writing prompts sent at %v: want the second as the interrupted turn ends, at once", writes)
	}
	if p := r.front.Procs()[0].Prompts(); len(p) != 2 {
		t.Errorf("the first harness took %d prompts: want the task and the writing prompt", len(p))
	}
	r.checkLineage(st)
}

// memRefusedWriting: harness 1 refuses every writing prompt, queued and
// after the interrupt: the handoff degrades, and the successor starts from
// the degraded document.
func memRefusedWriting(t *testing.T) {
	r := newMemRun(t, memTwoGens, memHandoff)
	r.front.Refuse = func(proc int, turn front.Turn) error {
		if proc == 1 && turn.Kind == front.TurnWriting {
			return errRefused
		}
		return nil
	}
	st, err := r.runtime(Options{Handoff: window(200_000)}).RunStep(t.Context(), memStep, memTask)
	r.checkDegraded(st, err, manifest.ReasonThreshold, "send the handoff prompt: stdin closed")
	if log := r.front.Log(); slices.Index(log, "cut 1") < slices.Index(log, "refused 1") {
		t.Errorf("want the queued prompt refused, then the cut's interrupt:\n%s", strings.Join(log, "\n"))
	}
}
