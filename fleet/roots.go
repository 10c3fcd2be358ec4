package fleet

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// ErrTypeWorkspaceRefused: the step's workspace is outside every workspace
// root of the worker that got the generation. Not retried: the workers of a
// queue share their roots, and a submitter must not be able to make one run
// a harness elsewhere by trying again.
const ErrTypeWorkspaceRefused = "WorkspaceRefused"

// ErrTypeUntrusted: the step's workspace has files that can run commands
// or set the harness's environment that the worker's trust store does not
// trust as they are (DESIGN.md «Trust store»). Not retried, for the same
// reason.
const ErrTypeUntrusted = "WorkspaceUntrusted"

// Roots are the directories a worker runs steps in: a step's workspace
// must be one of them or lie below one, once every symbolic link in
// either is resolved (DESIGN.md «Workspace roots»).
type Roots []string

// ResolveRoots checks the worker's roots, each an existing directory, and
// resolves them (absolute, links followed). At least one is needed: a
// worker runs harnesses with their tools wherever a submitter says, so it
// must be told where that may be ("/" for anywhere).
func ResolveRoots(dirs []string) (Roots, error) {
	if len(dirs) == 0 {
		return nil, fmt.Errorf("no workspace root: give --workspace-root DIR (repeatable) for the directories whose steps this worker may run; --workspace-root / accepts any")
	}
	var roots Roots
	for _, d := range dirs {
		abs, err := filepath.Abs(d)
		if err != nil {
			return nil, fmt.Errorf("workspace root %s: %w", d, err)
		}
		real, err := filepath.EvalSymlinks(abs)
		if err != nil {
			return nil, fmt.Errorf("workspace root %s: %w", d, err)
		}
		if fi, err := os.Stat(real); err != nil || !fi.IsDir() {
			return nil, fmt.Errorf("workspace root %s is not a directory", d)
		}
		roots = append(roots, real)
	}
	return roots, nil
}

// Admit returns the workspace, its links resolved, if it lies in a root;
// otherwise an error that names the workspace, where it leads and the
// roots. The generation then runs in the resolved path, the one checked.
func (r Roots) Admit(workspace string) (string, error) {
	if !filepath.IsAbs(workspace) {
		return "", fmt.Errorf("workspace %q is not an absolute path", workspace)
	}
	real, err := filepath.EvalSymlinks(workspace)
	if err != nil {
		return "", err
	}
	for _, root := range r {
		if within(root, real) {
			return real, nil
		}
	}
	if len(r) == 0 {
		return "", fmt.Errorf("workspace %s refused: this worker has no workspace roots", workspace)
	}
	leads := ""
	if real != filepath.Clean(workspace) {
		leads = " (it leads to " + real + ")"
	}
	return "", fmt.Errorf("workspace %s%s is outside this worker's workspace roots (%s): start the worker with --workspace-root for it, or submit the step in one of them",
		workspace, leads, strings.Join(r, ", "))
}

// within says whether path is root or below it; both are clean and
// absolute.
func within(root, path string) bool {
	rel, err := filepath.Rel(root, path)
	return err == nil && (rel == "." || filepath.IsLocal(rel))
}
