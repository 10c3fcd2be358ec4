package integration_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/flowerhq/flower/manifest"
	"github.com/flowerhq/flower/scriptedapi"
)

// A key the API refuses, in the harness's own screen: the harness retries
// it there (2 retries here, 10 by default), flower's status line in that
// screen counts the retries and then says the API refused the
// credentials; the person may log in there and go on, so nothing is
// stopped, but a screen closed with no turn answered ends the step
// auth_failed, exit 7, never "succeeded".
func TestInteractiveRefusedKey(t *testing.T) {
	t.Parallel()
	srv := startServer(t, func(r *scriptedapi.Request) scriptedapi.Reply {
		if r.Kind != scriptedapi.KindMain {
			return scriptedapi.Harmless(r)
		}
		return scriptedapi.Reply{Status: http.StatusUnauthorized, ErrorType: "authentication_error", ErrorMessage: "invalid x-api-key"}
	})
	r := interactiveRun{srv: srv, workspace: t.TempDir(), home: t.TempDir(), flower: buildFlower(t), harness: harnessPath(t)}
	r.argv = []string{"env", "CLAUDE_CODE_MAX_RETRIES=2", r.flower, "-i", "--harness", r.harness, "-C", r.workspace}
	seedHarnessHome(t, r.home, r.workspace, scriptedapi.APIKey)
	p := startPane(t, r)
	p.harnessUp(r.home)
	p.keys("say hello")
	p.press("Enter")
	p.waitText("· API retry ", 2*waitLimit)
	p.waitText("· the API refused the credentials", 2*waitLimit)
	p.keys("/exit")
	p.press("Enter")
	p.waitText("FLOWER-EXIT=", 2*waitLimit)
	screen := p.capture()
	if !strings.Contains(screen, "FLOWER-EXIT=7") {
		t.Errorf("flower did not exit 7")
	}
	if strings.Contains(screen, "succeeded") {
		t.Errorf("a step with no turn answered is called succeeded")
	}
	if !strings.Contains(screen, "check ANTHROPIC_API_KEY") {
		t.Errorf("the screen does not say what to fix")
	}
	if st := onlyStep(t, r.workspace); st.Status != manifest.StatusAuthFailed {
		t.Errorf("step %s, want %s; errors %q", st.Status, manifest.StatusAuthFailed, st.Errors)
	}
}

// An endpoint that refuses the connection before anything went through
// ends the interactive step too, within seconds of the harness's first
// retry: the screen closes, one line names the endpoint, exit 8.
func TestInteractiveRefusedEndpoint(t *testing.T) {
	t.Parallel()
	srv := startServer(t, func(r *scriptedapi.Request) scriptedapi.Reply { return scriptedapi.Harmless(r) })
	closed := srv.URL
	srv.Close()
	r := interactiveRun{srv: srv, workspace: t.TempDir(), home: t.TempDir(), flower: buildFlower(t), harness: harnessPath(t)}
	r.argv = []string{"env", "ANTHROPIC_BASE_URL=" + closed, r.flower, "-i", "--harness", r.harness, "-C", r.workspace}
	seedHarnessHome(t, r.home, r.workspace, scriptedapi.APIKey)
	p := startPane(t, r)
	p.harnessUp(r.home)
	p.keys("say hello")
	p.press("Enter")
	p.waitText("FLOWER-EXIT=", 2*waitLimit)
	screen := p.capture()
	if !strings.Contains(screen, "FLOWER-EXIT=8") || !strings.Contains(screen, "the API endpoint "+closed+" refused the connection") {
		t.Errorf("flower did not stop on the refused endpoint with exit 8")
	}
	if st := onlyStep(t, r.workspace); st.Status != manifest.StatusUnreachable {
		t.Errorf("step %s, want %s; errors %q", st.Status, manifest.StatusUnreachable, st.Errors)
	}
}
