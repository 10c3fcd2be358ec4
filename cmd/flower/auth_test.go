package main

import (
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flowerhq/flower/envinject"
	"github.com/flowerhq/flower/manifest"
	"github.com/flowerhq/flower/scriptedapi"
)

// An API that refuses the key (401) or forbids it (403) ends the step on
// the real harness within seconds, not the minutes of the harness's ten
// retries of a 401: one retry is let run (the harness does not retry a
// 403 at all), then flower exits 7 with one line naming the key (masked),
// the manifest says auth_failed with no further attempt, --notify hears
// the step's end, and the API is asked nothing more.
func TestRejectedKeyFailsFast(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ status, requests int }{{http.StatusUnauthorized, 2}, {http.StatusForbidden, 1}} {
		status := tt.status
		t.Run(strconv.Itoa(status), func(t *testing.T) {
			t.Parallel()
			var fixed atomic.Bool // the key is fixed: the API answers
			srv, err := scriptedapi.Start(func(r *scriptedapi.Request) scriptedapi.Reply {
				if fixed.Load() {
					return scriptedapi.Reply{Usage: scriptedapi.Usage{InputTokens: 1000}, Text: "Hello."}
				}
				return scriptedapi.Reply{Status: status, ErrorType: "authentication_error", ErrorMessage: "invalid x-api-key"}
			})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { srv.Close() })
			ws := t.TempDir()
			events := filepath.Join(t.TempDir(), "events")
			cmd := exec.Command(flowerBinary(t), "-q", "-C", ws, "--notify", "cat >> "+events, "say hello")
			cmd.Env = cliEnv(t, srv, "FLOWER_PS_DIR="+t.TempDir())
			var stderr strings.Builder
			cmd.Stderr = &stderr
			start := time.Now()
			err = cmd.Run()
			took := time.Since(start)
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != exitAuth {
				t.Fatalf("flower exited %v, want %d\n%s", err, exitAuth, stderr.String())
			}
			t.Logf("HTTP %d: flower exited %d after %v", status, exitAuth, took)
			if took > 30*time.Second {
				t.Errorf("took %v: the harness's retries were waited out", took)
			}
			masked := "ANTHROPIC_API_KEY (" + envinject.Mask(scriptedapi.APIKey) + ")"
			if !strings.Contains(stderr.String(), masked) || strings.Contains(stderr.String(), scriptedapi.APIKey) {
				t.Errorf("stderr does not name the key masked (%s):\n%s", masked, stderr.String())
			}
			main := func() (n int) {
				for _, r := range srv.Requests() {
					if r.Kind == scriptedapi.KindMain {
						n++
					}
				}
				return n
			}
			if n := main(); n != tt.requests {
				t.Errorf("%d main-thread requests, want %d", n, tt.requests)
			}
			runDir, _ := filepath.EvalSymlinks(filepath.Join(ws, ".flower", "runs", "latest"))
			m, err := manifest.LoadBound(runDir)
			if err != nil {
				t.Fatal(err)
			}
			st := m.Step("main")
			if st == nil || st.Status != manifest.StatusAuthFailed || st.Attempts != 0 || len(st.Generations) != 1 ||
				len(st.Errors) == 0 || !strings.Contains(st.Errors[len(st.Errors)-1], "the API refused the credentials (HTTP "+strconv.Itoa(status)) {
				t.Errorf("step: %+v", st)
			}
			b, _ := os.ReadFile(events)
			if !strings.Contains(string(b), `"status":"auth_failed"`) || !strings.Contains(string(b), "refused the credentials") {
				t.Errorf("notify heard:\n%s", b)
			}
			n := main()
			time.Sleep(2 * time.Second)
			if main() != n {
				t.Errorf("the API was asked again after flower exited")
			}
			// Once the key is fixed, flower continue finishes the step.
			fixed.Store(true)
			cont := exec.Command(flowerBinary(t), "continue", "-q", "-C", ws)
			cont.Env = cmd.Env
			if out, err := cont.CombinedOutput(); err != nil {
				t.Fatalf("flower continue: %v\n%s", err, out)
			}
			if m, err = manifest.LoadBound(runDir); err != nil || m.Step("main").Status != manifest.StatusSucceeded {
				t.Errorf("after continue: %v, %+v", err, m.Step("main"))
			}
		})
	}
}

// No credentials at all (no key, no login, on a fresh HOME) is certain on
// the first try: on the real harness, flower starts one attempt, exits 7
// within seconds with one line that says what to set, records auth_failed,
// and nothing reaches the API.
func TestNoCredentialsFailsFast(t *testing.T) {
	t.Parallel()
	srv, err := scriptedapi.Start(func(r *scriptedapi.Request) scriptedapi.Reply {
		return scriptedapi.Reply{Usage: scriptedapi.Usage{InputTokens: 1000}, Text: "Hello."}
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	var env []string
	for _, kv := range cliEnv(t, srv, "FLOWER_PS_DIR="+t.TempDir()) {
		if !strings.HasPrefix(kv, "ANTHROPIC_API_KEY=") && !strings.HasPrefix(kv, "ANTHROPIC_AUTH_TOKEN=") {
			env = append(env, kv)
		}
	}
	code, stderr, took, st := runFlower(t, env, "say hello")
	if code != exitAuth {
		t.Fatalf("flower exited %d, want %d\n%s", code, exitAuth, stderr)
	}
	t.Logf("no credentials: flower exited %d after %v", exitAuth, took)
	if took > 30*time.Second {
		t.Errorf("took %v", took)
	}
	if strings.Contains(stderr, "retrying") {
		t.Errorf("a certain refusal was retried:\n%s", stderr)
	}
	if !strings.Contains(stderr, "no credentials") || !strings.Contains(stderr, "set ANTHROPIC_API_KEY") {
		t.Errorf("stderr does not say what to set:\n%s", stderr)
	}
	if n := len(srv.Requests()); n != 0 {
		t.Errorf("%d requests reached the API", n)
	}
	if st == nil || st.Status != manifest.StatusAuthFailed || st.Attempts != 0 {
		t.Errorf("step: %+v", st)
	}
}
