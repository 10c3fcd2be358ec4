package integration_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/flowerhq/flower/manifest"
	"github.com/flowerhq/flower/scriptedapi"
)

// TestInteractiveSessionOnRecordBeforeItsRequest: flower -i with a task
// (the harness's first prompt on its command line) has the harness's
// session in the manifest before the harness's first request reaches the
// API, so that flower stopped at any moment after it (a SIGTERM, a
// SIGKILL) leaves the session the API saw on record to resume
// (DESIGN.md «Screen turns»). The harness names its session in its state
// file as it starts; 2.1.332 has its transcript on disk only about when
// that request leaves, too late to learn the session from. flower stop
// then, before the prompt is in the transcript flower reads, still ends
// the turn with an Esc, and the harness exits on its own.
func TestInteractiveSessionOnRecordBeforeItsRequest(t *testing.T) {
	t.Parallel()
	const tool = "timeout 91 tail -f /dev/null"
	workspace := t.TempDir()
	var mu sync.Mutex
	var apiSession, recorded string
	srv := startServer(t, func(r *scriptedapi.Request) scriptedapi.Reply {
		if r.Kind != scriptedapi.KindMain || len(r.LastToolResults) > 0 {
			return scriptedapi.Harmless(r)
		}
		mu.Lock()
		defer mu.Unlock()
		if apiSession == "" {
			apiSession, recorded = r.SessionID, stepSessionNow(workspace)
		}
		return bash(20_000, tool)
	})
	r := interactiveRun{srv: srv, workspace: workspace, home: t.TempDir(), flower: buildFlower(t), harness: harnessPath(t),
		args: []string{"ON-RECORD-TASK: run the tool", "--", "--permission-mode", "dontAsk", "--allowedTools", "Bash"}}
	seedHarnessHome(t, r.home, r.workspace, scriptedapi.APIKey)
	p := startPane(t, r)
	p.waitFor("the first request", waitLimit, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return apiSession != ""
	})
	stop := exec.Command(r.flower, "stop", "-C", r.workspace)
	if out, err := stop.CombinedOutput(); err != nil {
		t.Fatalf("flower stop: %v\n%s", err, out)
	}
	p.waitText("FLOWER-EXIT=", 2*waitLimit)
	mu.Lock()
	defer mu.Unlock()
	if apiSession == "" || recorded != apiSession {
		t.Errorf("as the first request (session %q) reached the API, the manifest's session was %q", apiSession, recorded)
	}
	if st := onlyStep(t, r.workspace); st.SessionID != apiSession {
		t.Errorf("after flower stop the manifest's session is %q (status %s), want the API's %q", st.SessionID, st.Status, apiSession)
	}
	log, err := os.ReadFile(filepath.Join(filepath.Dir(manifests(t, r.workspace)[0]), "flower.log"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(log), "the harness did not exit after the interrupt") {
		t.Errorf("flower had to stop the harness: no Esc ended its first turn")
	}
}

// stepSessionNow is the session of the only step of the workspace's only
// run as its manifest says now; "" when there is none yet.
func stepSessionNow(workspace string) string {
	runs, _ := filepath.Glob(filepath.Join(workspace, ".flower", "runs", "*", manifest.FileName))
	for _, path := range runs {
		if strings.Contains(path, string(filepath.Separator)+"latest"+string(filepath.Separator)) {
			continue
		}
		if m, err := manifest.Load(path); err == nil && len(m.Steps) == 1 {
			return m.Steps[0].SessionID
		}
	}
	return ""
}
