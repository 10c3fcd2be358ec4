package main

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/flowerhq/flower/registry"
	"github.com/flowerhq/flower/scriptedapi"
)

// slowFlower is a flower on the real harness whose scripted model hands
// off once (when handoff is set) and then holds its next answer until the
// test ends: a run that stays alive as long as the test needs.
type slowFlower struct {
	cmd    *exec.Cmd
	held   chan struct{} // closed once the held request arrived
	ws     string
	step   string
	stderr *strings.Builder
}

func startSlowFlower(t *testing.T, psDir, ws, step string, handoff bool) *slowFlower {
	t.Helper()
	release := make(chan struct{})
	f := &slowFlower{held: make(chan struct{}), ws: ws, step: step, stderr: &strings.Builder{}}
	var mu sync.Mutex
	gen, i, heldOnce := 0, 0, false
	if !handoff {
		gen = 1
	}
	srv, err := scriptedapi.Start(func(r *scriptedapi.Request) scriptedapi.Reply {
		if r.Kind != scriptedapi.KindMain {
			return scriptedapi.Harmless(r)
		}
		mu.Lock()
		u := func(n int) scriptedapi.Usage {
			return scriptedapi.Usage{InputTokens: 100, CacheReadInputTokens: n - 100}
		}
		switch {
		case strings.Contains(r.LastUserText, "<<flower:handoff-request>>"):
			gen, i = 1, 0
			mu.Unlock()
			return scriptedapi.Reply{Usage: u(156_000), Text: "## 现在在做 (doing)\nWaiting.\n\n## 下一步 (next)\nWait more.\n"}
		case gen == 0 && i == 0:
			i++
			mu.Unlock()
			return scriptedapi.Reply{Usage: u(100_000), Text: "Looking.", ToolUses: []scriptedapi.ToolUse{{Name: "Bash", Input: map[string]any{"command": "true", "description": "x"}}}}
		case gen == 0:
			mu.Unlock()
			return scriptedapi.Reply{Usage: u(155_000), Text: "More.", ToolUses: []scriptedapi.ToolUse{{Name: "Bash", Input: map[string]any{"command": "true", "description": "x"}}}}
		}
		first := !heldOnce
		heldOnce = true
		mu.Unlock()
		if first {
			close(f.held)
		}
		<-release // a slow turn: answered when the test ends
		return scriptedapi.Reply{Usage: u(20_000), Text: "Done."}
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	f.cmd = exec.Command(flowerBinary(t), "-q", "-C", ws, "--step", step, "--window", "200000", "Wait for the answer.", "--", "--allowedTools", "Bash")
	f.cmd.Env = cliEnv(t, srv, registry.EnvDir+"="+psDir)
	f.cmd.Stderr = f.stderr
	f.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := f.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		close(release)
		_ = syscall.Kill(-f.cmd.Process.Pid, syscall.SIGKILL)
		_ = f.cmd.Wait()
		if t.Failed() {
			t.Logf("flower %s/%s stderr:\n%s", ws, step, f.stderr.String())
		}
	})
	return f
}

// psJSON runs flower ps --json against the registry in dir.
func psJSON(t *testing.T, dir string) []psRow {
	t.Helper()
	cmd := exec.Command(flowerBinary(t), "ps", "--json")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), registry.EnvDir + "=" + dir}
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("flower ps --json: %v", err)
	}
	var rows []psRow
	if err := json.Unmarshal(out, &rows); err != nil {
		t.Fatalf("flower ps --json does not parse: %v\n%s", err, out)
	}
	return rows
}

