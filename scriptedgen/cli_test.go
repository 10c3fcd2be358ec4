package scriptedgen_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flowerhq/flower/integration/itest"
	"github.com/flowerhq/flower/scriptedgen"
)

// TestRealCLIRunsAScript drives the real Gemini CLI through one turn with
// a shell call against the scripted API: the CLI is pointed at it, runs
// the call, sends the result back, and asks nothing anywhere else.
func TestRealCLIRunsAScript(t *testing.T) {
	bin := itest.GeminiPath(t)
	s, err := scriptedgen.Start(scriptedgen.Sequence(
		scriptedgen.Reply{Text: "writing", Calls: []scriptedgen.Call{scriptedgen.Shell("echo scripted > out.txt")},
			Usage: scriptedgen.Usage{PromptTokens: 12000, OutputTokens: 20}},
		scriptedgen.Reply{Text: "done", Usage: scriptedgen.Usage{PromptTokens: 12500, OutputTokens: 2}}))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	home, ws := t.TempDir(), t.TempDir()
	if err := scriptedgen.WriteHome(home); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--skip-trust", "--approval-mode", "yolo", "-p", "write the file", "--output-format", "stream-json")
	cmd.Dir = ws
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + home}, s.Env()...)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("gemini: %v\n%s", err, out)
	}
	if b, err := os.ReadFile(filepath.Join(ws, "out.txt")); err != nil || strings.TrimSpace(string(b)) != "scripted" {
		t.Errorf("the shell call did not run: %q %v", b, err)
	}
	if !strings.Contains(string(out), `"type":"result"`) || !strings.Contains(string(out), `"status":"success"`) {
		t.Errorf("stream-json output:\n%s", out)
	}
	main := s.Main()
	if len(main) != 2 {
		t.Fatalf("%d main requests, want 2 (the task, the call's result): %+v", len(main), s.Requests())
	}
	if main[0].Model != scriptedgen.Model || !strings.Contains(main[0].LastUserText, "write the file") {
		t.Errorf("first request: model %q, text %q", main[0].Model, main[0].LastUserText)
	}
	if len(main[1].Responses) != 1 || main[1].Responses[0].Name != "run_shell_command" {
		t.Errorf("second request's function responses: %+v", main[1].Responses)
	}
	for _, r := range s.Requests() {
		if r.Compression {
			t.Errorf("request %d is a compression", r.Seq)
		}
	}
	if u := s.Unexpected(); len(u) > 0 {
		t.Errorf("unexpected requests: %q", u)
	}
}
