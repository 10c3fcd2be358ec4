package main

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"

	"github.com/flowerhq/flower/safefile"
	"github.com/flowerhq/flower/workbench"
)

// latestRunDir is the run dir <workspace>/.flower/runs/latest points at.
// Only flower's own link is followed (DESIGN.md «Territory»): a planted
// directory or file, or a link out of the runs folder, is refused with a
// message naming it. none is the sentence for no link at all.
func latestRunDir(workspace, none string) (string, error) {
	ws, err := filepath.Abs(workspace)
	if err != nil {
		return "", err
	}
	runs := workbench.RunsDir(workbench.DirOf(ws))
	if err := safefile.Check(ws, runs, safefile.Dir); err != nil {
		return "", err
	}
	dir, err := workbench.LatestTarget(runs)
	var se *safefile.Error
	switch {
	case errors.As(err, &se):
		return "", err
	case errors.Is(err, fs.ErrNotExist):
		return "", usagef("%s", fmt.Sprintf(none, runs))
	case err != nil:
		return "", err
	}
	return dir, nil
}

// checkPastRun checks flower's territory around the run dir of an earlier
// run before its manifest or log is read: the workbench that holds it (if
// one does) and the run dir's own files.
func checkPastRun(runDir string) error {
	return workbench.Territory{Workspace: workbench.HoldingWorkspace(runDir), RunDir: runDir}.Check()
}
