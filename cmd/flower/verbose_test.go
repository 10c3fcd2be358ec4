package main

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flowerhq/flower/runlog"
	"github.com/flowerhq/flower/scriptedapi"
	"github.com/flowerhq/flower/workbench"
)

// flower -v on the real harness, with secrets where gateways and MCP
// configs put them: a token in the endpoint's path, one in each of two
// --mcp-config values. The run works (the gateway strips its path), and
// neither -v, nor the status lines, nor the run's log show any token.
func TestVerboseMasksSecrets(t *testing.T) {
	t.Parallel()
	const (
		pathToken = "gwtok-PATHSECRET-0123456789"
		mcpToken1 = "mcptok-FIRSTSECRET-0123456789"
		mcpToken2 = "mcptok-SECONDSECRET-0123456789"
	)
	srv, err := scriptedapi.Start(func(r *scriptedapi.Request) scriptedapi.Reply {
		if r.Kind != scriptedapi.KindMain {
			return scriptedapi.Harmless(r)
		}
		return scriptedapi.Reply{Usage: scriptedapi.Usage{InputTokens: 20_000}, Text: "Done through the gateway."}
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	// A gateway that wants its token as the first path segment.
	target, _ := url.Parse(srv.URL)
	proxy := httputil.NewSingleHostReverseProxy(target)
	gw := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rest, ok := strings.CutPrefix(r.URL.Path, "/"+pathToken)
		if !ok {
			http.Error(w, "no token", http.StatusForbidden)
			return
		}
		r.URL.Path = rest
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(gw.Close)

	ws := t.TempDir()
	mcp := func(tok string) string {
		return `{"mcpServers":{"s":{"type":"http","url":"http://127.0.0.1:1/mcp","headers":{"Authorization":"Bearer ` + tok + `"}}}}`
	}
	cmd := exec.Command(flowerBinary(t), "-v", "-C", ws, "--window", "200000", "Say done.",
		"--", "--mcp-config", mcp(mcpToken1), mcp(mcpToken2), "--allowedTools", "Read")
	cmd.Env = append(cliEnv(t, srv), "ANTHROPIC_BASE_URL="+gw.URL+"/"+pathToken)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("flower: %v\nstderr:\n%s", err, stderr.String())
	}
	if !strings.Contains(stdout.String(), "Done through the gateway.") {
		t.Errorf("the run did not go through the gateway:\n%s", stdout.String())
	}
	errOut := stderr.String()
	for _, want := range []string{
		"endpoint:    " + gw.URL + "/gwto…**** (ANTHROPIC_BASE_URL)",
		"flower: harness arguments --mcp-config <",
		"--allowedTools Read",
	} {
		if !strings.Contains(errOut, want) {
			t.Errorf("-v lacks %q:\n%s", want, errOut)
		}
	}
	runDir, err := filepath.EvalSymlinks(filepath.Join(ws, ".flower", "runs", "latest"))
	if err != nil {
		t.Fatal(err)
	}
	logData, err := os.ReadFile(filepath.Join(runDir, workbench.LogFileName))
	if err != nil || !strings.Contains(string(logData), `"msg":"harness started"`) {
		t.Fatalf("the log has no harness start (%v):\n%s", err, logData)
	}
	logKeysOnce(t, logData)
	for name, out := range map[string]string{"stdout": stdout.String(), "stderr": errOut, "flower.log": string(logData)} {
		for _, tok := range []string{pathToken, mcpToken1, mcpToken2} {
			if strings.Contains(out, tok[4:]) {
				t.Errorf("%s holds a token (%s):\n%s", name, tok, out)
			}
		}
	}
}

// logKeysOnce fails for every record of a run's log that repeats a key:
// a reader of the JSON would have to pick one of the values.
func logKeysOnce(t *testing.T, log []byte) {
	t.Helper()
	n := 0
	for _, line := range bytes.Split(bytes.TrimSpace(log), []byte("\n")) {
		n++
		if dup := runlog.DuplicateKeys(line); len(dup) > 0 {
			t.Errorf("a log record repeats %v: %s", dup, line)
		}
	}
	if n < 3 {
		t.Errorf("the log has %d records: too few to check", n)
	}
}

// The Temporal API key from the environment never shows in the help of
// the commands that take it (a flag's default is printed there, and an
// environment value must not become one).
func TestAPIKeyNotInHelp(t *testing.T) {
	const key = "tmprl-HELPKEY-SECRET-0123456789"
	t.Setenv("TEMPORAL_API_KEY", key)
	for _, cmd := range [][]string{{"worker", "--help"}, {"submit", "--help"}, {"show", "--help"}, {"handoff", "set", "--help"}} {
		out, errOut, err := runInProcess(context.Background(), cmd...)
		if err != nil {
			t.Fatalf("%v: %v", cmd, err)
		}
		if !strings.Contains(out+errOut, "TEMPORAL_API_KEY") || strings.Contains(out+errOut, "HELPKEY") {
			t.Errorf("flower %s: the key's flag is missing or its value shown:\n%s", strings.Join(cmd, " "), out+errOut)
		}
	}
}
