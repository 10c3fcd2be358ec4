package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/flowerhq/flower/logfollow"
	"github.com/flowerhq/flower/logview"
	"github.com/flowerhq/flower/registry"
	"github.com/flowerhq/flower/workbench"
)

func logsCommand(p proc) *cli.Command {
	return &cli.Command{
		Name:      "logs",
		Usage:     "print a run's structured log readably",
		UsageText: "flower logs [-f] [--json] [--level L] [--since T] [-C WORKSPACE] [RUN_DIR]",
		Description: `Prints RUN_DIR/flower.log, one line per record: time, level, step,
generation, phase, the message, then the record's other fields as
key=value. Session ids are shortened to 8 characters, dollar amounts to 4
decimals, and a handoff document is folded into one preview line below
its record (--json has every record whole). Records below --level (INFO)
or before --since are left out. RUN_DIR defaults to
WORKSPACE/.flower/runs/latest. With -f it keeps printing lines as they are
written, through the log being truncated or replaced, until the run
ends (no flower in flower ps runs in RUN_DIR) or Ctrl-C.

Examples:
   flower logs                        # the latest run's log, INFO and above
   flower logs -f                     # follow the run going on now
   flower logs --level debug --since 10m
   flower logs --since 14:30          # today from 14:30 (or 2026-12-01 14:30)
   flower logs --json | jq 'select(.level == "WARN")'
   flower logs .flower/runs/20261130-112853`,
		Flags: []cli.Flag{
			workspaceFlag(),
			&cli.BoolFlag{Name: "follow", Aliases: []string{"f"}, Usage: "keep printing new lines until interrupted"},
			&cli.BoolFlag{Name: "json", Usage: "print the records as written, one JSON object per line (every level unless --level is given)"},
			&cli.StringFlag{Name: "level", Value: "info", Usage: "leave out records below `LEVEL`: debug, info, warn or error"},
			&cli.StringFlag{Name: "since", Usage: "leave out records before `T`: a duration back from now (10m, 2h) or a time (15:04, 15:04:05, 2006-01-02 15:04, RFC 3339)"},
		},
		Action: func(c *cli.Context) error { return logsAction(c, p) },
	}
}

func logsAction(c *cli.Context, p proc) error {
	dir, err := runDirOf(c)
	if err != nil {
		return err
	}
	path := workbench.LogFile(dir)
	lp := &logview.Printer{W: p.stdout, Raw: c.Bool("json")}
	if err := logFilters(lp, c, time.Now()); err != nil {
		return err
	}
	if c.Bool("follow") {
		// Ctrl-C, or the run's end, is how following ends: not an error.
		ctx, stop := context.WithCancel(c.Context)
		defer stop()
		ended := make(chan struct{})
		go func() {
			if runEnds(ctx, p.env, dir, runCheckInterval) {
				close(ended)
				stop()
			}
		}()
		err := logfollow.Follow(ctx, path, logfollow.Options{}, lp.Line)
		select {
		case <-ended:
			fmt.Fprintf(p.stderr, "flower: no flower runs in %s any more: its log is printed to the end\n", dir)
		default:
		}
		return err
	}
	err = lp.File(path)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("no %s in %s: not a run dir, or its run has not started", workbench.LogFileName, dir)
	}
	return err
}

// runCheckInterval is how often logs -f asks flower ps's registry whether
// the run it follows still runs.
const runCheckInterval = time.Second

// runEnds waits until no live flower in the registry (flower ps's) runs in
// dir, and reports true; false when ctx ends first. A run is taken for
// ended only after two looks in a row, so that one starting now has the
// time to list itself. A run not listed (its registry could not be
// written) ends its follow at once: the rarer loss, against following an
// ended run for ever.
func runEnds(ctx context.Context, env []string, dir string, every time.Duration) bool {
	reg, err := registry.Dir(env)
	if err != nil {
		return false // no registry to ask: Ctrl-C alone ends following
	}
	want := sameDir(dir)
	t := time.NewTicker(every)
	defer t.Stop()
	for misses := 0; ; {
		live := false
		entries, err := registry.List(reg)
		if err != nil {
			return false
		}
		for _, e := range entries {
			live = live || want(e.RunDir)
		}
		if misses++; live {
			misses = 0
		}
		if misses >= 2 {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-t.C:
		}
	}
}

// sameDir reports whether a path names dir, through links (runs/latest).
func sameDir(dir string) func(string) bool {
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		real = dir
	}
	return func(p string) bool {
		if r, err := filepath.EvalSymlinks(p); err == nil {
			p = r
		}
		return p == real
	}
}

// logFilters reads --level and --since. With --json, only a level given
// filters: the records as written are all of them.
func logFilters(p *logview.Printer, c *cli.Context, now time.Time) error {
	if !p.Raw || c.IsSet("level") {
		if err := p.Min.UnmarshalText([]byte(c.String("level"))); err != nil {
			return usagef("--level %s: want debug, info, warn or error", c.String("level"))
		}
		p.Filter = true
	} else {
		p.Min = slog.LevelDebug
	}
	if c.IsSet("since") {
		t, err := logview.ParseSince(c.String("since"), now)
		if err != nil {
			return usagef("%v", err)
		}
		p.Since, p.Filter = t, true
	}
	return nil
}
