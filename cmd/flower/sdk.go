package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/flowerhq/flower/child"
	"github.com/flowerhq/flower/console"
	"github.com/flowerhq/flower/envinject"
	"github.com/flowerhq/flower/event"
	"github.com/flowerhq/flower/harness"
	"github.com/flowerhq/flower/manifest"
	"github.com/flowerhq/flower/notify"
	"github.com/flowerhq/flower/policy"
	"github.com/flowerhq/flower/registry"
	"github.com/flowerhq/flower/relay"
	"github.com/flowerhq/flower/supervisor"
	"github.com/flowerhq/flower/trust"
	"github.com/flowerhq/flower/workbench"
)

// runRelay is flower started by an application in the harness's place (the
// Agent SDK's pathToClaudeCodeExecutable): args are the harness's own, the
// application owns them, so flower's settings come from the environment;
// stdout carries the protocol only (DESIGN.md «Agent SDK relay»).
func runRelay(ctx context.Context, args []string, p proc) error {
	env := func(k string) string { v, _ := envinject.Lookup(p.env, k); return strings.TrimSpace(v) }
	set, err := relaySettings(env)
	if err != nil {
		return err
	}
	workspace, err := os.Getwd()
	if err != nil {
		return err
	}
	step := env("FLOWER_STEP")
	if step == "" {
		// An application may run several queries in one directory at
		// once: each keeps its own handoff file.
		step = fmt.Sprintf("sdk-%d", os.Getpid())
	}
	// DESIGN.md «Trust store»: an application that left the workspace's
	// setting sources out itself needs no trust for them.
	q := p
	q.harnessArgs = args
	store, args, admit, err := gateWorkspace(q, workspace, env(envSkipWorkspace) != "", relayGate(args))
	if err != nil {
		return err
	}
	newDir := func(runs string) (string, error) {
		// Two queries of one application may start in the same second.
		return filepath.Join(runs, fmt.Sprintf("%s-sdk-%d", time.Now().UTC().Format("20060102-150405"), os.Getpid())), nil
	}
	place, err := openRun(runWhere{workspace: workspace, runDir: env("FLOWER_RUN_DIR"), step: step, newDir: newDir})
	if err != nil {
		return err
	}
	defer place.close()
	logger := place.logger
	logger.Info("flower relays the Agent SDK", "harness", set.harness, "args", harness.LoggedArgs(args))
	if args, err = relayResume(args, env, workbench.DirOf(workspace), logger); err != nil {
		return err
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	gone := func(err error) {
		logger.Warn("the application is gone; stopping", "err", err)
		cancel(fmt.Errorf("%w: the application is gone (%v)", context.Canceled, err))
		child.KillAll()
	}
	go watchParent(ctx, gone)
	// A write to an application that is gone fails with EPIPE instead of
	// killing flower outright, so the step is recorded as it stops.
	// (Notify, not Ignore: an ignored signal would stay ignored in the
	// harness.)
	sigpipe := make(chan os.Signal, 1)
	signal.Notify(sigpipe, syscall.SIGPIPE)
	defer signal.Stop(sigpipe)
	rl := relay.New(relay.Config{In: p.stdin, Out: p.stdout, Args: args, Logger: logger, Gone: gone})
	var stderr io.Writer
	if strings.EqualFold(env("FLOWER_STATUS"), "stderr") {
		stderr = p.stderr
	}
	onEvent := place.listen(p, registry.Entry{Front: registry.FrontRelay, Workspace: workspace, Step: step},
		notify.Options{Command: env("FLOWER_NOTIFY"), Timeout: set.notifyTimeout}, relayStatus(rl, logger, stderr))
	model, _ := relay.Value(args, "--model")
	rt, err := place.startRun(supervisor.Options{
		Workspace: workspace, Handoff: &set.handoff,
		HarnessPath: set.harness, HarnessArgs: args, HookBinary: hookBinary, Env: p.env, Model: model, Front: rl, Trust: store, Admit: admit,
		Reach:        reachOf(kindClaude, p.env, args, workspace),
		MaxBudgetUSD: set.maxBudgetUSD, MaxDuration: set.maxDuration, OnEvent: onEvent,
	}, step, func(err error) { logger.Warn("runs/latest not updated", "err", err) })
	if err != nil {
		return err
	}
	rl.Start()
	// A resumed conversation is no fresh session (DESIGN.md «Futile guard»).
	resume, _ := relay.Value(args, "--resume")
	st, err := rt.RunStepResuming(ctx, step, "", resume)
	return relayEnded(rl, place, rt, st, err)
}

// relaySettings reads the relay's settings from the environment: the
// handoff policy, the step's bounds, --notify's bound and the harness.
// The flags' variables are read with the flags' rules (run.go
// numberRules): a zero the engine would replace by a default is refused,
// not taken.
func relaySettings(env func(string) string) (jobSettings, error) {
	set := jobSettings{handoff: policy.HandoffPolicy{Enabled: !strings.EqualFold(env("FLOWER_HANDOFF"), "off"),
		Knobs: policy.Knobs{Window: envWindow, Off: "FLOWER_HANDOFF=off"}}}
	pol := &set.handoff
	for _, r := range numberRules {
		to := map[string]*int{envWindow: &pol.Window, envHeadroom: &pol.Headroom, envMaxGenerations: &pol.MaxGenerations}[r.env]
		if to == nil {
			continue
		}
		n, ok, err := envNumber(r, env)
		if err != nil {
			return set, err
		}
		if ok {
			*to = n
		}
	}
	// unattended: FLOWER_MAX_BUDGET_USD, FLOWER_MAX_DURATION
	if err := envUnattended(&set, env); err != nil {
		return set, err
	}
	set.notifyTimeout = notify.DefaultTimeout
	if v := env("FLOWER_NOTIFY_TIMEOUT"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return set, usagef("FLOWER_NOTIFY_TIMEOUT=%q: want a duration such as 10s", v)
		}
		set.notifyTimeout = d
	}
	var err error
	set.harness, err = relayHarness(env("FLOWER_HARNESS"), env("PATH"))
	return set, err
}

