package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/flowerhq/flower/handoff"
	"github.com/flowerhq/flower/manifest"
	"github.com/flowerhq/flower/workbench"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata from the output")

// golden compares got with testdata/name, or rewrites that file with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("output differs from %s (go test -update rewrites it)\ngot:\n%s\nwant:\n%s", path, got, want)
	}
}

// runInProcess runs the command line in-process and returns its streams.
func runInProcess(ctx context.Context, args ...string) (stdout, stderr string, err error) {
	var out, errOut bytes.Buffer
	err = run(ctx, append([]string{"flower"}, args...), strings.NewReader(""), &out, &errOut)
	return out.String(), errOut.String(), err
}

var showT0 = time.Date(2026, 11, 30, 11, 28, 53, 0, time.UTC)

// sampleManifest is a run with what show has to present: a step that
// handed off normally, then degraded, then ran to the end; a step still
// running in its first generation; a step not started.
func sampleManifest(runDir string) *manifest.Manifest {
	m := manifest.New(runDir, "/ws", showT0)
	s := m.EnsureStep("干活", "port the parser to Go\nand make the tests pass", showT0)
	s.Window, s.WindowSource, s.Model = 200000, manifest.WindowFromFlag, "claude-haiku-4-5"
	s.TaskPath, s.TaskSHA256 = "/ws/.flower/notes/任务-干活.md", "0f0e"
	s.Attempts = 1

	s.BeginGeneration("0b1c2d3e-aaaa-4bbb-8ccc-000000000001", showT0)
	s.AddBlockedCompaction(manifest.BlockedCompaction{At: showT0.Add(20 * time.Minute), Trigger: "auto", Context: 120000})
	s.AddUsage(0.5, 30)
	s.SetContext(155000)
	s.Current().Handoff = &manifest.HandoffRecord{Reason: manifest.ReasonThreshold, Context: 155000,
		At: 150000, Window: 200000, Path: "/ws/.flower/notes/交接-干活.md"}
	s.HandoffPath = "/ws/.flower/notes/交接-干活.md"
	s.Retire(s.SessionID)

	s.BeginGeneration("9f8e7d6c-bbbb-4ccc-8ddd-000000000002", showT0.Add(40*time.Minute))
	s.AddCompaction(manifest.Compaction{At: showT0.Add(50 * time.Minute), Trigger: "manual", PreTokens: 140000, PostTokens: 3000})
	s.AddUsage(0.75, 41)
	s.SetContext(201500)
	s.AddError("attempt 1: the harness exited before the turn ended")
	s.Current().Handoff = &manifest.HandoffRecord{Reason: manifest.ReasonOverflow, Context: 201500,
		At: 150000, Window: 200000, Degraded: true, Why: "the handoff is missing next", Path: "/ws/.flower/notes/交接-干活.md"}
	s.DegradedError("the handoff is missing next")
	s.Retire(s.SessionID)

	s.BeginGeneration("5a5a5a5a-cccc-4ddd-8eee-000000000003", showT0.Add(75*time.Minute))
	s.AddUsage(0.1234, 9)
	s.SetContext(48200)
	s.Finish(manifest.StatusSucceeded, showT0.Add(83*time.Minute+20*time.Second))

	r := m.EnsureStep("review", "", showT0.Add(90*time.Minute))
	r.Window, r.WindowSource = 1000000, manifest.WindowFromModel
	r.BeginGeneration("", showT0.Add(90*time.Minute))

	m.EnsureStep("ship", "tag and push", showT0.Add(91*time.Minute)).TaskSHA256 = "0a0b" // frozen without a workbench
	m.UpdatedAt = showT0.Add(91 * time.Minute)
	return m
}

