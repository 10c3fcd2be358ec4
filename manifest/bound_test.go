package manifest

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A manifest is used only where it was made: its run dir, the workspace
// whose workbench holds it, and notes paths in that workbench.
func TestLoadBound(t *testing.T) {
	ws := t.TempDir()
	runDir := filepath.Join(ws, ".flower", "runs", "r1")
	notes := filepath.Join(ws, ".flower", "notes")
	tests := []struct {
		name  string
		edit  func(m *Manifest)
		field string // "" = bound
	}{
		{"its own", func(m *Manifest) {}, ""},
		{"no run_dir", func(m *Manifest) { m.RunDir = "" }, "records no run_dir"},
		{"another run_dir", func(m *Manifest) { m.RunDir = "/elsewhere/run" }, "names run_dir /elsewhere/run"},
		{"another workspace", func(m *Manifest) { m.Workspace = "/victim" }, "names workspace /victim, not " + ws},
		{"no workspace", func(m *Manifest) { m.Workspace = "" }, "records no workspace"},
		{"a task path elsewhere", func(m *Manifest) { m.Steps[0].TaskPath = "/etc/passwd" }, `task_path of step "main" /etc/passwd`},
		{"a handoff path elsewhere", func(m *Manifest) {
			m.Steps[0].Generations = []Generation{{N: 1, Handoff: &HandoffRecord{Path: notes + "/../../x.md"}}}
		}, "handoff path of step"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := New(runDir, ws, time.Now())
			st := m.EnsureStep("main", "task", time.Now())
			st.TaskPath = filepath.Join(notes, "任务-main.md")
			tt.edit(m)
			if m.RunDir == "" {
				// Save needs it: write through a copy that has it.
				c := *m
				c.RunDir = runDir
				if err := c.Save(); err != nil {
					t.Fatal(err)
				}
				rewrite(t, runDir, `"run_dir":"`+runDir+`"`, `"run_dir":""`)
			} else {
				save := *m
				save.RunDir = runDir
				if err := save.Save(); err != nil {
					t.Fatal(err)
				}
				if m.RunDir != runDir {
					rewrite(t, runDir, `"run_dir":"`+runDir+`"`, `"run_dir":"`+m.RunDir+`"`)
				}
			}
			_, err := LoadBound(runDir)
			if tt.field == "" {
				if err != nil {
					t.Fatalf("LoadBound: %v", err)
				}
				return
			}
			if !errors.Is(err, ErrForeign) || !strings.Contains(err.Error(), tt.field) || !strings.Contains(err.Error(), Path(runDir)) {
				t.Errorf("LoadBound: %v, want a refusal naming the file and %q", err, tt.field)
			}
		})
	}
}

func rewrite(t *testing.T, runDir, from, to string) {
	t.Helper()
	b, err := readAll(Path(runDir))
	if err != nil {
		t.Fatal(err)
	}
	s := strings.Replace(string(b), from, to, 1)
	if s == string(b) {
		t.Fatalf("%s not in the manifest", from)
	}
	if err := writeAll(Path(runDir), []byte(s)); err != nil {
		t.Fatal(err)
	}
}

func readAll(p string) ([]byte, error)  { return os.ReadFile(p) }
func writeAll(p string, b []byte) error { return os.WriteFile(p, b, 0o644) }
