package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/creack/pty"

	"github.com/flowerhq/flower/manifest"
	"github.com/flowerhq/flower/workbench"
)

// hostileText is what a planted task, error or log carries to reach the
// person's terminal: an OSC 52 clipboard write, a title change, a screen
// clear, a C1 CSI and a bidi override.
const hostileText = "task\x1b]52;c;cm0gLXJmIH4=\x07\x1b]0;pwned\x07\x1b[2J\u009b2J\u202eend"

// noControls fails if out holds an escape, a C1 control, a bidi override
// or a carriage return, and checks the escaped text is shown instead.
func noControls(t *testing.T, what, out string) {
	t.Helper()
	if strings.ContainsAny(out, "\x1b\x07\r\u009b\u202e") {
		t.Errorf("%s reaches the terminal raw: %q", what, out)
	}
	if !strings.Contains(out, `\x1b]52;c;`) || !strings.Contains(out, `\x1b[2J`) || !strings.Contains(out, `\u202e`) {
		t.Errorf("%s does not show the escaped text: %q", what, out)
	}
}

// flower show and flower logs escape what a workspace wrote; --json
// keeps it, as valid JSON.
func TestShowAndLogsEscapeControlCharacters(t *testing.T) {
	ws := t.TempDir()
	dir := filepath.Join(ws, ".flower", "runs", "20261130-112853")
	m := manifest.New(dir, ws, showT0)
	s := m.EnsureStep("main", hostileText, showT0)
	s.BeginGeneration("0b1c2d3e-aaaa-4bbb-8ccc-000000000001", showT0)
	s.AddError("read handoff: " + hostileText)
	writeManifest(t, m)

	out, _, err := runInProcess(context.Background(), "show", dir)
	if err != nil {
		t.Fatal(err)
	}
	noControls(t, "flower show", out)

	out, _, err = runInProcess(context.Background(), "show", "--json", dir)
	if err != nil {
		t.Fatal(err)
	}
	var back manifest.Manifest
	if err := json.Unmarshal([]byte(out), &back); err != nil {
		t.Fatalf("show --json is not JSON: %v\n%s", err, out)
	}
	if st := back.Step("main"); st == nil || st.Task != hostileText || len(st.Errors) != 1 || !strings.HasSuffix(st.Errors[0], hostileText) {
		t.Errorf("show --json changed the text: %+v", back.Steps)
	}

	rec, _ := json.Marshal(map[string]any{"time": "2026-11-30T11:48:30Z", "level": "WARN", "msg": "read task " + hostileText,
		"step": "main", "path": "/ws/" + hostileText})
	log := string(rec) + "\nnot json " + hostileText + "\n"
	if err := os.WriteFile(filepath.Join(dir, workbench.LogFileName), []byte(log), 0o600); err != nil {
		t.Fatal(err)
	}
	out, _, err = runInProcess(context.Background(), "logs", dir)
	if err != nil {
		t.Fatal(err)
	}
	for i, line := range strings.Split(strings.TrimSpace(out), "\n") {
		noControls(t, "flower logs line "+string(rune('1'+i)), line)
	}
	out, _, err = runInProcess(context.Background(), "logs", "--json", dir)
	if err != nil {
		t.Fatal(err)
	}
	if out != log {
		t.Errorf("logs --json =\n%q\nwant the file as written:\n%q", out, log)
	}
}

// flower's last word, the error main prints, is escaped too: it quotes
// paths and files a workspace named.
func TestErrorMessageEscapesControlCharacters(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs flower")
	}
	cmd := exec.Command(flowerBinary(t), "-C", t.TempDir(), "-f", filepath.Join(t.TempDir(), hostileText+".md"))
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != exitUsage {
		t.Fatalf("exit %v, want %d:\n%s", err, exitUsage, out)
	}
	noControls(t, "the error", string(out))
}

// show --html -o - writes the page as it is to a pipe, and escaped to a
// terminal, where a planted task's OSC 52 would reach the clipboard.
func TestShowHTMLToTerminalEscapes(t *testing.T) {
	ws := t.TempDir()
	dir := filepath.Join(ws, ".flower", "runs", "20261130-112853")
	m := manifest.New(dir, ws, showT0)
	m.EnsureStep("main", hostileText, showT0).BeginGeneration("0b1c2d3e-aaaa-4bbb-8ccc-000000000001", showT0)
	writeManifest(t, m)

	piped, _, err := runInProcess(context.Background(), "show", "--html", "-o", "-", dir)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(piped, "\x1b]52;c;") {
		t.Fatalf("the page to a pipe lost the task as written: %q", clipText(piped))
	}
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer ptmx.Close()
	got := make(chan []byte)
	go func() {
		b, _ := io.ReadAll(ptmx) // ends with EIO once tty is closed
		got <- b
	}()
	err = run(context.Background(), []string{"flower", "show", "--html", "-o", "-", dir}, strings.NewReader(""), tty, io.Discard)
	tty.Close()
	out := string(<-got)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "<html") {
		t.Fatalf("no page on the terminal: %q", clipText(out))
	}
	if strings.Contains(out, "\x1b]52") || strings.Contains(out, "\x1b]0;") || strings.Contains(out, "\u202e") {
		t.Errorf("raw control sequences reached the terminal")
	}
	if !strings.Contains(out, `\x1b]52;c;`) {
		t.Errorf("the terminal does not show the escaped task")
	}
}

func clipText(s string) string {
	if len(s) > 300 {
		return s[:300] + "…"
	}
	return s
}

// A --settings value is masked wherever flower shows it, its error
// included: the path may carry a token.
func TestSettingsErrorMasksThePath(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs flower")
	}
	value := filepath.Join(t.TempDir(), "sk-ant-token-in-a-path", "settings.json")
	cmd := exec.Command(flowerBinary(t), "run", "-C", t.TempDir(), "--harness", "/bin/true", "the task", "--", "--settings="+value)
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() == 0 {
		t.Fatalf("exit %v, want a failure:\n%s", err, out)
	}
	if strings.Contains(string(out), "sk-ant-token") || !strings.Contains(string(out), "harness --settings <") {
		t.Errorf("the error does not mask the --settings value:\n%s", out)
	}
}
