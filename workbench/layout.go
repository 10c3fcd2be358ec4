package workbench

import "path/filepath"

// The layout of flower's folders, spelled out here and nowhere else
// (DESIGN.md «Run layout»):
//
//	<workspace>/.flower                      the workbench (DirOf)
//	<workbench>/notes/…                      handoff and task files (NotesDir, «Handoff files»)
//	<workbench>/runs/<name>                  a run dir (RunsDir, NewRunDir, RunDirs)
//	<workbench>/runs/latest                  a link to the newest run dir (LinkLatest, LatestTarget)
//	<workbench>/runs/.step-<step>.lock       a step's owner (StepLock)
//	<run dir>/manifest.json                  the manifest (manifest.Path)
//	<run dir>/flower.log                     the run's structured log (LogFile)
const (
	// DirName is the workbench's folder in a workspace.
	DirName = ".flower"
	// RunsName is the folder of the run dirs in a workbench.
	RunsName = "runs"
	// LatestName is the link in a runs folder to the newest run dir.
	LatestName = "latest"
	// LogFileName is the structured log in each run dir.
	LogFileName = "flower.log"
)

// DirOf is the workbench of a workspace.
func DirOf(workspace string) string { return filepath.Join(workspace, DirName) }

// RunsDir is the folder of a workbench's run dirs.
func RunsDir(workbenchDir string) string { return filepath.Join(workbenchDir, RunsName) }

// NotesDir is the folder of a workbench's handoff and task files.
func NotesDir(workbenchDir string) string { return filepath.Join(workbenchDir, notesDir) }

// LogFile is a run dir's structured log.
func LogFile(runDir string) string { return filepath.Join(runDir, LogFileName) }

// HoldingWorkspace returns the workspace whose workbench holds runDir
// (<workspace>/.flower/runs/<name>), or "" when runDir lies elsewhere.
func HoldingWorkspace(runDir string) string {
	runs := filepath.Dir(filepath.Clean(runDir))
	wb := filepath.Dir(runs)
	if filepath.Base(runs) == RunsName && filepath.Base(wb) == DirName {
		return filepath.Dir(wb)
	}
	return ""
}
