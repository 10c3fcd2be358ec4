package fleet

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	sdklog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

// ErrUnreachable is wrapped by Dial's error when no Temporal server
// answers at the address.
var ErrUnreachable = errors.New("temporal server unreachable")

// Conn says where the Temporal server is.
type Conn struct {
	HostPort  string
	Namespace string // "default" when empty
	Logger    *slog.Logger
	// Identity names this process to the server (the worker's name).
	Identity string
	// Security is TLS and the API key for a secured server.
	Security Security
}

// ErrConfig is wrapped by Dial's error when the connection settings
// themselves are wrong (a TLS file that cannot be read, say).
var ErrConfig = errors.New("temporal connection settings")

// dialTimeout bounds the first contact with the server.
const dialTimeout = 10 * time.Second

// Dial connects to the server and checks that it answers, so that a wrong
// address fails at once with one clear error wrapping ErrUnreachable.
func Dial(ctx context.Context, c Conn) (client.Client, error) {
	log := c.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithTimeout(ctx, dialTimeout)
	defer cancel()
	opts := client.Options{HostPort: c.HostPort, Namespace: c.Namespace,
		Logger: sdklog.NewStructuredLogger(log), Identity: c.Identity}
	if err := c.Security.apply(&opts); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrConfig, err)
	}
	cl, err := client.DialContext(ctx, opts)
	if err != nil {
		msg := firstLine(err.Error())
		if c.Security.APIKey != "" {
			msg = strings.ReplaceAll(msg, c.Security.APIKey, "****")
		}
		return nil, fmt.Errorf("%w at %s: %v", ErrUnreachable, c.HostPort, msg)
	}
	return cl, nil
}

// NewWorker returns a worker for the task queue that runs steps' workflows
// and at most slots generations at once (0: the SDK's default).
func NewWorker(c client.Client, taskQueue string, g *Generations, slots int) worker.Worker {
	w := worker.New(c, taskQueue, worker.Options{MaxConcurrentActivityExecutionSize: slots, Identity: g.Identity})
	Register(w)
	g.client = c
	w.RegisterActivityWithOptions(g.Generation, activity.RegisterOptions{Name: ActivityType})
	return w
}

// Registry is where the workflow is registered: a worker, or a replayer.
type Registry interface {
	RegisterWorkflowWithOptions(w any, options workflow.RegisterOptions)
}

// Register registers StepWorkflow under its type name.
func Register(r Registry) {
	r.RegisterWorkflowWithOptions(StepWorkflow, workflow.RegisterOptions{Name: WorkflowType})
}

// Submit starts a step on the task queue and returns its workflow id: id
// when given, else one made from the step's name and the time.
func Submit(ctx context.Context, c client.Client, taskQueue, id string, in StepInput) (client.WorkflowRun, error) {
	if id == "" {
		id = fmt.Sprintf("flower-%s-%s", in.Step, time.Now().UTC().Format("20060102-150405.000"))
	}
	return c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: taskQueue,
		StaticSummary: "flower step " + in.Step,
		StaticDetails: "task: " + firstLine(in.Task),
	}, WorkflowType, in)
}

// Query asks the step's workflow for its Status. A step that has ended
// says it in its result (or, when it did not succeed, in its error's
// details), read without a worker; a running one is asked by query, which
// a worker answers.
func Query(ctx context.Context, c client.Client, workflowID string) (*Status, error) {
	if st, ok := ended(ctx, c, workflowID); ok {
		return st, nil
	}
	v, err := c.QueryWorkflow(ctx, workflowID, "", QueryStatus)
	if err != nil {
		return nil, fmt.Errorf("query step %s: %w", workflowID, err)
	}
	var st Status
	if err := v.Get(&st); err != nil {
		return nil, fmt.Errorf("query step %s: %w", workflowID, err)
	}
	return &st, nil
}

// ended is the Status an ended step's workflow returned, if it ended with
// one (a workflow terminated or cancelled from outside did not).
func ended(ctx context.Context, c client.Client, workflowID string) (*Status, bool) {
	d, err := c.DescribeWorkflowExecution(ctx, workflowID, "")
	if err != nil || d.GetWorkflowExecutionInfo().GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
		return nil, false
	}
	var st Status
	err = c.GetWorkflow(ctx, workflowID, "").Get(ctx, &st)
	var app *temporal.ApplicationError
	switch {
	case err == nil:
		return &st, true
	case errors.As(err, &app) && app.HasDetails() && app.Details(&st) == nil:
		return &st, true
	}
	return nil, false
}

// Live is what a running generation last heartbeated, nil when none runs
// (or it has not heartbeated yet).
func Live(ctx context.Context, c client.Client, workflowID string) (*Progress, error) {
	d, err := c.DescribeWorkflowExecution(ctx, workflowID, "")
	if err != nil {
		return nil, fmt.Errorf("describe step %s: %w", workflowID, err)
	}
	for _, pa := range d.GetPendingActivities() {
		if pa.GetActivityType().GetName() != ActivityType || pa.GetHeartbeatDetails() == nil {
			continue
		}
		if pa.GetState() == enumspb.PENDING_ACTIVITY_STATE_SCHEDULED {
			continue // between attempts: what it said belongs to a lost worker
		}
		var p Progress
		if err := converter.GetDefaultDataConverter().FromPayloads(pa.GetHeartbeatDetails(), &p); err != nil {
			return nil, fmt.Errorf("describe step %s: heartbeat: %w", workflowID, err)
		}
		return &p, nil
	}
	return nil, nil
}

// SetHandoff sends a person's handoff for the step's next generation.
func SetHandoff(ctx context.Context, c client.Client, workflowID string, e HandoffEdit) error {
	if err := c.SignalWorkflow(ctx, workflowID, "", SignalSetHandoff, e); err != nil {
		return fmt.Errorf("set handoff of %s: %w", workflowID, err)
	}
	return nil
}

// HandoffNow asks the running generation of workflowID for a handoff at
// its next message boundary.
func HandoffNow(ctx context.Context, c client.Client, workflowID, from string) error {
	if err := c.SignalWorkflow(ctx, workflowID, "", SignalHandoffNow, from); err != nil {
		return fmt.Errorf("ask %s for a handoff: %w", workflowID, err)
	}
	return nil
}

func firstLine(s string) string {
	for i := 0; i < len(s); i++ {
		if s[i] == '\n' {
			return s[:i]
		}
	}
	return s
}