// Three flowers on the real harness, two steps in one workspace and one in
// another: flower ps lists exactly them, the one that handed off at
// generation 2; one killed with -9 is gone from the list within a second.
func TestPSListsLiveFlowers(t *testing.T) {
	t.Parallel()
	realHarness(t)
	psDir := filepath.Join(t.TempDir(), "ps")
	ws1, ws2 := t.TempDir(), t.TempDir()
	flowers := []*slowFlower{
		startSlowFlower(t, psDir, ws1, "a", true),
		startSlowFlower(t, psDir, ws1, "b", false),
		startSlowFlower(t, psDir, ws2, "main", false),
	}
	for _, f := range flowers {
		select {
		case <-f.held:
		case <-time.After(90 * time.Second):
			t.Fatalf("flower %s/%s never reached its slow turn:\n%s", f.ws, f.step, f.stderr.String())
		}
	}
	type key struct {
		ws, step string
		pid, gen int
	}
	want := []key{}
	for i, f := range flowers {
		gen := 1
		if i == 0 {
			gen = 2
		}
		want = append(want, key{f.ws, f.step, f.cmd.Process.Pid, gen})
	}
	sortKeys := func(k []key) {
		sort.Slice(k, func(i, j int) bool { return k[i].ws+k[i].step < k[j].ws+k[j].step })
	}
	sortKeys(want)
	var rows []psRow
	var got []key
	// The held request is out: the entries follow within their interval.
	deadline := time.Now().Add(10 * time.Second)
	for {
		rows = psJSON(t, psDir)
		got = got[:0]
		for _, r := range rows {
			got = append(got, key{r.Workspace, r.Step, r.PID, r.Generation})
		}
		sortKeys(got)
		// The entries follow the events as flower reads them: the
		// session's (which carries the window) may come a moment after
		// the held request went out.
		complete := true
		for _, r := range rows {
			complete = complete && r.Window > 0 && r.SessionID != ""
		}
		if equalKeys(got, want) && complete || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if !equalKeys(got, want) {
		t.Fatalf("flower ps lists %+v, want %+v", got, want)
	}
	for _, r := range rows {
		if r.Front != registry.FrontHeadless || r.Window != 200_000 || r.At == 0 || r.RunDir == "" || r.LastResponse.IsZero() && r.Generation == 2 {
			t.Errorf("row %+v", r)
		}
		if r.Step == "a" && (r.CostUSD <= 0 || r.Status == "") {
			t.Errorf("the flower that handed off: %+v", r)
		}
	}
	// The text table names each of them.
	cmd := exec.Command(flowerBinary(t), "ps")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), registry.EnvDir + "=" + psDir}
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	if lines := strings.Split(strings.TrimSpace(string(out)), "\n"); len(lines) != 4 || !strings.HasPrefix(lines[0], "WORKSPACE") {
		t.Errorf("flower ps:\n%s", out)
	}

	// kill -9 the flower of ws2: its row goes within a second.
	victim := flowers[2]
	if err := victim.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	for {
		rows = psJSON(t, psDir)
		gone := true
		for _, r := range rows {
			if r.PID == victim.cmd.Process.Pid {
				gone = false
			}
		}
		if gone {
			break
		}
		if time.Since(killed) > time.Second {
			t.Fatalf("the killed flower is still listed after %s: %+v", time.Since(killed), rows)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if len(rows) != 2 {
		t.Errorf("after the kill: %+v", rows)
	}
}

func equalKeys[T comparable](a, b []T) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// frames cancels its context once it has seen n screens of flower ps -w.
type frames struct {
	mu     sync.Mutex
	b      strings.Builder
	n      int
	cancel func()
}

func (f *frames) Write(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.b.Write(p)
	if strings.Count(f.b.String(), "\x1b[H\x1b[2J") >= f.n {
		f.cancel()
	}
	return len(p), nil
}

// flower ps -w redraws in place until interrupted, following the entries;
// --json with -w, and arguments, are refused.
func TestPSWatch(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ps")
	h, err := registry.Register(dir, registry.Entry{Front: registry.FrontRelay, Workspace: "/ws/one", Step: "watched"}, time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := &frames{n: 3, cancel: cancel}
	env := []string{registry.EnvDir + "=" + dir, "HOME=/ws"}
	err = runIn(ctx, []string{"flower", "ps", "-w", "--interval", "10ms"}, proc{stdin: strings.NewReader(""), stdout: out, stderr: io.Discard, env: env})
	if err != nil {
		t.Fatal(err)
	}
	screens := strings.Split(out.b.String(), "\x1b[H\x1b[2J")
	if len(screens) < 4 {
		t.Fatalf("%d screens", len(screens)-1)
	}
	for _, s := range screens[1:] {
		if !strings.Contains(s, "~/one") || !strings.Contains(s, "watched") || !strings.Contains(s, "relay") {
			t.Errorf("screen:\n%s", s)
		}
	}
	for _, args := range [][]string{{"ps", "-w", "--json"}, {"ps", "extra"}, {"ps", "--interval", "0s"}} {
		err := runIn(context.Background(), append([]string{"flower"}, args...), proc{stdin: strings.NewReader(""), stdout: io.Discard, stderr: io.Discard, env: env})
		if exitCode(err) != exitUsage {
			t.Errorf("%v: %v", args, err)
		}
	}
}
