package runserver

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flowerhq/flower/manifest"
	"github.com/flowerhq/flower/registry"
	"github.com/flowerhq/flower/runpage"
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
func TestHandler(t *testing.T) {
	ws := t.TempDir()
	fakeRuns(t, ws, "20261201-080000", "20261201-080100")
	other := t.TempDir()
	fakeRuns(t, other, "20261201-090000")
	src := &Source{Workspaces: []string{ws}, Lang: runpage.LangEn}
	const self = "127.0.0.1:8470"
	h := Handler(src, "", self)
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
	ht := Handler(src, "s3cret", "0.0.0.0:8470")
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
func TestMachine(t *testing.T) {
	ws, idle := t.TempDir(), t.TempDir()
	fakeRuns(t, ws, "20261201-080000")
	fakeRuns(t, idle, "20261201-070000")
	psDir := filepath.Join(t.TempDir(), "ps")
	h, err := registry.Register(psDir, registry.Entry{Front: registry.FrontHeadless, Workspace: ws, Step: "main"}, time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	src := &Source{PSDir: psDir, Lang: runpage.LangZh}
	runs := src.runs()
	if len(runs) != 1 || runs[0].Workspace != ws {
		t.Fatalf("runs %+v", runs)
	}
	h.Close()
	if runs := src.runs(); len(runs) != 0 {
		t.Errorf("with no live flower: %+v", runs)
	}
}

// The server binds loopback only, unless an address beyond it comes with
// a token.
func TestBindCheck(t *testing.T) {
	for _, tt := range []struct {
		addr, token string
		ok          bool
	}{
		{"127.0.0.1:0", "", true}, {"[::1]:0", "", true}, {"localhost:8470", "", true},
		{"0.0.0.0:8470", "", false}, {":8470", "", false}, {"192.0.2.7:8470", "", false},
		{"0.0.0.0:8470", "t", true}, {"nonsense", "", false},
	} {
		if err := CheckBind(tt.addr, tt.token); (err == nil) != tt.ok {
			t.Errorf("CheckBind(%q, %q) = %v", tt.addr, tt.token, err)
		}
	}
}
