package main

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/flowerhq/flower/event"
	"github.com/flowerhq/flower/notify"
	"github.com/flowerhq/flower/registry"
	"github.com/flowerhq/flower/safefile"
	"github.com/flowerhq/flower/supervisor"
	"github.com/flowerhq/flower/workbench"
)

// runPlace is where one run of a front lives besides its Runtime: its run
// dir, the run's log, its entry in flower ps's registry and --notify's
// hook. run, continue, rerun, the interactive mode and the relay open it
// with openRun and build the run on it with startRun.
type runPlace struct {
	runDir  string
	logFile *os.File
	logger  *slog.Logger
	// live is the run's entry in flower ps's registry (nil: unlisted).
	live *registry.Handle
	// notifier runs --notify (DESIGN.md «Notify»); nil without it.
	notifier *notify.Notifier
	// own: the run dir was made for this run, so a run given up before it
	// ran anything leaves none behind.
	own bool
}

// runWhere says where a run goes: the workspace (absolute), the run dir
// ("" for a new one, named by newDir under the workbench's runs), the step.
type runWhere struct {
	workspace, runDir, step string
	newDir                  func(runs string) (string, error)
}

// openRun checks flower's territory (DESIGN.md «Territory») before
// anything is read or written in it, makes the run dir and opens the run's
// log: the workbench is checked before a new run dir is made in it, and
// the run dir again once it is there.
func openRun(w runWhere) (*runPlace, error) {
	dir := w.runDir
	var err error
	if dir != "" {
		if dir, err = filepath.Abs(dir); err != nil {
			return nil, err
		}
	}
	if err := (workbench.Territory{Workspace: w.workspace, RunDir: dir, Step: w.step}).Check(); err != nil {
		return nil, err
	}
	r := &runPlace{runDir: dir}
	if dir == "" {
		if r.runDir, err = w.newDir(workbench.RunsDir(workbench.DirOf(w.workspace))); err != nil {
			return nil, err
		}
		r.own = true
	}
	if err := r.open(w.workspace); err != nil {
		r.abandon()
		return nil, err
	}
	return r, nil
}

// open makes the run dir, checked, and opens its log.
func (r *runPlace) open(workspace string) error {
	var err error
	if r.runDir, err = filepath.Abs(r.runDir); err != nil {
		return err
	}
	if err := (workbench.Territory{Workspace: workspace, RunDir: r.runDir}).Check(); err != nil {
		return err
	}
	if err := workbench.MkdirRun(r.runDir, workbench.DirOf(workspace)); err != nil {
		return err
	}
	if r.logFile, err = safefile.OpenAppend(workbench.LogFile(r.runDir), logFileMode); err != nil {
		return fmt.Errorf("run dir %s is not writable: %w", r.runDir, err)
	}
	if fi, err := r.logFile.Stat(); err == nil && fi.Mode().Perm()&0o077 != 0 {
		// A log an older flower made readable to others: private from now on.
		_ = r.logFile.Chmod(fi.Mode().Perm() & 0o700)
	}
	r.logger = slog.New(slog.NewJSONHandler(r.logFile, &slog.HandlerOptions{Level: slog.LevelDebug}))
	return nil
}

// listen lists the run for flower ps as e and starts --notify's hook
// (command "": none); the events of the run go through both to next.
func (r *runPlace) listen(p proc, e registry.Entry, n notify.Options, next func(event.Event)) func(event.Event) {
	e.RunDir = r.runDir
	r.live = register(p, r.logger, e)
	onEvent := r.live.Tee(next)
	n.Env, n.Logger = p.env, r.logger
	if r.notifier = notify.New(n); r.notifier != nil {
		onEvent = notifyEvents(onEvent, r.notifier, r.runDir)
	}
	return onEvent
}

// startRun builds the run's Runtime from opts, on the run dir and its log,
// and takes its step before anything points at the run: a run refused
// because another owns the step leaves no run dir of its own behind
// (DESIGN.md «One step, one owner»). Then runs/latest points at it; latest
// hears why not, if it could not.
func (r *runPlace) startRun(opts supervisor.Options, step string, latest func(error)) (*supervisor.Runtime, error) {
	opts.RunDir, opts.Logger, opts.Workbench = r.runDir, r.logger, true
	rt, err := supervisor.New(opts)
	if err == nil {
		err = rt.Hold(step)
	}
	if err != nil {
		r.abandon()
		return nil, err
	}
	if err := linkLatest(rt.RunDir(), workbench.DirOf(opts.Workspace)); err != nil {
		latest(err)
	}
	return rt, nil
}

// close ends the run's hook (its last events delivered within its bound),
// its registry entry and its log, in that order.
func (r *runPlace) close() {
	r.notifier.Close(0)
	r.live.Close()
	if r.logFile != nil {
		r.logFile.Close()
	}
}

// abandon closes a run given up before it ran anything; a run dir made for
// it is removed.
func (r *runPlace) abandon() {
	r.close()
	if r.own {
		discardRunDir(r.runDir)
	}
}
