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
	"github.com/flowerhq/flower/notify"
	"github.com/flowerhq/flower/policy"
	"github.com/flowerhq/flower/registry"
	"github.com/flowerhq/flower/relay"
	"github.com/flowerhq/flower/safefile"
	"github.com/flowerhq/flower/supervisor"
	"github.com/flowerhq/flower/workbench"
)

// runRelay is flower started by an application in the harness's place (the
// Agent SDK's pathToClaudeCodeExecutable): args are the harness's own, the
// application owns them, so flower's settings come from the environment;
// stdout carries the protocol only (DESIGN.md «Agent SDK relay»).
func runRelay(ctx context.Context, args []string, p proc) error {
	env := func(k string) string { v, _ := envinject.Lookup(p.env, k); return strings.TrimSpace(v) }
	pol := policy.HandoffPolicy{Enabled: !strings.EqualFold(env("FLOWER_HANDOFF"), "off"),
		Knobs: policy.Knobs{Window: envWindow, Off: "FLOWER_HANDOFF=off"}}
	// The flags' variables, read with the flags' rules (run.go
	// numberRules): a zero the engine would replace by a default is
	// refused, not taken.
	for _, r := range numberRules {
		to := map[string]*int{envWindow: &pol.Window, envHeadroom: &pol.Headroom, envMaxGenerations: &pol.MaxGenerations}[r.env]
		if to == nil {
			continue
		}
		n, ok, err := envNumber(r, env)
		if err != nil {
			return err
		}
		if ok {
			*to = n
		}
	}
	var bounds jobSettings // unattended: FLOWER_MAX_BUDGET_USD, FLOWER_MAX_DURATION
	if err := envUnattended(&bounds, env); err != nil {
		return err
	}
	harnessPath, err := relayHarness(env("FLOWER_HARNESS"), env("PATH"))
	if err != nil {
		return err
	}
	workspace, err := os.Getwd()
	if err != nil {
		return err
	}
	wb := workbench.DirOf(workspace)
	runDir := env("FLOWER_RUN_DIR")
	if runDir == "" {
		// Two queries of one application may start in the same second.
		runDir = filepath.Join(workbench.RunsDir(wb), fmt.Sprintf("%s-sdk-%d", time.Now().UTC().Format("20060102-150405"), os.Getpid()))
	}
	step := env("FLOWER_STEP")
	if step == "" {
		// An application may run several queries in one directory at
		// once: each keeps its own handoff file.
		step = fmt.Sprintf("sdk-%d", os.Getpid())
	}
	if runDir, err = filepath.Abs(runDir); err != nil {
		return err
	}
	// Nothing of flower's is read or written before it is checked
	// (DESIGN.md «Territory»).
	if err := (workbench.Territory{Workspace: workspace, RunDir: runDir, Step: step}).Check(); err != nil {
		return err
	}
	// DESIGN.md «Trust store»: an application that left the workspace's
	// setting sources out itself needs no trust for them.
	q := p
	q.harnessArgs = args
	store, args, err := gateWorkspace(q, workspace, env(envSkipWorkspace) != "", !relayLeavesWorkspaceOut(args))
	if err != nil {
		return err
	}
	if err := workbench.MkdirRun(runDir, wb); err != nil {
		return err
	}
	logFile, err := safefile.OpenAppend(workbench.LogFile(runDir), logFileMode)
	if err != nil {
		return fmt.Errorf("run dir %s is not writable: %w", runDir, err)
	}
	defer logFile.Close()
	logger := slog.New(slog.NewJSONHandler(logFile, &slog.HandlerOptions{Level: slog.LevelDebug}))
	logger.Info("flower relays the Agent SDK", "harness", harnessPath, "args", harness.LoggedArgs(args))

	// Apps keep the first session id they saw: resuming a retired one
	// resumes its live successor.
	if id, ok := relay.Value(args, "--resume"); ok && id != "" {
		var extra []string
		if d := env("FLOWER_RUN_DIR"); d != "" {
			extra = append(extra, d)
		}
		live, moved, err := relay.LiveSuccessor(wb, extra, id)
		if err != nil {
			logger.Error("resume", "err", err)
			return err
		}
		if moved {
			logger.Info("resuming the live successor of a retired session", "asked", id, "live", live)
			args = relay.Replace(args, "--resume", live)
		}
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
	// The status lines a person would watch go to the log, and to stderr
	// on request; stdout is the application's.
	var lines strings.Builder
	status := console.NewStatus(&lines, console.LangEn)
	toStderr := strings.EqualFold(env("FLOWER_STATUS"), "stderr")
	notifyTimeout := notify.DefaultTimeout
	if v := env("FLOWER_NOTIFY_TIMEOUT"); v != "" {
		if notifyTimeout, err = time.ParseDuration(v); err != nil || notifyTimeout <= 0 {
			return usagef("FLOWER_NOTIFY_TIMEOUT=%q: want a duration such as 10s", v)
		}
	}
	// DESIGN.md «Notify»; closed before the log it reports to.
	notifier := notify.New(notify.Options{Command: env("FLOWER_NOTIFY"), Timeout: notifyTimeout, Env: p.env, Logger: logger})
	defer notifier.Close(0)
	model, _ := relay.Value(args, "--model")
	live := register(p, logger, registry.Entry{Front: registry.FrontRelay, Workspace: workspace, Step: step, RunDir: runDir})
	defer live.Close()
	rt, err := supervisor.New(supervisor.Options{
		Workspace: workspace, RunDir: runDir, Workbench: true, Handoff: &pol,
		HarnessPath: harnessPath, HarnessArgs: args, HookBinary: hookBinary, Env: p.env, Model: model, Front: rl, Logger: logger, Trust: store,
		MaxBudgetUSD: bounds.maxBudgetUSD, MaxDuration: bounds.maxDuration,
		OnEvent: func(ev event.Event) {
			live.Event(ev)
			rl.Event(ev)
			if nev, ok := notify.FromRun(ev, runDir); ok {
				notifier.Send(nev)
			}
			lines.Reset()
			status.Handle(ev)
			if text := lines.String(); text != "" {
				logger.Info("status", "lines", text)
				if toStderr {
					_, _ = io.WriteString(p.stderr, text)
				}
			}
		},
	})
	if err != nil {
		return err
	}
	// The step is this run's before anything points at the run; a relay
	// refused because another run owns the step leaves no run dir of its
	// own behind (DESIGN.md «One step, one owner»).
	if err := rt.Hold(step); err != nil {
		if env("FLOWER_RUN_DIR") == "" {
			live.Close()
			logFile.Close()
			discardRunDir(runDir)
		}
		return err
	}
	if err := linkLatest(rt.RunDir(), wb); err != nil {
		logger.Warn("runs/latest not updated", "err", err)
	}
	rl.Start()
	// A resumed conversation is no fresh session (DESIGN.md «Futile guard»).
	resume, _ := relay.Value(args, "--resume")
	st, err := rt.RunStepResuming(ctx, step, "", resume)
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
			notifier.Send(ev)
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
	return "", fmt.Errorf("%w (looked for claude on PATH, skipping flower itself, and %s)", errNoHarness, cachedHarness())
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
