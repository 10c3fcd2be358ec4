package pagecheck

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flowerhq/flower/manifest"
	"github.com/flowerhq/flower/workbench"
)

// Responses counts the main-thread response records in a run's log: the
// points its page's chart must have.
func Responses(t testing.TB, runDir string) int {
	t.Helper()
	f, err := os.Open(workbench.LogFile(runDir))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	n := 0
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var r struct{ Msg string }
		if json.Unmarshal(sc.Bytes(), &r) == nil && r.Msg == "response" {
			n++
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return n
}

// RunPage writes the page of the run in runDir with `flower show --html`
// (flower is the binary) and opens it. The page must load with no console
// error and no network request, and hold one chart whose points are the
// log's main-thread responses and one section per generation of the
// manifest. A screenshot goes to shot, when not empty.
func (b *Browser) RunPage(t testing.TB, flower, runDir, lang, shot string) *Page {
	t.Helper()
	out := filepath.Join(t.TempDir(), "run.html")
	cmd := exec.Command(flower, "show", "--html", "--lang", lang, "-o", out, runDir)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("flower show --html: %v\n%s", err, stderr.String())
	}
	m, err := manifest.Load(manifest.Path(runDir))
	if err != nil {
		t.Fatal(err)
	}
	gens := 0
	for _, st := range m.Steps {
		gens += len(st.Generations)
	}
	p := b.Open(t, "file://"+out)
	if errs := p.Errors(); len(errs) > 0 {
		t.Errorf("the page logged errors:\n%s", strings.Join(errs, "\n"))
	}
	if reqs := p.Requests(); len(reqs) > 0 {
		t.Errorf("the page made network requests: %q", reqs)
	}
	if n := p.Count("svg.chart"); n != len(m.Steps) {
		t.Errorf("%d charts for %d steps", n, len(m.Steps))
	}
	want := Responses(t, runDir)
	if want == 0 {
		t.Errorf("the log of %s has no response records", runDir)
	}
	if n := p.Count("svg.chart circle.pt"); n != want {
		t.Errorf("the chart has %d points, the log %d main-thread responses", n, want)
	}
	if n := p.Count("section.generation"); n != gens {
		t.Errorf("the page shows %d generations, the manifest has %d", n, gens)
	}
	if n := p.Count("script"); n != 0 {
		t.Errorf("a static page has %d script elements", n)
	}
	if shot != "" {
		p.Screenshot(shot, 1000, 0)
	}
	return p
}
