package main

import (
	"github.com/flowerhq/flower/handoff"
	"github.com/flowerhq/flower/manifest"
	"github.com/flowerhq/flower/workbench"
)

// handoffFiles finds where each generation's handoff of step s is now, by
// generation number: the step's current file holds the last one, and every
// earlier one was moved into notes/archive/交接/ when the next was frozen
// (DESIGN.md «Handoff files»). A file is a generation's when its contents
// are the ones the successor launched from, else the ones written. Only the workbench holding the run is read, each file as
// flower reads a note; a generation no file matches is left out, and show
// then names the path it was written to.
func handoffFiles(m *manifest.Manifest, runDir string, s *manifest.StepResult) map[int]string {
	ws := workbench.HoldingWorkspace(runDir)
	if ws == "" {
		ws = m.Workspace
	}
	if ws == "" {
		return nil
	}
	wb := &workbench.Workbench{Dir: workbench.DirOf(ws)}
	candidates, err := wb.Archive(s.Name)
	if err != nil {
		candidates = nil
	}
	candidates = append(candidates, wb.HandoffPath(s.Name)) // oldest first, the current one last
	digests := make([]string, len(candidates))
	for i, path := range candidates {
		if data, err := workbench.ReadNote(path, workbench.MaxHandoff, "a handoff"); err == nil {
			digests[i] = handoff.Digest(data)
		}
	}
	files := map[int]string{}
	used := make([]bool, len(candidates))
	// From the last generation back, each takes the newest file of its
	// contents that no later generation took.
	for gi := len(s.Generations) - 1; gi >= 0; gi-- {
		g := s.Generations[gi]
		if g.Handoff == nil {
			continue
		}
		for _, want := range []string{g.Handoff.SHA256Launched, g.Handoff.SHA256Written} {
			if i := newestUnused(digests, used, want); i >= 0 {
				used[i] = true
				files[g.N] = candidates[i]
				break
			}
		}
	}
	return files
}

// newestUnused is the index of the last digest that is want and not used,
// or -1.
func newestUnused(digests []string, used []bool, want string) int {
	for i := len(digests) - 1; want != "" && i >= 0; i-- {
		if !used[i] && digests[i] == want {
			return i
		}
	}
	return -1
}
