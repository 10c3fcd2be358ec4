package main

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/urfave/cli/v2"

	"github.com/flowerhq/flower/manifest"
	"github.com/flowerhq/flower/runview"
	"github.com/flowerhq/flower/safefile"
	"github.com/flowerhq/flower/workbench"
)

func showCommand(p proc) *cli.Command {
	return &cli.Command{
		Name:      "show",
		Usage:     "show what a run did, from its manifest",
		UsageText: "flower show [--json | --html [-o FILE] [--lang L]] [-C WORKSPACE] [RUN_DIR]\nflower show --temporal HOST:PORT [--namespace N] [--json] WORKFLOW_ID",
		Description: `Prints a run's manifest.json as a person reads it: per step the task's
first line and the file it is frozen in (notes/任务-STEP.md), its status,
failed attempts, total cost and turns, context and window, latest session,
retired sessions and errors (交接降级(…) marks a degraded handoff), then
one row per generation: its session, context at the handoff, cost, turns,
whether the handoff was degraded and why, and the handoff file where it is
now (an earlier generation's in notes/archive/交接/).
RUN_DIR defaults to WORKSPACE/.flower/runs/latest, the last run started.

Examples:
   flower show                                  # the latest run here
   flower show -C ~/src/app                     # the latest run of another workspace
   flower show .flower/runs/20261130-112853     # a given run
   flower show --json | jq '.steps[].cost_usd'  # the manifest as written
   flower show --html                           # on a terminal: writes RUN_DIR/run.html, prints its path
   flower show --html RUN_DIR > page.html       # stdout not a terminal: the page itself`,
		Flags: append([]cli.Flag{
			workspaceFlag(),
			&cli.BoolFlag{Name: "json", Usage: "print manifest.json as it is on disk (with --temporal: the status query's answer)"},
		}, append(htmlFlags(), temporalFlags(false)...)...),
		Action: func(c *cli.Context) error {
			if c.String("temporal") != "" {
				return showTemporal(c, p)
			}
			return showAction(c, p)
		},
	}
}

// workspaceFlag is the -C flag of the commands that read a past run.
func workspaceFlag() cli.Flag {
	return &cli.StringFlag{Name: "workspace", Aliases: []string{"C"}, Value: ".",
		Usage: "the workspace `DIR` whose latest run to use when RUN_DIR is not given"}
}

func showAction(c *cli.Context, p proc) error {
	dir, err := runDirOf(c)
	if err != nil {
		return err
	}
	if c.Bool("html") {
		return showHTML(c, p, dir)
	}
	m, err := loadManifest(dir)
	if err != nil {
		return err
	}
	out := p.stdout
	if c.Bool("json") {
		// As on disk, once Load has vouched for it; a rewrite in between
		// is atomic, so this is still a whole manifest.
		data, err := safefile.ReadFile(dir, manifest.Path(dir), manifest.MaxSize, "a manifest")
		if err != nil {
			return fmt.Errorf("read manifest: %w", err)
		}
		if !bytes.HasSuffix(data, []byte("\n")) {
			data = append(data, '\n')
		}
		_, err = out.Write(data)
		return err
	}
	return runview.Write(out, m, dir)
}

// runDirOf is the command's RUN_DIR argument, or the workspace's latest
// run: the runs/latest link, else the newest run dir by name (they are
// named by start time).
func runDirOf(c *cli.Context) (string, error) {
	dir, err := findRunDir(c)
	if err != nil {
		return "", err
	}
	if dir, err = filepath.Abs(dir); err != nil {
		return "", err
	}
	// Nothing in it is read before it is checked (DESIGN.md «Territory»).
	if err := checkPastRun(dir); err != nil {
		return "", err
	}
	return dir, nil
}

func findRunDir(c *cli.Context) (string, error) {
	switch c.NArg() {
	case 0:
	case 1:
		dir := c.Args().First()
		fi, err := os.Stat(dir)
		if err != nil {
			return "", usagef("run dir %s does not exist", dir)
		}
		if !fi.IsDir() {
			return "", usagef("run dir %s is not a directory", dir)
		}
		return dir, nil
	default:
		return "", usagef("want at most one RUN_DIR, got %d arguments", c.NArg())
	}
	runs := workbench.RunsDir(workbench.DirOf(c.String("workspace")))
	dir, err := latestRunDir(c.String("workspace"), "%s")
	var se *safefile.Error
	switch {
	case err == nil:
		return dir, nil
	case errors.As(err, &se):
		return "", err
	}
	entries, err := os.ReadDir(runs)
	for i := len(entries) - 1; err == nil && i >= 0; i-- {
		if e := entries[i]; e.IsDir() {
			return filepath.Join(runs, e.Name()), nil
		}
	}
	return "", usagef("no runs in %s: give RUN_DIR, or the workspace with -C", runs)
}

// loadManifest reads the run's manifest, turning a missing one into a
// sentence; a corrupt one already names its file.
func loadManifest(dir string) (*manifest.Manifest, error) {
	m, err := manifest.LoadBound(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("no %s in %s: not a run dir, or its run has not started", manifest.FileName, dir)
	}
	return m, err
}
