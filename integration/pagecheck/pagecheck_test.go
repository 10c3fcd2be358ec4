package pagecheck

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The checker sees what it must catch: a console error, an exception, a
// request, and counts elements.
func TestCatchesErrorsAndRequests(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.html")
	page := `<!DOCTYPE html><html><body><p class="x">one</p><p class="x">two</p>
<img src="http://127.0.0.1:9/nothing.png">
<script>console.error("boom"); throw new Error("thrown");</script></body></html>`
	if err := os.WriteFile(bad, []byte(page), 0o644); err != nil {
		t.Fatal(err)
	}
	b := Start(t)
	p := b.Open(t, "file://"+bad)
	if n := p.Count("p.x"); n != 2 {
		t.Errorf("count %d", n)
	}
	if got := p.Text("p.x"); got != "one\ntwo" {
		t.Errorf("text %q", got)
	}
	errs := strings.Join(p.Errors(), "\n")
	if !strings.Contains(errs, "boom") || !strings.Contains(errs, "thrown") {
		t.Errorf("errors: %s", errs)
	}
	if reqs := p.Requests(); len(reqs) != 1 || !strings.Contains(reqs[0], "127.0.0.1:9") {
		t.Errorf("requests: %q", reqs)
	}
	shot := filepath.Join(dir, "shot.png")
	p.Screenshot(shot, 800, 0)
	if b, err := os.ReadFile(shot); err != nil || !strings.HasPrefix(string(b), "\x89PNG") {
		t.Errorf("screenshot: %v", err)
	}
}
