package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flowerhq/flower/scriptedapi"
)

// A one-word task close to a command name is refused with exit 2 and the
// nearest command; no harness starts and no run dir is made. Words far from
// every command, and tasks of several words, are tasks.
func TestMistypedCommand(t *testing.T) {
	ws := t.TempDir()
	marker := filepath.Join(ws, "harness-started")
	harness := filepath.Join(t.TempDir(), "claude")
	script := "#!/bin/sh\ntouch " + marker + "\nexit 1\n"
	if err := os.WriteFile(harness, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ word, want string }{
		{"shwo", "flower show"}, {"contine", "flower continue"}, {"lgos", "flower logs"}, {"dmeo", "flower demo"},
		{"Show", "flower show"}, {"rerunn", "flower rerun"}, {"wroker", "flower worker"}, {"psx", "flower ps"},
		// the words of habit, and typos of the new commands and aliases
		{"kill", "flower stop"}, {"cancel", "flower stop"}, {"login", "claude /login"}, {"logout", "claude /logout"},
		{"init", "flower doctor"}, {"config", "flower doctor"}, {"update", "flower version"}, {"Login", "claude /login"},
		{"stpo", "flower stop"}, {"verison", "flower version"}, {"stauts", "flower status"}, {"lsit", "flower list"},
		{"resmue", "flower resume"}, {"hepl", "flower help"}, {"info", "flower show"}, {"pause", "flower stop"},
	} {
		t.Run(tt.word, func(t *testing.T) {
			var stdout, stderr strings.Builder
			err := run(context.Background(), []string{"flower", "-C", ws, "--harness", harness, tt.word, "--json"}, strings.NewReader(""), &stdout, &stderr)
			if code := exitCode(err); code != exitUsage {
				t.Fatalf("exit %d (%v), want %d", code, err, exitUsage)
			}
			for _, want := range []string{"did you mean `" + tt.want + "`?", "flower run " + tt.word} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q lacks %q", err, want)
				}
			}
			if _, err := os.Stat(marker); err == nil {
				t.Fatal("the harness was started")
			}
			if _, err := os.Stat(filepath.Join(ws, ".flower", "runs")); err == nil {
				t.Error("a run dir was made")
			}
		})
	}
	// The interactive front takes a task too, and refuses the same words.
	var stdout, stderr strings.Builder
	err := run(context.Background(), []string{"flower", "-C", ws, "--harness", harness, "-i", "kill"}, strings.NewReader(""), &stdout, &stderr)
	if code := exitCode(err); code != exitUsage || !strings.Contains(err.Error(), "did you mean `flower stop`?") {
		t.Errorf("flower -i kill: exit %d (%v), want %d and flower stop", code, err, exitUsage)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("flower -i kill started the harness")
	}
	// Not typos: the harness starts (and fails, as this one does).
	for _, task := range []string{"refactor", "show me the failing tests", "fix-it", "tests", "task", "cancels"} {
		os.Remove(marker)
		var stdout, stderr strings.Builder
		err := run(context.Background(), []string{"flower", "-q", "-C", ws, "--harness", harness, "--max-attempts", "1", task}, strings.NewReader(""), &stdout, &stderr)
		if exitCode(err) == exitUsage {
			t.Errorf("%q refused as a usage error: %v", task, err)
		}
		if _, err := os.Stat(marker); err != nil {
			t.Errorf("%q: the harness was not started", task)
		}
	}
}

// flower run WORD runs a mistyped-looking word as a task, on the real
// harness: the model is asked it.
func TestRunTakesAnyWordAsTask(t *testing.T) {
	t.Parallel()
	srv, err := scriptedapi.Start(func(r *scriptedapi.Request) scriptedapi.Reply {
		if r.Kind != scriptedapi.KindMain {
			return scriptedapi.Harmless(r)
		}
		return scriptedapi.Reply{Usage: scriptedapi.Usage{InputTokens: 1000}, Text: "Done."}
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	cmd := exec.Command(flowerBinary(t), "run", "-q", "-C", t.TempDir(), "shwo")
	cmd.Env = cliEnv(t, srv)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("flower run shwo: %v\n%s", err, stderr.String())
	}
	asked := false
	for _, r := range srv.Requests() {
		if r.Kind == scriptedapi.KindMain && strings.Contains(r.LastUserText, "shwo") {
			asked = true
		}
	}
	if !asked {
		t.Error("no main-thread request carried the task shwo")
	}
}
