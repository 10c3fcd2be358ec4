package main

import (
	"bufio"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/flowerhq/flower/integration/pagecheck"
	"github.com/flowerhq/flower/manifest"
	"github.com/flowerhq/flower/scriptedapi"
)

// flower ui refuses an address beyond loopback without a token, as a
// usage error.
func TestUIBindCheck(t *testing.T) {
	var out, errOut strings.Builder
	err := run(context.Background(), []string{"flower", "ui", "--addr", "0.0.0.0:0", "-C", t.TempDir()}, strings.NewReader(""), &out, &errOut)
	if exitCode(err) != exitUsage || !strings.Contains(err.Error(), "token") {
		t.Errorf("flower ui --addr 0.0.0.0:0: %v", err)
	}
}

// flower ui on a live run, in headless chromium: the index lists it, and
// its page gains points as the run goes on, one scripted response at a
// time, and stops following once the run is over.
func TestUILiveRunInBrowser(t *testing.T) {
	t.Parallel()
	browser := pagecheck.Start(t)
	ws := t.TempDir()
	next := make(chan struct{})
	asked := make(chan struct{}, 1)
	var mu sync.Mutex
	round := 0
	srv, err := scriptedapi.Start(func(r *scriptedapi.Request) scriptedapi.Reply {
		if r.Kind != scriptedapi.KindMain {
			return scriptedapi.Harmless(r)
		}
		select {
		case asked <- struct{}{}:
		default:
		}
		<-next // one response per step of the test
		mu.Lock()
		defer mu.Unlock()
		round++
		u := scriptedapi.Usage{InputTokens: 10_000 * round}
		if round >= 4 {
			return scriptedapi.Reply{Usage: u, Text: "Done."}
		}
		return scriptedapi.Reply{Usage: u, Text: "Working.", ToolUses: []scriptedapi.ToolUse{{Name: "Bash", Input: map[string]any{"command": "true", "description": "x"}}}}
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	released := 0
	release := func() { next <- struct{}{}; released++ }
	t.Cleanup(func() {
		for released < 4 {
			select {
			case next <- struct{}{}:
				released++
			case <-time.After(time.Second):
				return
			}
		}
	})
	flower := exec.Command(flowerBinary(t), "-q", "-C", ws, "--window", "200000", "Count slowly.", "--", "--allowedTools", "Bash")
	flower.Env = cliEnv(t, srv)
	var flowerErr strings.Builder
	flower.Stderr = &flowerErr
	flower.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := flower.Start(); err != nil {
		t.Fatal(err)
	}
	flowerDone := make(chan error, 1)
	go func() { flowerDone <- flower.Wait() }()
	t.Cleanup(func() {
		_ = syscall.Kill(-flower.Process.Pid, syscall.SIGKILL)
		if t.Failed() {
			t.Logf("flower stderr:\n%s", flowerErr.String())
		}
	})
	// The run's manifest exists once the harness asks for the first reply.
	runs := filepath.Join(ws, ".flower", "runs")
	select {
	case <-asked:
	case <-time.After(60 * time.Second):
		t.Fatalf("the harness never asked for a reply:\n%s", flowerErr.String())
	}
	mustGlob(t, filepath.Join(runs, "2*", manifest.FileName))

	ui := exec.Command(flowerBinary(t), "ui", "-C", ws, "--lang", "en")
	ui.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
	stdout, err := ui.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := ui.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ui.Process.Kill(); ui.Wait() })
	line, err := bufio.NewReader(stdout).ReadString('\n')
	url, ok := strings.CutPrefix(strings.TrimSpace(line), "flower ui: ")
	if err != nil || !ok || !strings.HasPrefix(url, "http://127.0.0.1:") {
		t.Fatalf("flower ui said %q (%v)", line, err)
	}
	go io.Copy(io.Discard, stdout)

	index := browser.Open(t, url)
	if n := index.Count("a.run-link"); n != 1 {
		t.Fatalf("the index lists %d runs, want 1", n)
	}
	if n := index.Count("tr.run.live"); n != 1 {
		t.Errorf("the live run is not marked live")
	}
	var href string
	index.Eval(`document.querySelector("a.run-link").href`, &href)
	p := browser.Open(t, href)
	if n := p.Count("main[data-live=true]"); n != 1 {
		t.Fatalf("the page of a live run is not live")
	}
	for want := 1; want <= 3; want++ {
		release()
		if got := p.WaitCount("svg.chart circle.pt", want, 30*time.Second); got < want {
			t.Fatalf("the live page shows %d points after %d responses", got, want)
		}
	}
	release() // the last: the step ends
	select {
	case err := <-flowerDone:
		if err != nil {
			t.Fatalf("flower: %v", err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("flower did not finish")
	}
	if got := p.WaitCount("main[data-live=false]", 1, 30*time.Second); got != 1 {
		t.Errorf("the page still follows a run that is over")
	}
	runDir := filepath.Dir(mustGlob(t, filepath.Join(runs, "2*", manifest.FileName)))
	if got, want := p.Count("svg.chart circle.pt"), pagecheck.Responses(t, runDir); got != want || want != 4 {
		t.Errorf("the finished page has %d points, the log %d responses", got, want)
	}
	if errs := append(index.Errors(), p.Errors()...); len(errs) > 0 {
		t.Errorf("console errors:\n%s", strings.Join(errs, "\n"))
	}
	for _, u := range append(index.Requests(), p.Requests()...) {
		if !strings.HasPrefix(u, url) {
			t.Errorf("a request beyond the server: %s", u)
		}
	}
	p.Screenshot(filepath.Join(t.ArtifactDir(), "live.png"), 1000, 0)
}

func mustGlob(t *testing.T, pattern string) string {
	t.Helper()
	m, _ := filepath.Glob(pattern)
	if len(m) != 1 {
		t.Fatalf("%s: %q", pattern, m)
	}
	return m[0]
}
