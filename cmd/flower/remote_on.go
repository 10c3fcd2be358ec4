//go:build temporal

package main

// The Temporal client is built into flower-temporal only (the temporal
// build tag): linking it costs every local flower about 10 MiB of memory
// and 20 ms before its harness starts (DESIGN.md «Two binaries»). Without
// the tag, these commands run flower-temporal (remote_off.go).

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/urfave/cli/v2"
	"go.temporal.io/sdk/client"

	"github.com/flowerhq/flower/console"
	"github.com/flowerhq/flower/event"
	"github.com/flowerhq/flower/fleet"
	"github.com/flowerhq/flower/harness"
	"github.com/flowerhq/flower/manifest"
	"github.com/flowerhq/flower/policy"
	"github.com/flowerhq/flower/registry"
	"github.com/flowerhq/flower/runview"
	"github.com/flowerhq/flower/supervisor"
	"github.com/flowerhq/flower/trust"
)

func init() {
	// Handed over by flower (delegate.go): the mark has done its work and
	// must not reach the harnesses this process starts.
	os.Unsetenv(envDelegated)
}

// memoryLimit: none. A worker holds the Temporal client's caches and runs
// several generations at once: a ceiling sized for one local run would
// keep its collector running.
const memoryLimit = 0

// submit's flag names the default of fleet without linking it.
var _ [fleet.DefaultHeartbeatTimeout - defaultHeartbeatTimeout]struct{} = [0]struct{}{}

func workerAction(c *cli.Context, p proc) error {
	if c.NArg() > 0 {
		return usagef("flower worker takes no arguments (harness arguments go after --), got %q", c.Args().First())
	}
	if c.Int("slots") < 1 {
		return usagef("--slots must be at least 1")
	}
	set, err := settingsFrom(c, p)
	if err != nil {
		return err
	}
	harnessPath, err := findHarness(set.harness)
	if err != nil {
		return err
	}
	lang, err := console.ParseLang(set.view.lang)
	if err != nil {
		return usageError{err}
	}
	roots, err := fleet.ResolveRoots(c.StringSlice("workspace-root"))
	if err != nil {
		return usageError{err}
	}
	store, err := trust.Open(p.env) // DESIGN.md «Trust store»
	if err != nil {
		return usageError{err}
	}
	identity := c.String("identity")
	if identity == "" {
		host, _ := os.Hostname()
		identity = fmt.Sprintf("%s-%d", host, os.Getpid())
	}
	logger := slog.New(slog.NewTextHandler(p.stderr, &slog.HandlerOptions{Level: slog.LevelError})) // notices reach the status lines
	cl, err := dialTemporal(c, identity, logger)
	if err != nil {
		return err
	}
	defer cl.Close()
	status := console.NewStatus(p.stderr, lang)
	var slots atomic.Int64
	g := &fleet.Generations{Identity: identity, Roots: roots, Trust: store, SkipWorkspaceSettings: set.skipWorkspace, Live: func(workspace, step, runDir string) (func(event.Event), func()) {
		h := register(p, logger, registry.Entry{Front: registry.FrontWorker, Workspace: workspace, Step: step, RunDir: runDir,
			Slot: int(slots.Add(1))})
		return h.Event, func() { h.Close() }
	}, Options: supervisor.Options{
		Front: harness.Headless{}, Handoff: &set.handoff, Compact: set.compact, HarnessPath: harnessPath, HarnessArgs: p.harnessArgs, HookBinary: hookBinary,
		Env: set.harnessEnv, Model: set.model, MaxAttempts: set.maxAttempts, TurnTimeout: set.turnTimeout, Reach: reachOf(kindClaude, set.harnessEnv, p.harnessArgs, ""),
		TaskCarry: set.taskCarry, Logger: logger,
		OnEvent: func(ev event.Event) {
			switch ev.Kind {
			case event.KindGeneration:
				fmt.Fprintf(p.stderr, "flower worker: step %s · generation %d started\n", console.Escape(ev.Step), ev.Generation)
			case event.KindHandoff, event.KindNotice, event.KindRetry, event.KindAPI:
				status.Handle(ev)
			}
		},
	}}
	w := fleet.NewWorker(cl, c.String("task-queue"), g, c.Int("slots"))
	fmt.Fprintf(p.stderr, "flower worker %s: taking generations from task queue %s at %s, for workspaces in %s\n",
		identity, c.String("task-queue"), c.String("temporal"), strings.Join(roots, ", "))
	stop := make(chan any)
	go func() {
		<-c.Context.Done()
		close(stop)
	}()
	if err := w.Run(stop); err != nil {
		return fmt.Errorf("worker: %w", err)
	}
	return c.Context.Err()
}

