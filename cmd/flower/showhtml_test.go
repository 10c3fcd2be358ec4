package main

import (
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/flowerhq/flower/integration/pagecheck"
	"github.com/flowerhq/flower/manifest"
	"github.com/flowerhq/flower/runpage"
	"github.com/flowerhq/flower/scriptedapi"
)

// The task of the three-generation run: it carries markup, which the page
// must show as text.
const hostileTask = `Build the parser. <script>alert("task")</script> "><img src=x onerror=alert(1)>`

// threeGenerations runs flower on the real harness through three
// generations: the first handoff degraded (the writing turn leaves out
// every section), the second written and then edited by a person before
// the successor launched from it; the third meets a rate limit once. It
// returns the workspace and the run dir.
func threeGenerations(t *testing.T) (ws, runDir string) {
	t.Helper()
	ws = t.TempDir()
	var mu sync.Mutex
	handoffs, round, limited := 0, 0, false
	srv, err := scriptedapi.Start(func(r *scriptedapi.Request) scriptedapi.Reply {
		if r.Kind != scriptedapi.KindMain {
			return scriptedapi.Harmless(r)
		}
		mu.Lock()
		defer mu.Unlock()
		u := func(n int) scriptedapi.Usage {
			return scriptedapi.Usage{InputTokens: 100, CacheReadInputTokens: n - 100}
		}
		bash := func(n int) scriptedapi.Reply {
			return scriptedapi.Reply{Usage: u(n), Text: "Working.", ToolUses: []scriptedapi.ToolUse{{Name: "Bash", Input: map[string]any{"command": "true", "description": "x"}}}}
		}
		if strings.Contains(r.LastUserText, "<<flower:handoff-request>>") {
			handoffs++
			round = 0
			if handoffs == 1 {
				return scriptedapi.Reply{Usage: u(156_000), Text: "I lost track <b>of</b> it all."}
			}
			return scriptedapi.Reply{Usage: u(156_000), Text: "## 现在在做 (doing)\nParsing expressions.\n\n## 下一步 (next)\nPARSER-NEXT: parse statements.\n"}
		}
		if handoffs == 2 && !limited {
			// The third generation's first request meets a rate limit:
			// the harness waits and asks again.
			limited = true
			return scriptedapi.Reply{Status: 429, ErrorType: "rate_limit_error", ErrorMessage: "slow down"}
		}
		round++
		switch {
		case handoffs < 2 && round == 1:
			return bash(40_000 + 60_000*(1-handoffs))
		case handoffs < 2:
			return bash(155_000)
		case round == 1:
			return bash(30_000)
		}
		return scriptedapi.Reply{Usage: u(32_000), Text: "Done: the parser is built."}
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	gate := filepath.Join(t.TempDir(), "gate")
	cmd := exec.Command(flowerBinary(t), "-q", "-C", ws, "--window", "200000", hostileTask, "--", "--allowedTools", "Bash")
	cmd.Env = cliEnv(t, srv, envPauseAfterFreeze+"=file:"+gate)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	handoff := filepath.Join(ws, ".flower", "notes", "交接-main.md")
	waitFile := func(what string, cond func(string) bool) {
		t.Helper()
		deadline := time.Now().Add(90 * time.Second)
		for {
			b, err := os.ReadFile(handoff)
			if err == nil && cond(string(b)) {
				return
			}
			select {
			case err := <-exited:
				t.Fatalf("flower exited (%v) before %s:\n%s", err, what, stderr.String())
			case <-time.After(10 * time.Millisecond):
			}
			if time.Now().After(deadline) {
				t.Fatalf("no %s within 90s:\n%s", what, stderr.String())
			}
		}
	}
	// The degraded handoff is frozen: let the successor go.
	waitFile("degraded handoff", func(s string) bool { return s != "" })
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	// The written one: a person edits it before the successor launches.
	waitFile("written handoff", func(s string) bool { return strings.Contains(s, "PARSER-NEXT") })
	b, _ := os.ReadFile(handoff)
	edited := strings.Replace(string(b), "PARSER-NEXT: parse statements.", "PARSER-NEXT: parse statements, then PERSON-ADDED the error messages.", 1)
	if err := os.WriteFile(handoff, []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("flower: %v\n%s", err, stderr.String())
		}
	case <-time.After(2 * time.Minute):
		t.Fatalf("flower did not finish:\n%s", stderr.String())
	}
	runDir, err = filepath.EvalSymlinks(filepath.Join(ws, ".flower", "runs", "latest"))
	if err != nil {
		t.Fatal(err)
	}
	m, err := manifest.Load(manifest.Path(runDir))
	if err != nil {
		t.Fatal(err)
	}
	st := m.Step("main")
	if st == nil || len(st.Generations) != 3 || !st.Generations[0].Handoff.Degraded || st.Generations[1].Handoff.Degraded ||
		st.Generations[1].Handoff.SHA256Written == st.Generations[1].Handoff.SHA256Launched {
		t.Fatalf("the run is not the one wanted: %+v", st)
	}
	return ws, runDir
}

// A run's page in real headless chromium: one self-contained file that
// loads with no console error and no request, a chart with one point per
// main-thread response, three generations, the degraded mark, and the
// person's edit as a diff, the wait for a rate limit; markup from the run
// is text. The same for a run
// stopped by the generation limit. With -update, the README's screenshot
// (docs/run-page.png) is made from the three-generation run.
func TestShowHTMLInBrowser(t *testing.T) {
	t.Parallel()
	browser := pagecheck.Start(t)
	flower := flowerBinary(t)
	_, runDir := threeGenerations(t)
	t.Run("three generations", func(t *testing.T) {
		p := browser.RunPage(t, flower, runDir, "en", filepath.Join(t.ArtifactDir(), "three-generations.png"))
		checkPageLang(t, p, runpage.LangEn)
		if n := p.Count("section.generation.degraded"); n != 1 {
			t.Errorf("%d degraded generations shown, want 1", n)
		}
		if n := p.Count("svg.chart .mark.handoff.degraded"); n != 1 {
			t.Errorf("%d degraded handoff marks on the chart, want 1", n)
		}
		if n := p.Count("svg.chart .mark.handoff"); n != 2 {
			t.Errorf("%d handoff marks on the chart, want 2", n)
		}
		if n := p.Count("svg.chart .mark.cut"); n != 2 {
			t.Errorf("%d cut marks, want 2", n)
		}
		if n := p.Count("svg.chart circle.pt.writing"); n != 2 {
			t.Errorf("%d writing-turn points, want 2", n)
		}
		if n := p.Count("svg.chart .th.at") + p.Count("svg.chart .th.near"); n != 2 {
			t.Errorf("%d threshold lines, want the near notice's and the handoff's", n)
		}
		diff := p.Text(`section.generation[data-gen="2"] pre.diff .ins`)
		if !strings.Contains(diff, "PERSON-ADDED") || !strings.Contains(p.Text(`section.generation[data-gen="2"] pre.diff .del`), "parse statements.") {
			t.Errorf("the person's edit is not shown as a diff: ins %q", diff)
		}
		if n := p.Count("svg.chart .mark.wait.limit"); n != 1 {
			t.Errorf("%d waits for a limit marked, want 1", n)
		}
		if n := p.Count("pre.diff"); n != 1 {
			t.Errorf("%d diffs, want the one edit", n)
		}
		if got := p.Text("pre.task"); got != hostileTask {
			t.Errorf("the task as shown: %q", got)
		}
		if n := p.Count("img"); n != 0 {
			t.Errorf("markup from the run became %d img elements", n)
		}
		if !strings.Contains(p.Text("pre.document"), "I lost track <b>of</b> it all.") && !strings.Contains(p.Text("section.generation.degraded"), "missing") {
			t.Errorf("the degraded handoff's document is not shown")
		}
		// Dark mode follows the system; print is dark on white.
		bg := func() (s string) {
			p.Eval("getComputedStyle(document.body).backgroundColor", &s)
			return s
		}
		p.EmulateDark(true)
		if got := bg(); got != "rgb(21, 21, 23)" {
			t.Errorf("dark mode background %s", got)
		}
		p.Screenshot(filepath.Join(t.ArtifactDir(), "three-generations-dark.png"), 1000, 0)
		p.EmulatePrint(true)
		if got := bg(); got != "rgb(255, 255, 255)" {
			t.Errorf("print background %s", got)
		}
		p.EmulatePrint(false)
		if *update {
			p.EmulateDark(false)
			p.Screenshot(filepath.Join("..", "..", "docs", "run-page.png"), 1000, 1100)
		}
	})
	t.Run("generation limit", func(t *testing.T) {
		dir := generationLimitRun(t)
		p := browser.RunPage(t, flower, dir, "zh", filepath.Join(t.ArtifactDir(), "generation-limit.png"))
		checkPageLang(t, p, runpage.LangZh)
		if !strings.Contains(p.Text(".status"), manifest.StatusGenerationLimit) {
			t.Errorf("status: %q", p.Text(".status"))
		}
		if !strings.Contains(p.Text("ul.errors"), "generation") {
			t.Errorf("errors: %q", p.Text("ul.errors"))
		}
		if p.Text("h1") == "" || !strings.Contains(p.Text("figcaption"), "主线程") {
			t.Errorf("--lang zh labels: %q", p.Text("figcaption"))
		}
	})
}

// checkPageLang: the page's labels are lang's and none of the other
// language's, its html element says lang, and its font stacks end in CJK
// fonts, for the Chinese of a zh page or of a run's own text.
func checkPageLang(t *testing.T, p *pagecheck.Page, lang runpage.Lang) {
	t.Helper()
	other := runpage.LangZh
	if lang == runpage.LangZh {
		other = runpage.LangEn
	}
	var text, htmlLang, font, mono string
	p.Eval("document.body.innerText", &text)
	p.Eval("document.documentElement.lang", &htmlLang)
	p.Eval("getComputedStyle(document.body).fontFamily", &font)
	p.Eval("getComputedStyle(document.querySelector('pre') || document.body.appendChild(document.createElement('pre'))).fontFamily", &mono)
	if htmlLang != string(lang) {
		t.Errorf("<html lang=%q>, want %q", htmlLang, lang)
	}
	for _, key := range []string{"chart", "gens", "session", "started", "workspace"} {
		if want := runpage.Label(lang)(key); !strings.Contains(text, want) {
			t.Errorf("the %s page lacks its label %q", lang, want)
		}
		if not := runpage.Label(other)(key); strings.Contains(text, not) {
			t.Errorf("the %s page shows the %s label %q", lang, other, not)
		}
	}
	for _, f := range []string{`"Noto Sans CJK SC"`, `"PingFang SC"`, `"Microsoft YaHei"`} {
		if !strings.Contains(font, f) {
			t.Errorf("the page's font stack %s lacks %s", font, f)
		}
	}
	if !strings.Contains(mono, `"Noto Sans Mono CJK SC"`) {
		t.Errorf("the page's monospace stack %s lacks a CJK font", mono)
	}
}

// generationLimitRun is a run stopped by the generation limit: each
// session climbs to the threshold, so two generations are all it gets.
func generationLimitRun(t *testing.T) string {
	t.Helper()
	srv := generationLimitServer(t)
	ws := t.TempDir()
	cmd := exec.Command(flowerBinary(t), "-q", "-C", ws, "--window", "30000", "--max-generations", "2", "Loop forever.", "--", "--allowedTools", "Bash")
	cmd.Env = cliEnv(t, srv)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Run(); exitOf(err) != exitLimit {
		t.Fatalf("exit %v, want %d\n%s", err, exitLimit, stderr.String())
	}
	dir, err := filepath.EvalSymlinks(filepath.Join(ws, ".flower", "runs", "latest"))
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

func exitOf(err error) int {
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}

// flower show --html on a terminal writes RUN_DIR/run.html and prints its
// path; with stdout elsewhere (a file, a pipe) it writes the page there, as
// it does with -o -; bad flags are usage errors.
func TestShowHTMLCLI(t *testing.T) {
	ws := t.TempDir()
	dir := filepath.Join(ws, ".flower", "runs", "20261201-080000")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	m := manifest.New(dir, ws, time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC))
	m.EnsureStep("main", "task", m.CreatedAt)
	if err := m.Save(); err != nil {
		t.Fatal(err)
	}
	page := filepath.Join(dir, "run.html")
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer ptmx.Close()
	var errOut strings.Builder
	err = run(context.Background(), []string{"flower", "show", "--html", "--lang", "zh", "-C", ws}, strings.NewReader(""), tty, &errOut)
	tty.Close()
	if err != nil {
		t.Fatal(err)
	}
	printed, _ := io.ReadAll(ptmx) // EIO once the tty side is closed
	if got := strings.TrimSpace(string(printed)); got != page {
		t.Errorf("on a terminal printed %q, want %q", got, page)
	}
	if b, err := os.ReadFile(page); err != nil || !strings.Contains(string(b), `<svg class="chart"`) || !strings.Contains(string(b), "主线程") {
		t.Errorf("run.html: %v", err)
	}
	if err := os.Remove(page); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if err := run(context.Background(), []string{"flower", "show", "--html", "--lang", "zh", dir}, strings.NewReader(""), &out, &errOut); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out.String(), "<!DOCTYPE html>") || !strings.Contains(out.String(), "主线程") {
		t.Errorf("stdout not a terminal: %.80q, want the page", out.String())
	}
	if _, err := os.Stat(page); err == nil {
		t.Errorf("the page went to %s as well as to stdout", page)
	}
	out.Reset()
	if err := run(context.Background(), []string{"flower", "show", "--html", "--lang", "en", "-o", "-", dir}, strings.NewReader(""), &out, &errOut); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out.String(), "<!DOCTYPE html>") || !strings.Contains(out.String(), "Main-thread context") {
		t.Errorf("stdout is not the English page")
	}
	// No --lang: the locale's; --lang before the command counts as well.
	t.Setenv("LC_ALL", "")
	t.Setenv("LC_MESSAGES", "zh_CN.UTF-8")
	t.Setenv("LANG", "en_US.UTF-8")
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"show", "--html"}, "主线程"},
		{[]string{"--lang", "en", "show", "--html"}, "Main-thread context"},
		{[]string{"show", "--html", "--lang", "en"}, "Main-thread context"},
	} {
		out.Reset()
		if err := run(context.Background(), append(append([]string{"flower"}, tt.args...), dir), strings.NewReader(""), &out, &errOut); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(out.String(), tt.want) {
			t.Errorf("flower %q under LC_MESSAGES=zh_CN.UTF-8: the page lacks %q", tt.args, tt.want)
		}
	}
	for _, args := range [][]string{{"--html", "--json"}, {"--html", "--lang", "fr"}} {
		err := run(context.Background(), append(append([]string{"flower", "show"}, args...), dir), strings.NewReader(""), io.Discard, io.Discard)
		if exitCode(err) != exitUsage {
			t.Errorf("%v: %v", args, err)
		}
	}
}
