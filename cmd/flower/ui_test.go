package main

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
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
	"github.com/flowerhq/flower/registry"
	"github.com/flowerhq/flower/runpage"
	"github.com/flowerhq/flower/scriptedapi"
)

// fakeRuns makes run dirs with manifests in ws; it returns their names.
func fakeRuns(t *testing.T, ws string, names ...string) {
	t.Helper()
	for i, name := range names {
		dir := filepath.Join(ws, ".flower", "runs", name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		m := manifest.New(dir, ws, time.Date(2026, 12, 1, 8, i, 0, 0, time.UTC))
		m.EnsureStep("main", "task "+name, m.CreatedAt)
		if err := m.Save(); err != nil {
			t.Fatal(err)
		}
	}
	// latest is a link, not a run of its own.
	if err := os.Symlink(names[len(names)-1], filepath.Join(ws, ".flower", "runs", "latest")); err != nil {
		t.Fatal(err)
	}
}

// The index lists the workspace's runs and links their pages; a request
// from beyond loopback is refused without a token, and with a wrong one; a
// loopback request naming another host (DNS rebinding) is refused too.
func TestUIHandler(t *testing.T) {
	ws := t.TempDir()
	fakeRuns(t, ws, "20261201-080000", "20261201-080100")
	other := t.TempDir()
	fakeRuns(t, other, "20261201-090000")
	src := &runSource{workspaces: []string{ws}, lang: runpage.LangEn}
	const self = "127.0.0.1:8470"
	h := uiHandler(src, "", self)
	get := func(h http.Handler, remote, host, target string, hdr ...string) *httptest.ResponseRecorder {
		r := httptest.NewRequest("GET", target, nil)
		r.RemoteAddr, r.Host = remote, host
		for i := 0; i+1 < len(hdr); i += 2 {
			r.Header.Set(hdr[i], hdr[i+1])
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}
	w := get(h, "127.0.0.1:5000", self, "/")
	if w.Code != 200 {
		t.Fatalf("index: %d %s", w.Code, w.Body)
	}
	body := w.Body.String()
	if n := strings.Count(body, `class="run-link"`); n != 2 || !strings.Contains(body, "20261201-080000") || !strings.Contains(body, "20261201-080100") || strings.Contains(body, "20261201-090000") {
		t.Errorf("the index does not list exactly the workspace's two runs:\n%s", body)
	}
	i := strings.Index(body, `href="/run/`)
	link := body[i+len(`href="`):]
	link = link[:strings.IndexByte(link, '"')]
	if w := get(h, "[::1]:5000", "localhost:8470", link); w.Code != 200 || !strings.Contains(w.Body.String(), `<svg class="chart"`) || !strings.Contains(w.Header().Get("Content-Security-Policy"), "default-src 'none'") {
		t.Errorf("run page: %d %q", w.Code, w.Header())
	}
	for _, bad := range []string{"/run/0000000000000000", "/run/..%2f..%2fetc", "/run/20261201-080000"} {
		if w := get(h, "127.0.0.1:5000", self, bad); w.Code != 404 {
			t.Errorf("%s: %d, want 404", bad, w.Code)
		}
	}
	for _, tt := range []struct{ remote, host string }{
		{"192.0.2.7:41000", self},               // another machine
		{"10.1.2.3:41000", self},                // another machine
		{"127.0.0.1:5000", "evil.example:8470"}, // a rebound name
		{"127.0.0.1:5000", "127.0.0.1:9999"},    // another port
	} {
		if w := get(h, tt.remote, tt.host, "/"); w.Code != http.StatusForbidden {
			t.Errorf("from %s as %s: %d, want 403", tt.remote, tt.host, w.Code)
		}
	}
	// With a token, beyond loopback needs it, and gets a cookie.
	ht := uiHandler(src, "s3cret", "0.0.0.0:8470")
	if w := get(ht, "192.0.2.7:41000", "box:8470", "/"); w.Code != http.StatusForbidden {
		t.Errorf("no token: %d", w.Code)
	}
	if w := get(ht, "192.0.2.7:41000", "box:8470", "/", "Authorization", "Bearer wrong"); w.Code != http.StatusForbidden {
		t.Errorf("wrong token: %d", w.Code)
	}
	if w := get(ht, "192.0.2.7:41000", "box:8470", "/?token=s3cret"); w.Code != 200 || !strings.Contains(w.Header().Get("Set-Cookie"), tokenCookie) {
		t.Errorf("token in the query: %d %q", w.Code, w.Header())
	}
	if w := get(ht, "192.0.2.7:41000", "box:8470", "/", "Cookie", tokenCookie+"=s3cret"); w.Code != 200 {
		t.Errorf("token in the cookie: %d", w.Code)
	}
}

// flower ui --machine lists the runs of every workspace with a live
// flower in the registry, and of no other.
func TestUIMachine(t *testing.T) {
	ws, idle := t.TempDir(), t.TempDir()
	fakeRuns(t, ws, "20261201-080000")
	fakeRuns(t, idle, "20261201-070000")
	psDir := filepath.Join(t.TempDir(), "ps")
	h, err := registry.Register(psDir, registry.Entry{Front: registry.FrontHeadless, Workspace: ws, Step: "main"}, time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	src := &runSource{psDir: psDir, lang: runpage.LangZh}
	runs := src.runs()
	if len(runs) != 1 || runs[0].Workspace != ws {
		t.Fatalf("runs %+v", runs)
	}
	h.Close()
	if runs := src.runs(); len(runs) != 0 {
		t.Errorf("with no live flower: %+v", runs)
	}
}

// flower ui binds loopback only, unless an address beyond it comes with a
// token.
func TestUIBindCheck(t *testing.T) {
	for _, tt := range []struct {
		addr, token string
		ok          bool
	}{
		{"127.0.0.1:0", "", true}, {"[::1]:0", "", true}, {"localhost:8470", "", true},
		{"0.0.0.0:8470", "", false}, {":8470", "", false}, {"192.0.2.7:8470", "", false},
		{"0.0.0.0:8470", "t", true}, {"nonsense", "", false},
	} {
		if err := checkBind(tt.addr, tt.token); (err == nil) != tt.ok {
			t.Errorf("checkBind(%q, %q) = %v", tt.addr, tt.token, err)
		}
	}
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
