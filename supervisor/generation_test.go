package supervisor

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/flowerhq/flower/handoffwriter"
	"github.com/flowerhq/flower/harness/harnesstest"
	"github.com/flowerhq/flower/manifest"
)

// One generation at a time, each on a Runtime of its own (as two workers
// sharing the workspace): the first hands off and returns its handoff; the
// second starts from it, read from the file, and ends the step. The
// manifest on disk records both as a local run would.
func TestRunGenerationHandsOffThenSucceeds(t *testing.T) {
	b := newBench(t, harnesstest.ModeStream, harnesstest.EnvContext+"=155000")
	ctx := context.Background()
	r1, err := b.runtime(Options{}).RunGeneration(ctx, GenerationInput{Step: "s", Task: "TASK-MARK"})
	if err != nil {
		t.Fatalf("generation 1: %v", err)
	}
	if r1.End != EndHandoff || r1.N != 1 || r1.Degraded || r1.Started != "the task" || r1.Path != b.handoffPath("s") ||
		!strings.Contains(r1.Handoff, harnesstest.HandoffMark) || len(r1.Retired) != 1 || r1.Reason != manifest.ReasonThreshold {
		t.Fatalf("generation 1's result: %+v", r1)
	}
	r2, err := b.runtime(Options{}).RunGeneration(ctx, GenerationInput{Step: "s", Task: "TASK-MARK", Handoff: r1.Handoff})
	if err != nil {
		t.Fatalf("generation 2: %v", err)
	}
	if r2.End != EndSucceeded || r2.N != 2 || r2.Started != b.handoffPath("s") || !strings.Contains(r2.Launched, harnesstest.HandoffMark) {
		t.Fatalf("generation 2's result: %+v", r2)
	}
	if p := b.firstPrompts()[1]; !strings.Contains(p, harnesstest.HandoffMark) || !strings.Contains(p, "TASK-MARK") {
		t.Errorf("generation 2's first prompt lacks the handoff or the task: %q", p)
	}
	disk := b.onDisk("s")
	if disk.Status != manifest.StatusSucceeded || len(disk.Generations) != 2 || disk.Generations[0].Handoff == nil ||
		disk.Generations[0].Handoff.SHA256Launched == "" || disk.CostUSD != r1.CostUSD+r2.CostUSD {
		t.Errorf("manifest: status %s, %d generations, cost %v (results %v + %v)", disk.Status, len(disk.Generations), disk.CostUSD, r1.CostUSD, r2.CostUSD)
	}
}

// A generation lost with its machine before the step had any handoff: the
// loss is recorded, a degraded handoff built from the task and the last
// heartbeat is frozen as the lost generation's, and a fresh generation
// starts from it.
func TestRunGenerationAfterLostWithoutHandoff(t *testing.T) {
	b := newBench(t, harnesstest.ModeStream)
	lost := &LostGeneration{Why: "worker w1 stopped heartbeating", SessionID: "dead-session", Context: 90_000, NumTurns: 4, CostUSD: 0.5}
	res, err := b.runtime(Options{}).RunGeneration(context.Background(), GenerationInput{Step: "s", Task: "TASK-MARK", Lost: lost})
	if err != nil {
		t.Fatalf("RunGeneration: %v", err)
	}
	if res.End != EndSucceeded || res.N != 2 || len(res.Generations) != 2 || !strings.Contains(res.Launched, handoffwriter.DegradedMarker) {
		t.Fatalf("result: %+v", res)
	}
	p := b.firstPrompts()[0]
	for _, want := range []string{handoffwriter.DegradedMarker, "dead-session", "w1", "TASK-MARK", "90.0K"} {
		if !strings.Contains(p, want) {
			t.Errorf("the first prompt lacks %q:\n%s", want, p)
		}
	}
	disk := b.onDisk("s")
	g1 := disk.Generations[0]
	if h := g1.Handoff; h == nil || !h.Degraded || h.Reason != manifest.ReasonLost || h.Outcome != manifest.OutcomeNoWritingTurn {
		t.Errorf("the lost generation's receipt: %+v", h)
	}
	if len(disk.Retired) == 0 || disk.Retired[0] != "dead-session" || !hasError(disk, "was lost with its machine") || !hasError(disk, "交接降级(") {
		t.Errorf("retired %q, errors %q", disk.Retired, disk.Errors)
	}
	if f, err := os.ReadFile(b.handoffPath("s")); err != nil || !strings.Contains(string(f), handoffwriter.DegradedMarker) {
		t.Errorf("handoff file: %v %q", err, f)
	}
}

