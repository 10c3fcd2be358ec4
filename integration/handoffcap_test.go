package integration_test

import (
	"bytes"
	"log/slog"
	"os"
	"strings"
	"testing"

	"github.com/flowerhq/flower/handoffwriter"
	flowerharness "github.com/flowerhq/flower/harness"
	"github.com/flowerhq/flower/manifest"
	"github.com/flowerhq/flower/scriptedapi"
	"github.com/flowerhq/flower/supervisor"
	"github.com/flowerhq/flower/workbench"
)

// hugeHandoff is a writing turn's reply of about 10 MiB: a complete handoff
// whose doing section never ends.
func hugeHandoff(gen int) scriptedapi.Reply {
	r := goodHandoff(gen)
	r.Text = strings.Replace(r.Text, "## 已定的事 (decided)",
		strings.Repeat("the model kept writing this line of its handoff\n", 10<<20/48)+"\n## 已定的事 (decided)", 1)
	return r
}

// overflowing answers like the API past a window of 200k tokens (about four
// bytes a token): a prompt that does not fit is refused as too long.
func overflowing(script scriptedapi.Script, served *int) scriptedapi.Script {
	return func(r *scriptedapi.Request) scriptedapi.Reply {
		if tokens := len(r.Body) / 4; r.Kind == scriptedapi.KindMain && tokens > 200_000 {
			*served++
			return scriptedapi.Overflow(tokens, 200_000)
		}
		return script(r)
	}
}

// A handoff the model writes past the cap for a handoff is cut to the cap
// and marked as it is frozen: the file is complete and under the cap, the
// manifest records how large it was, the log carries a bounded preview, and
// the successor starts from the cut file without overflowing, so no
// generation is lost to it (DESIGN.md «Input caps»).
func TestHandoffOverTheCapIsCutWhenWritten(t *testing.T) {
	t.Parallel()
	j := &job{plans: [][]scriptedapi.Reply{{bash(100_000, "echo one >> work.txt"), bash(155_000, "echo two >> work.txt")}, {done(40_000)}}, handoff: hugeHandoff}
	served := 0
	srv := startServer(t, overflowing(j.script, &served))
	ws := t.TempDir()
	var log bytes.Buffer
	rt, err := supervisor.New(supervisor.Options{Front: flowerharness.Headless{}, Workspace: ws, RunDir: ws + "/.flower/runs/test", Workbench: true,
		HarnessPath: harnessPath(t), Env: harnessEnv(t, srv), HarnessArgs: []string{"--allowedTools", "Bash"},
		Handoff: window200k(0), Logger: slog.New(slog.NewJSONHandler(&log, nil))})
	if err != nil {
		t.Fatal(err)
	}
	st, err := rt.RunStep(t.Context(), "main", "Build the shim. TASK-MARK")
	if err != nil {
		t.Fatalf("RunStep: %v\nerrors: %q", err, st.Errors)
	}
	if st.Status != manifest.StatusSucceeded || len(st.Generations) != 2 || served != 0 {
		t.Fatalf("status %s, %d generations, %d overflows served; errors %q", st.Status, len(st.Generations), served, st.Errors)
	}
	rec := st.Generations[0].Handoff
	if rec == nil || rec.CutFromBytes < 10<<20 || rec.Degraded {
		t.Fatalf("the first handoff's record: %+v", rec)
	}
	b, err := os.ReadFile(rec.Path)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) > workbench.MaxHandoff || !bytes.Contains(b, []byte(handoffwriter.CutMarker+" the handoff was 10 MiB, over the cap of 256 KiB")) {
		t.Errorf("the frozen file holds %d bytes (cap %d), marked: %v", len(b), workbench.MaxHandoff, bytes.Contains(b, []byte(handoffwriter.CutMarker)))
	}
	if h := handoffwriter.Parse(string(b)); !h.Complete() || !strings.Contains(h.Next, "NEXT-MARK-1") {
		t.Errorf("the frozen file does not parse whole: missing %v", h.Missing())
	}
	if rec.SHA256Launched != rec.SHA256Written {
		t.Errorf("the successor did not launch from the file as frozen")
	}
	// The successor's first request carries the cut document.
	var first *scriptedapi.Request
	for _, r := range srv.Requests() {
		if r.Kind == scriptedapi.KindMain && strings.Contains(r.LastUserText, "You are taking over") {
			first = &r
			break
		}
	}
	if first == nil || !strings.Contains(first.LastUserText, handoffwriter.CutMarker) || !strings.Contains(first.LastUserText, "NEXT-MARK-1") {
		t.Fatalf("no successor request carrying the cut handoff")
	}
	if len(first.Body) > 2*workbench.MaxHandoff {
		t.Errorf("the successor's first request is %d bytes", len(first.Body))
	}
	for _, line := range strings.Split(log.String(), "\n") {
		if len(line) > 1<<20 {
			t.Errorf("a log line of %d bytes: %.200s", len(line), line)
		}
	}
	if !strings.Contains(log.String(), `"document_cut":true`) {
		t.Errorf("the log does not mark its copy of the document as a preview")
	}
}
