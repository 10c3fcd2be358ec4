package fleet_test

import (
	"log/slog"
	"testing"

	sdklog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/worker"

	"github.com/flowerhq/flower/fleet"
)

// TestReplay replays a recorded history of a three-generation step (two
// handoffs, on two workers) against the workflow code as it is now: a
// change that makes the workflow decide differently from the same results
// fails here, before it breaks running steps. The history was recorded by
// the integration test TestTemporalThreeGenerationsTwoWorkers
// (FLOWER_RECORD_HISTORY=<this file>).
func TestReplay(t *testing.T) {
	r := worker.NewWorkflowReplayer()
	fleet.Register(r)
	log := sdklog.NewStructuredLogger(slog.New(slog.DiscardHandler))
	if err := r.ReplayWorkflowHistoryFromJSONFile(log, "testdata/three-generations.json"); err != nil {
		t.Fatalf("replay: %v", err)
	}
}