func submitAction(c *cli.Context, p proc) error {
	if err := mistypedCommand(c, asTaskSubmit); err != nil {
		return err
	}
	if err := checkSubmitFlags(c); err != nil {
		return err
	}
	task, err := readTask(c, p.stdin)
	if err != nil {
		return err
	}
	ws, err := filepath.Abs(c.String("workspace"))
	if err != nil {
		return err
	}
	if fi, err := os.Stat(ws); err != nil || !fi.IsDir() {
		return usagef("workspace %s is not a directory", ws)
	}
	lang, err := console.ParseLang(langOf(c, p.env))
	if err != nil {
		return usageError{err}
	}
	status := console.NewStatus(p.stderr, lang)
	if home, err := os.UserHomeDir(); err == nil {
		status.ShortenHome(home)
	}
	cl, err := dialTemporal(c, "", nil)
	if err != nil {
		return err
	}
	defer cl.Close()
	in := fleet.StepInput{Step: c.String("step"), Task: task, Workspace: ws, HeartbeatTimeout: c.Duration("heartbeat-timeout")}
	if err := submitBounds(c, &in, time.Now()); err != nil { // unattended: the step's budget and deadline
		return err
	}
	run, err := fleet.Submit(c.Context, cl, c.String("task-queue"), c.String("id"), in)
	if err != nil {
		return fmt.Errorf("submit step %s: %w", c.String("step"), err)
	}
	fmt.Fprintln(p.stdout, run.GetID())
	if !c.Bool("wait") {
		return nil
	}
	return fleet.Follow(c.Context, cl, run, status.Handle, p.stderr)
}

func handoffSetAction(c *cli.Context, p proc) error {
	if c.NArg() != 2 {
		return usagef("want WORKFLOW_ID FILE, got %d arguments", c.NArg())
	}
	id, file := c.Args().Get(0), c.Args().Get(1)
	_, doc, err := supervisor.ReadGivenHandoffFile(file)
	if err != nil {
		return usageError{err}
	}
	cl, err := dialTemporal(c, "", nil)
	if err != nil {
		return err
	}
	defer cl.Close()
	abs, _ := filepath.Abs(file)
	if err := fleet.SetHandoff(c.Context, cl, id, fleet.HandoffEdit{Document: string(doc), From: abs}); err != nil {
		return err
	}
	fmt.Fprintf(p.stderr, "flower: the next generation of %s starts from %s\n", id, file)
	return nil
}

// handoffNowTemporal signals a step's workflow: the worker running its
// generation hands off at the next message boundary.
func handoffNowTemporal(c *cli.Context, p proc) error {
	id, err := oneArg(c, "WORKFLOW_ID")
	if err != nil {
		return err
	}
	cl, err := dialTemporal(c, "", nil)
	if err != nil {
		return err
	}
	defer cl.Close()
	if err := fleet.HandoffNow(c.Context, cl, id, "flower handoff now"); err != nil {
		return err
	}
	fmt.Fprintf(p.stdout, "flower: asked %s for a handoff; its worker hands off at the next message boundary\n", id)
	return nil
}

// dialTemporal connects to the server the flags name. A server that does
// not answer is a usage error: one line, exit 2.
func dialTemporal(c *cli.Context, identity string, log *slog.Logger) (client.Client, error) {
	cl, err := fleet.Dial(c.Context, fleet.Conn{HostPort: c.String("temporal"), Namespace: c.String("namespace"),
		Identity: identity, Logger: log, Security: securityFrom(c)})
	if errors.Is(err, fleet.ErrUnreachable) || errors.Is(err, fleet.ErrConfig) {
		return nil, usageError{err}
	}
	return cl, err
}

// securityFrom reads the TLS and API-key flags (temporal.go).
func securityFrom(c *cli.Context) fleet.Security {
	return fleet.Security{
		TLS: c.Bool("tls"), NoTLS: c.IsSet("tls") && !c.Bool("tls"),
		CAFile: c.String("tls-ca-path"), CertFile: c.String("tls-cert-path"), KeyFile: c.String("tls-key-path"),
		ServerName: c.String("tls-server-name"), APIKey: c.String("api-key"),
	}
}

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
	// An ended step was last updated when it ended: two looks at it say
	// the same, with or without a worker.
	updated := time.Now()
	if st.Record.EndedAt != nil {
		updated = *st.Record.EndedAt
	}
	m := &manifest.Manifest{Workspace: st.Workspace, CreatedAt: st.Record.StartedAt, UpdatedAt: updated,
		Steps: []*manifest.StepResult{&st.Record}}
	var b strings.Builder // escaped as a whole: workers and submitters wrote it
	fmt.Fprintf(&b, "%-10s %s\n", "workflow", id)
	running := ""
	if st.Running > 0 {
		running = fmt.Sprintf(" (generation %d running)", st.Running)
	}
	fmt.Fprintf(&b, "%-10s %d%s\n", "generations", st.Generations(), running)
	if err := runview.Write(&b, m, fleet.RunDir(st.Workspace, id)); err != nil {
		return err
	}
	switch {
	case live != nil && live.Generation == 0:
		fmt.Fprintf(&b, "\n  generation %d starting on %s\n", st.Running, live.Worker)
	case live != nil:
		fmt.Fprintf(&b, "\n  generation %d running on %s: context %s/%s · %d turns · $%.4f\n", live.Generation, live.Worker,
			policy.FormatUsed(live.Context), policy.FormatRound(live.Window), live.NumTurns, live.CostUSD)
	case st.Running > 0:
		fmt.Fprintf(&b, "\n  generation %d is waiting for a worker\n", st.Running)
	}
	if st.Pending != "" {
		fmt.Fprintf(&b, "  the next generation starts from a handoff set by a person (%s)\n", runview.OrDash(st.PendingFrom))
	}
	_, err = io.WriteString(p.stdout, console.Escape(b.String()))
	return err
}