// A generation lost after a handoff starts afresh from that handoff, with a
// note that work may have been done after it; the lost session is retired.
func TestRunGenerationAfterLostFromHandoff(t *testing.T) {
	b := newBench(t, harnesstest.ModeStream, harnesstest.EnvContext+"=155000")
	ctx := context.Background()
	r1, err := b.runtime(Options{}).RunGeneration(ctx, GenerationInput{Step: "s", Task: "TASK-MARK"})
	if err != nil || r1.End != EndHandoff {
		t.Fatalf("generation 1: %v %+v", err, r1)
	}
	// Generation 2 began on a worker that died: its record is open.
	rt := b.runtime(Options{})
	st := rt.m.Step("s")
	st.BeginGeneration("lost-session", rt.clock.Now())
	st.SetSessionID("lost-session")
	rt.save(st)
	rt.flush()
	lost := &LostGeneration{Why: "worker w2 stopped heartbeating", SessionID: "lost-session", Context: 40_000, NumTurns: 2}
	r2, err := b.runtime(Options{}).RunGeneration(ctx, GenerationInput{Step: "s", Task: "TASK-MARK", Handoff: r1.Handoff, Lost: lost})
	if err != nil || r2.End != EndSucceeded || r2.N != 3 {
		t.Fatalf("after the loss: %v %+v", err, r2)
	}
	p := b.firstPrompts()[1]
	if !strings.Contains(p, "lost with its machine") || !strings.Contains(p, harnesstest.HandoffMark) || strings.Contains(p, handoffwriter.DegradedMarker) {
		t.Errorf("the restarted generation's first prompt:\n%s", p)
	}
	disk := b.onDisk("s")
	if len(disk.Generations) != 3 || disk.Generations[1].Handoff != nil || disk.Generations[1].EndedAt == nil ||
		!strings.Contains(strings.Join(disk.Retired, " "), "lost-session") {
		t.Errorf("manifest: %d generations, generation 2 %+v, retired %q", len(disk.Generations), disk.Generations[1], disk.Retired)
	}
}

// A worker's generation in a run dir whose manifest a repository planted
// (its path is predictable: the workflow's id) takes the task from the
// workflow, not from the manifest or the task file next to it.
func TestRunGenerationIgnoresAPlantedTask(t *testing.T) {
	b := newBench(t, harnesstest.ModeStream)
	ctx := context.Background()
	if _, err := b.runtime(Options{}).RunGeneration(ctx, GenerationInput{Step: "s", Task: "PLANTED-MARK"}); err != nil {
		t.Fatalf("the planter's generation: %v", err)
	}
	r, err := b.runtime(Options{}).RunGeneration(ctx, GenerationInput{Step: "s", Task: "TASK-MARK"})
	if err != nil {
		t.Fatalf("generation: %v", err)
	}
	p := b.firstPrompts()
	if last := p[len(p)-1]; !strings.Contains(last, "TASK-MARK") || strings.Contains(last, "PLANTED-MARK") {
		t.Errorf("the generation's first prompt: %q", last)
	}
	if task, err := os.ReadFile(b.workspace + "/.flower/notes/任务-s.md"); err != nil || string(task) != "TASK-MARK" {
		t.Errorf("the task file holds %q (%v), want the workflow's task", task, err)
	}
	if !hasNotice(b.notices(), "the workflow's is used") || r.End != EndSucceeded {
		t.Errorf("end %s; notices %q", r.End, b.notices())
	}
}
