package main

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/flowerhq/flower/fleet"
	"github.com/flowerhq/flower/manifest"
	"github.com/flowerhq/flower/policy"
)

// showTemporal shows a step run on many machines: its workflow's status
// query (the step's record as manifest.json holds it) and what the running
// generation last heartbeated.
func showTemporal(c *cli.Context, p proc) error {
	id, err := oneArg(c, "WORKFLOW_ID")
	if err != nil {
		return err
	}
	cl, err := dialTemporal(c, "", nil)
	if err != nil {
		return err
	}
	defer cl.Close()
	st, err := fleet.Query(c.Context, cl, id)
	if err != nil {
		return err
	}
	live, _ := fleet.Live(c.Context, cl, id) // a step between generations has none
	if c.Bool("json") {
		out, err := json.MarshalIndent(struct {
			*fleet.Status
			Live *fleet.Progress `json:",omitempty"`
		}{st, live}, "", "  ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(p.stdout, "%s\n", out)
		return err
	}
	m := &manifest.Manifest{Workspace: st.Workspace, CreatedAt: st.Record.StartedAt, UpdatedAt: time.Now(),
		Steps: []*manifest.StepResult{&st.Record}}
	fmt.Fprintf(p.stdout, "%-10s %s\n", "workflow", id)
	running := ""
	if st.Running > 0 {
		running = fmt.Sprintf(" (generation %d running)", st.Running)
	}
	fmt.Fprintf(p.stdout, "%-10s %d%s\n", "generations", st.Generations(), running)
	if err := writeShow(p.stdout, m, fleet.RunDir(st.Workspace, id)); err != nil {
		return err
	}
	switch {
	case live != nil && live.Generation == 0:
		fmt.Fprintf(p.stdout, "\n  generation %d starting on %s\n", st.Running, live.Worker)
	case live != nil:
		fmt.Fprintf(p.stdout, "\n  generation %d running on %s: context %s/%s · %d turns · $%.4f\n", live.Generation, live.Worker,
			policy.FormatUsed(live.Context), policy.FormatRound(live.Window), live.NumTurns, live.CostUSD)
	case st.Running > 0:
		fmt.Fprintf(p.stdout, "\n  generation %d is waiting for a worker\n", st.Running)
	}
	if st.Pending != "" {
		fmt.Fprintf(p.stdout, "  the next generation starts from a handoff set by a person (%s)\n", orDash(st.PendingFrom))
	}
	return nil
}
