package main

import (
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flowerhq/flower/manifest"
	"github.com/flowerhq/flower/scriptedapi"
)

// runFlower runs flower on the real harness with env and returns its exit
// code, stderr, how long it took and the step as the manifest has it.
func runFlower(t *testing.T, env []string, args ...string) (int, string, time.Duration, *manifest.StepResult) {
	t.Helper()
	ws := t.TempDir()
	cmd := exec.Command(flowerBinary(t), append([]string{"-C", ws}, args...)...)
	cmd.Env = env
	var stderr strings.Builder
	cmd.Stderr = &stderr
	start := time.Now()
	err := cmd.Run()
	took := time.Since(start)
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	runDir, _ := filepath.EvalSymlinks(filepath.Join(ws, ".flower", "runs", "latest"))
	m, err := manifest.LoadBound(runDir)
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	return code, stderr.String(), took, m.Step("main")
}

// An endpoint that refuses the connection before any request of the run
// went through is certain: on the real harness, flower stops the step at
// the harness's first retry, within seconds, exit 8, one line naming the
// endpoint and what to check, status unreachable, and no second attempt.
func TestRefusedEndpointFailsFast(t *testing.T) {
	t.Parallel()
	srv, err := scriptedapi.Start(func(r *scriptedapi.Request) scriptedapi.Reply { return scriptedapi.Harmless(r) })
	if err != nil {
		t.Fatal(err)
	}
	closed := srv.URL
	srv.Close() // nothing listens there now
	code, stderr, took, st := runFlower(t, cliEnv(t, srv, "FLOWER_PS_DIR="+t.TempDir(), "ANTHROPIC_BASE_URL="+closed), "say hello")
	t.Logf("refused endpoint: flower exited %d after %v", code, took)
	if code != exitEndpoint {
		t.Fatalf("flower exited %d, want %d\n%s", code, exitEndpoint, stderr)
	}
	if took > 30*time.Second {
		t.Errorf("took %v: the harness's retries were waited out", took)
	}
	want := "the API endpoint " + closed + " refused the connection, and no request of this run has gone through: check ANTHROPIC_BASE_URL"
	if !strings.Contains(stderr, want) {
		t.Errorf("stderr does not say %q:\n%s", want, stderr)
	}
	if !strings.Contains(stderr, "asks the API again") {
		t.Errorf("no progress line for the harness's retry:\n%s", stderr)
	}
	if st == nil || st.Status != manifest.StatusUnreachable || st.Attempts != 0 {
		t.Errorf("step: %+v", st)
	}
}

// What may pass is shown, not silent: an API that answers 529 once gets a
// progress line from the harness's own retry, and the step then succeeds.
// Once a request has gone through, an endpoint that then refuses is not
// taken for one that never could be reached (no exit 8: the harness's
// retries and flower's attempts go on as for any error).
func TestRetriesAreShown(t *testing.T) {
	t.Parallel()
	t.Run("overloaded once", func(t *testing.T) {
		t.Parallel()
		var n atomic.Int32
		srv, err := scriptedapi.Start(func(r *scriptedapi.Request) scriptedapi.Reply {
			if r.Kind == scriptedapi.KindMain && n.Add(1) == 1 {
				return scriptedapi.Overloaded()
			}
			return scriptedapi.Reply{Usage: scriptedapi.Usage{InputTokens: 1000}, Text: "Hello."}
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { srv.Close() })
		code, stderr, _, st := runFlower(t, cliEnv(t, srv, "FLOWER_PS_DIR="+t.TempDir()), "say hello")
		if code != 0 || st.Status != manifest.StatusSucceeded {
			t.Fatalf("flower exited %d, step %s\n%s", code, st.Status, stderr)
		}
		if !strings.Contains(stderr, "flower: the harness asks the API again in ") || !strings.Contains(stderr, "(retry 1 of 10): HTTP 529") {
			t.Errorf("no progress line for the 529:\n%s", stderr)
		}
	})
	t.Run("refused after a request went through", func(t *testing.T) {
		t.Parallel()
		var n atomic.Int32
		var srv *scriptedapi.Server
		srv, err := scriptedapi.Start(func(r *scriptedapi.Request) scriptedapi.Reply {
			if r.Kind != scriptedapi.KindMain {
				return scriptedapi.Harmless(r)
			}
			if n.Add(1) == 1 {
				return scriptedapi.Reply{Usage: scriptedapi.Usage{InputTokens: 1000}, Text: "Looking.",
					ToolUses: []scriptedapi.ToolUse{{Name: "Glob", Input: map[string]any{"pattern": "*.md"}}}}
			}
			go srv.Close() // from now on the endpoint refuses
			return scriptedapi.Reply{Delay: time.Minute}
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { srv.Close() })
		code, stderr, _, st := runFlower(t, cliEnv(t, srv, "FLOWER_PS_DIR="+t.TempDir(), "CLAUDE_CODE_MAX_RETRIES=1"), "--max-attempts", "1", "look around")
		if code == exitEndpoint || st.Status == manifest.StatusUnreachable {
			t.Errorf("a refusal after a request went through stopped the step as unreachable (exit %d)\n%s", code, stderr)
		}
		if !strings.Contains(stderr, "no answer from the API (a connection error)") {
			t.Errorf("no progress line for the retry:\n%s", stderr)
		}
	})
}