// writeManifest writes m as Save would, keeping its fixed UpdatedAt.
func writeManifest(t *testing.T, m *manifest.Manifest) {
	t.Helper()
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(m.RunDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(manifest.Path(m.RunDir), append(data, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestShowGolden(t *testing.T) {
	tests := []struct {
		name  string
		build func(runDir string) *manifest.Manifest
	}{
		{"steps", sampleManifest},
		{"empty", func(runDir string) *manifest.Manifest { return manifest.New(runDir, "/ws", showT0) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			writeManifest(t, tt.build(dir))
			out, _, err := runInProcess(context.Background(), "show", dir)
			if err != nil {
				t.Fatal(err)
			}
			golden(t, "show_"+tt.name+".golden", []byte(strings.ReplaceAll(out, dir, "RUN_DIR")))
		})
	}
}

func TestShowJSONIsTheFileAsWritten(t *testing.T) {
	dir := t.TempDir()
	writeManifest(t, sampleManifest(dir))
	want, err := os.ReadFile(manifest.Path(dir))
	if err != nil {
		t.Fatal(err)
	}
	out, _, err := runInProcess(context.Background(), "show", "--json", dir)
	if err != nil {
		t.Fatal(err)
	}
	if out != string(want) {
		t.Errorf("show --json =\n%s\nwant the file:\n%s", out, want)
	}
}

func TestShowErrors(t *testing.T) {
	tests := []struct {
		name string
		// setup prepares the run dir and returns the arguments after "show".
		setup    func(t *testing.T, dir string) []string
		wantCode int
		wantIn   []string // in the error message
	}{
		{"corrupt: half written", func(t *testing.T, dir string) []string {
			writeFileT(t, manifest.Path(dir), `{"version": 1, "steps": [`)
			return []string{dir}
		}, exitFailed, []string{manifest.FileName, "corrupt"}},
		{"corrupt: empty", func(t *testing.T, dir string) []string {
			writeFileT(t, manifest.Path(dir), "")
			return []string{dir}
		}, exitFailed, []string{manifest.FileName, "corrupt", "empty"}},
		{"corrupt: not an object", func(t *testing.T, dir string) []string {
			writeFileT(t, manifest.Path(dir), "[1, 2]\n")
			return []string{dir}
		}, exitFailed, []string{manifest.FileName, "corrupt"}},
		{"corrupt, with --json", func(t *testing.T, dir string) []string {
			writeFileT(t, manifest.Path(dir), "{not json")
			return []string{"--json", dir}
		}, exitFailed, []string{manifest.FileName, "corrupt"}},
		{"newer version", func(t *testing.T, dir string) []string {
			writeFileT(t, manifest.Path(dir), `{"version": 99}`)
			return []string{dir}
		}, exitFailed, []string{"version 99"}},
		{"no manifest", func(t *testing.T, dir string) []string {
			return []string{dir}
		}, exitFailed, []string{"no " + manifest.FileName + " in"}},
		{"no such run dir", func(t *testing.T, dir string) []string {
			return []string{filepath.Join(dir, "nope")}
		}, exitUsage, []string{"does not exist"}},
		{"run dir is a file", func(t *testing.T, dir string) []string {
			writeFileT(t, filepath.Join(dir, "f"), "x")
			return []string{filepath.Join(dir, "f")}
		}, exitUsage, []string{"not a directory"}},
		{"two run dirs", func(t *testing.T, dir string) []string {
			return []string{dir, dir}
		}, exitUsage, []string{"at most one RUN_DIR"}},
		{"no runs in the workspace", func(t *testing.T, dir string) []string {
			return []string{"-C", dir}
		}, exitUsage, []string{"no runs in"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			args := tt.setup(t, dir)
			out, _, err := runInProcess(context.Background(), append([]string{"show"}, args...)...)
			if err == nil {
				t.Fatalf("show succeeded, printing:\n%s", out)
			}
			if got := exitCode(err); got != tt.wantCode {
				t.Errorf("exit code %d, want %d (err: %v)", got, tt.wantCode, err)
			}
			msg := err.Error()
			if strings.Contains(msg, "\n") {
				t.Errorf("error is not one line: %q", msg)
			}
			for _, w := range tt.wantIn {
				if !strings.Contains(msg, w) {
					t.Errorf("error %q does not mention %q", msg, w)
				}
			}
			if out != "" {
				t.Errorf("stdout = %q, want nothing", out)
			}
		})
	}
}

func TestShowFindsTheLatestRun(t *testing.T) {
	tests := []struct {
		name   string
		link   string // what runs/latest points at; "" for no link
		want   string // the run shown
		others []string
	}{
		{"the latest link", "20261130-090000", "20261130-090000", []string{"20261130-120000"}},
		{"no link: newest by name", "", "20261130-120000", []string{"20261130-090000"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ws := t.TempDir()
			runs := filepath.Join(ws, ".flower", "runs")
			for _, name := range append([]string{tt.want}, tt.others...) {
				m := manifest.New(filepath.Join(runs, name), ws, showT0)
				m.EnsureStep("step-of-"+name, "", showT0)
				writeManifest(t, m)
			}
			if tt.link != "" {
				if err := os.Symlink(tt.link, filepath.Join(runs, "latest")); err != nil {
					t.Fatal(err)
				}
			}
			out, _, err := runInProcess(context.Background(), "show", "-C", ws)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(out, "step step-of-"+tt.want+":") {
				t.Errorf("show -C shows another run than %s:\n%s", tt.want, out)
			}
		})
	}
}

func TestShowAndLogsHaveHelpWithExamples(t *testing.T) {
	for _, cmd := range []string{"show", "logs"} {
		out, _, err := runInProcess(context.Background(), cmd, "--help")
		if err != nil {
			t.Fatalf("%s --help: %v", cmd, err)
		}
		if !strings.Contains(out, "Examples:") || !strings.Contains(out, "flower "+cmd+" ") {
			t.Errorf("%s --help has no example:\n%s", cmd, out)
		}
	}
}

func writeFileT(t *testing.T, path, s string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

// flower show names each generation's handoff where it is now: frozen by
// the workbench as a run freezes them, the earlier ones are in the
// archive, the last at the step's file, each found by what its successor
// launched from, else by what was written; one no file holds is named as
// recorded.
func TestShowNamesArchivedHandoffs(t *testing.T) {
	ws := t.TempDir()
	wb, err := workbench.Open(workbench.DirOf(ws))
	if err != nil {
		t.Fatal(err)
	}
	runDir := filepath.Join(workbench.RunsDir(wb.Dir), "20261201-090000")
	m := manifest.New(runDir, ws, showT0)
	s := m.EnsureStep("main", "the task", showT0)
	docs := []string{"# 交接\n\ngeneration one\n", "# 交接\n\ngeneration two\n", "# 交接\n\ngeneration three\n"}
	var paths []string
	for i, doc := range docs {
		s.BeginGeneration(fmt.Sprintf("session-%d", i+1), showT0.Add(time.Duration(i)*time.Hour))
		// Two handoffs in one second get -2 in the archive: the order
		// still holds.
		path, err := wb.Freeze("main", []byte(doc), showT0)
		if err != nil {
			t.Fatal(err)
		}
		paths = append(paths, path)
		s.Current().Handoff = &manifest.HandoffRecord{Reason: manifest.ReasonThreshold, Path: path,
			SHA256Written: handoff.Digest([]byte(doc)), SHA256Launched: handoff.Digest([]byte(doc))}
	}
	// Generation 1's successor launched from an edit the archive does not
	// hold (edited again since): its file is the one as written. Nothing
	// holds generation 2's any more: it is named as recorded.
	s.Generations[0].Handoff.SHA256Launched = handoff.Digest([]byte("an edit nobody kept"))
	s.Generations[1].Handoff.SHA256Launched = handoff.Digest([]byte("another"))
	s.Generations[1].Handoff.SHA256Written = handoff.Digest([]byte("and another"))
	s.BeginGeneration("session-4", showT0.Add(3*time.Hour))
	writeManifest(t, m)

	out, _, err := runInProcess(context.Background(), "show", runDir)
	if err != nil {
		t.Fatal(err)
	}
	archived, err := wb.Archive("main")
	if err != nil || len(archived) != 2 {
		t.Fatalf("archive %q, %v: want two files", archived, err)
	}
	rel := func(p string) string { r, _ := filepath.Rel(ws, p); return r }
	for gen, want := range map[int]string{1: rel(archived[0]), 2: rel(paths[1]), 3: rel(paths[2])} {
		row := regexp.MustCompile(`(?m)^  ` + strconv.Itoa(gen) + `  .*  (\S+)$`).FindStringSubmatch(out)
		if row == nil || row[1] != want {
			t.Errorf("generation %d's handoff file: %q, want %s\n%s", gen, row, want, out)
		}
	}
}
