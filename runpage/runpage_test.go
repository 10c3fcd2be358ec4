package runpage

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flowerhq/flower/manifest"
	"github.com/flowerhq/flower/workbench"
)

func TestDiff(t *testing.T) {
	got := Diff("a\nb\nc\n", "a\nB\nc\nd\n")
	var b strings.Builder
	for _, l := range got {
		b.WriteString(string(l.Op) + l.Text + "|")
	}
	if want := " a|-b|+B| c|+d|"; b.String() != want {
		t.Errorf("diff %q, want %q", b.String(), want)
	}
	if d := Diff("same\n", "same"); len(d) != 1 || d[0].Op != ' ' {
		t.Errorf("a trailing newline is no change: %+v", d)
	}
}

// A run dir written by a stranger: torn and oversized log lines are
// skipped and counted, markup is escaped, and the static page has no
// script.
func TestLoadAndRenderUntrusted(t *testing.T) {
	dir := t.TempDir()
	t0 := time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)
	m := manifest.New(dir, "/ws", t0)
	st := m.EnsureStep(`x"><script>alert(1)</script>`, "</pre><script>alert(2)</script>", t0)
	st.Errors = []string{"<img src=x onerror=alert(3)>"}
	if err := m.Save(); err != nil {
		t.Fatal(err)
	}
	log := strings.Join([]string{
		`{"time":"2026-12-01T08:00:01Z","msg":"response","step":"x\"><script>alert(1)</script>","gen":1,"phase":"working","context":1000,"window":200000,"at":150000,"warn_at":130000}`,
		`{"time":"2026-12-01T08:00:02Z","msg":"response","step":"x\"><script>alert(1)</script>","gen":1,"phase":"work`, // torn
		`not json`,
		`{"msg":"response","step":"` + strings.Repeat("y", MaxLogLine) + `"}`,
		`{"time":"2026-12-01T08:00:03Z","msg":"response","step":"x\"><script>alert(1)</script>","gen":1,"phase":"writing","context":2000}`,
	}, "\n")
	if err := os.WriteFile(filepath.Join(dir, workbench.LogFileName), []byte(log), 0o644); err != nil {
		t.Fatal(err)
	}
	run, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if run.Skipped != 3 || len(run.Steps) != 1 || len(run.Steps[0].Responses) != 2 {
		t.Fatalf("skipped %d, responses %+v", run.Skipped, run.Steps[0].Responses)
	}
	var b bytes.Buffer
	if err := Render(&b, run, Options{Lang: LangEn, Now: t0.Add(time.Minute)}); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	if strings.Contains(page, "<script") || strings.Contains(page, "<img") {
		t.Errorf("unescaped markup in the page:\n%s", page)
	}
	if !strings.Contains(page, "&lt;script&gt;alert(2)") {
		t.Errorf("the task is not shown as text")
	}
	if strings.Contains(page, "script-src") {
		t.Errorf("a static page's policy allows scripts")
	}
	if n := strings.Count(page, `<circle class="pt`); n != 2 {
		t.Errorf("%d points", n)
	}
	// A log that is a link is refused, not followed.
	os.Remove(filepath.Join(dir, workbench.LogFileName))
	if err := os.Symlink("/etc/passwd", filepath.Join(dir, workbench.LogFileName)); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(dir); err == nil {
		t.Error("a log that is a link was read")
	}
}

func TestNiceStep(t *testing.T) {
	for n, want := range map[int]int{1: 1, 3: 5, 41_250: 50_000, 50_000: 50_000, 50_001: 100_000, 20_625: 25_000, 1_100_000: 2_000_000} {
		if got := niceStep(n); got != want {
			t.Errorf("niceStep(%d) = %d, want %d", n, got, want)
		}
	}
}