// relayResume points a --resume of a retired session at its live
// successor: applications keep the first session id they saw.
func relayResume(args []string, env func(string) string, wb string, logger *slog.Logger) ([]string, error) {
	id, ok := relay.Value(args, "--resume")
	if !ok || id == "" {
		return args, nil
	}
	var extra []string
	if d := env("FLOWER_RUN_DIR"); d != "" {
		extra = append(extra, d)
	}
	live, moved, err := relay.LiveSuccessor(wb, extra, id)
	if err != nil {
		logger.Error("resume", "err", err)
		return nil, err
	}
	if moved {
		logger.Info("resuming the live successor of a retired session", "asked", id, "live", live)
		args = relay.Replace(args, "--resume", live)
	}
	return args, nil
}

// relayStatus passes the run's events to the relay, and the status lines a
// person would watch to the log, and to stderr when it is given: stdout is
// the application's.
func relayStatus(rl *relay.Relay, logger *slog.Logger, stderr io.Writer) func(event.Event) {
	var lines strings.Builder
	status := console.NewStatus(&lines, console.LangEn)
	return func(ev event.Event) {
		rl.Event(ev)
		lines.Reset()
		status.Handle(ev)
		if text := lines.String(); text != "" {
			logger.Info("status", "lines", text)
			if stderr != nil {
				_, _ = io.WriteString(stderr, text)
			}
		}
	}
}

// relayEnded tells the application and --notify's hook how the step
// ended, and gives the relay's exit error.
func relayEnded(rl *relay.Relay, place *runPlace, rt *supervisor.Runtime, st *manifest.StepResult, err error) error {
	sid := ""
	if st != nil {
		sid = st.SessionID
		if sid == "" && len(st.Retired) > 0 {
			sid = st.Retired[len(st.Retired)-1]
		}
	}
	rl.Finish(sid, err)
	if st != nil {
		for _, ev := range notify.StepEnded(st, rt.RunDir(), rt.Policy().MaxGenerations) {
			place.notifier.Send(ev)
		}
	}
	if _, bound := stopCode(err); bound {
		// A budget, a deadline or a limit outlasting its wait stopped the
		// step: its exit code says which, as in a run (docs/reference.md's "Exit codes").
		return err
	}
	if err != nil && !errors.Is(err, context.Canceled) {
		// The application reads the error result; the exit status says
		// only that the query failed, as the harness's would.
		return errors.New(err.Error())
	}
	return err
}

// relayHarness resolves the real harness for the relay: FLOWER_HARNESS,
// else claude on PATH, else the cached pinned copy. flower never runs
// itself as the harness: a FLOWER_HARNESS that is flower is refused, a PATH
// entry that is flower is skipped.
func relayHarness(given, path string) (string, error) {
	self, _ := os.Executable()
	if given != "" {
		p, err := findHarness(given)
		if err != nil {
			return "", err
		}
		if sameFile(p, self) {
			return "", usagef("FLOWER_HARNESS=%s is flower itself; point it at the real claude executable", given)
		}
		return p, nil
	}
	for _, dir := range filepath.SplitList(path) {
		if dir == "" {
			continue
		}
		p := filepath.Join(dir, "claude")
		if isExecutable(p) && !sameFile(p, self) {
			return p, nil
		}
	}
	if p := cachedHarness(); isExecutable(p) && !sameFile(p, self) {
		return p, nil
	}
	return "", fmt.Errorf("%w: looked for claude on PATH, skipping flower itself, and %s; pass --harness, set FLOWER_HARNESS, put claude on PATH, or run `make harness`", errNoHarness, cachedHarness())
}

func sameFile(a, b string) bool {
	if a == "" || b == "" {
		return false
	}
	fa, err := os.Stat(a)
	if err != nil {
		return false
	}
	fb, err := os.Stat(b)
	return err == nil && os.SameFile(fa, fb)
}

// parentPoll is how often pollParent looks whether flower was handed to
// another parent.
const parentPoll = 250 * time.Millisecond

// pollParent calls gone once flower's parent is no longer ppid (flower was
// handed to another parent because ppid exited), or returns when ctx is
// done. It is watchParent where the system gives no better way.
func pollParent(ctx context.Context, ppid int, gone func(error)) {
	t := time.NewTicker(parentPoll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if os.Getppid() != ppid {
				gone(fmt.Errorf("parent %d exited", ppid))
				return
			}
		}
	}
}

// relayGate is the relay's trust gate: none when the application's own
// arguments start the harness closed to the workspace.
func relayGate(args []string) *trust.Harness {
	if relayLeavesWorkspaceOut(args) {
		return nil
	}
	return &trust.ClaudeCode
}
