package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/flowerhq/flower/demo"
	"github.com/flowerhq/flower/harness/harnesstest"
	"github.com/flowerhq/flower/scriptedapi"
)

// runFake runs flower in-process on the fake harness (this test binary) in
// the given mode, with a fresh workspace; extra flags go before the task.
func runFake(t *testing.T, mode string, stdout, stderr io.Writer, flags ...string) error {
	t.Helper()
	t.Setenv(harnesstest.EnvMode, mode)
	t.Setenv(harnesstest.EnvContext, "5000")
	ws := t.TempDir()
	args := append([]string{"flower", "--harness", os.Args[0], "-C", ws, "--window", "200000", "--turn-timeout", "1m"}, flags...)
	args = append(args, "say hello")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	return run(ctx, args, strings.NewReader(""), stdout, stderr)
}

// jsonLines checks that every line of out is one JSON object and returns
// them split into the harness's lines and flower's.
func jsonLines(t *testing.T, out string) (harness, flower []map[string]any) {
	t.Helper()
	for i, l := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		if !json.Valid([]byte(l)) {
			t.Fatalf("stdout line %d is not JSON: %.300s", i+1, l)
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("stdout line %d is not a JSON object: %.300s", i+1, l)
		}
		if m["type"] == "flower" {
			flower = append(flower, m)
		} else {
			harness = append(harness, m)
		}
	}
	return harness, flower
}

func kinds(lines []map[string]any, key string) map[string]int {
	n := map[string]int{}
	for _, l := range lines {
		k, _ := l[key].(string)
		if p, _ := l["phase"].(string); p != "" {
			k += "/" + p
		}
		n[k]++
	}
	return n
}

// TestStreamJSON runs a job with --output stream-json on a harness that
// also prints garbage between its records: stdout holds only JSON objects,
// the harness's records and flower's events among them.
func TestStreamJSON(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if err := runFake(t, harnesstest.ModeGarbage, &stdout, &stderr, "--output", "stream-json"); err != nil {
		t.Fatalf("run: %v\nstderr:\n%s", err, stderr.String())
	}
	harness, flower := jsonLines(t, stdout.String())
	h := kinds(harness, "type")
	if h["system"] == 0 || h["assistant"] == 0 || h["result"] == 0 {
		t.Errorf("harness lines by type %v, want system, assistant and result", h)
	}
	f := kinds(flower, "kind")
	if f["generation"] != 1 || f["session"] == 0 || f["turn"] != 1 {
		t.Errorf("flower lines by kind %v, want a generation, a session and a turn", f)
	}
	if f["text"]+f["tool"]+f["raw"] != 0 {
		t.Errorf("flower lines repeat what the harness's lines carry: %v", f)
	}
	// The status side stays on stderr, and a buffer is no terminal.
	if !strings.Contains(stderr.String(), "flower: step \"main\" succeeded") {
		t.Errorf("no summary on stderr:\n%s", stderr.String())
	}
	if strings.Contains(stdout.String(), "flower: step") {
		t.Errorf("the summary went to stdout")
	}
}

func TestTextOutput(t *testing.T) {
	tests := []struct {
		name       string
		locale     string // LANG; the labels follow it unless --lang is given
		flags      []string
		wantStdout string
		en         bool
	}{
		{"text", "zh_CN.UTF-8", nil, "echo: say hello\n", false},
		{"quiet", "zh_TW", []string{"--quiet"}, "", false},
		{"en", "zh_CN.UTF-8", []string{"--lang", "en"}, "echo: say hello\n", true},
		{"C locale", "C.UTF-8", nil, "echo: say hello\n", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("LC_ALL", "")
			t.Setenv("LC_MESSAGES", "")
			t.Setenv("LANG", tt.locale)
			var stdout, stderr bytes.Buffer
			if err := runFake(t, harnesstest.ModeStream, &stdout, &stderr, tt.flags...); err != nil {
				t.Fatalf("run: %v\nstderr:\n%s", err, stderr.String())
			}
			if stdout.String() != tt.wantStdout {
				t.Errorf("stdout %q, want %q", stdout.String(), tt.wantStdout)
			}
			// Not a terminal: the gauge is a plain line, and there are no
			// control characters at all.
			if strings.ContainsAny(stderr.String(), "\r\x1b") {
				t.Errorf("control characters on a non-terminal stderr: %q", stderr.String())
			}
			// The generation's first measure, before the turn's cost.
			gauge := "第 1 代 · 上下文 5.0K/200K · 距换代 145.0K · $0.00\n"
			if tt.en {
				gauge = "gen 1 · context 5.0K/200K · 145.0K to handoff · $0.00\n"
			}
			if !strings.Contains(stderr.String(), gauge) {
				t.Errorf("stderr lacks the gauge line %q:\n%s", gauge, stderr.String())
			}
		})
	}
}

func TestOutputFlagErrors(t *testing.T) {
	for _, flags := range [][]string{
		{"--output", "json"},
		{"--output", "stream-json", "--quiet"},
		{"--lang", "ja"},
	} {
		var stdout, stderr bytes.Buffer
		err := runFake(t, harnesstest.ModeStream, &stdout, &stderr, flags...)
		var ue usageError
		if !errors.As(err, &ue) {
			t.Errorf("%v: err %v, want a usage error", flags, err)
		}
		if stdout.Len() > 0 {
			t.Errorf("%v: stdout %q", flags, stdout.String())
		}
	}
}

// TestGaugeOnTerminal gives flower a real terminal for stderr: the gauge is
// drawn in place with \r and clear-to-end-of-line, and taken down at the
// end; with TERM=dumb it falls back to plain lines.
func TestGaugeOnTerminal(t *testing.T) {
	for _, tt := range []struct {
		term     string
		controls bool
	}{{"xterm", true}, {"dumb", false}} {
		t.Run(tt.term, func(t *testing.T) {
			t.Setenv("TERM", tt.term)
			ptmx, tty, err := pty.Open()
			if err != nil {
				t.Fatal(err)
			}
			defer ptmx.Close()
			got := make(chan []byte)
			go func() {
				b, _ := io.ReadAll(ptmx) // ends with EIO once tty is closed
				got <- b
			}()
			var stdout bytes.Buffer
			err = runFake(t, harnesstest.ModeStream, &stdout, tty, "--lang", "en")
			tty.Close()
			out := string(<-got)
			if err != nil {
				t.Fatalf("run: %v\nterminal:\n%q", err, out)
			}
			gauge := "gen 1 · context 5.0K/200K · 145.0K to handoff · $0.0"
			if !strings.Contains(out, gauge) {
				t.Errorf("no gauge %q on the terminal:\n%q", gauge, out)
			}
			if has := strings.Contains(out, "\r"+gauge+"1\x1b[K"); has != tt.controls {
				t.Errorf("gauge drawn in place: %v, want %v:\n%q", has, tt.controls, out)
			}
			if tt.controls && !strings.HasSuffix(out, "\r\x1b[K") {
				t.Errorf("the gauge was left on screen at the end:\n%q", out)
			}
			if !tt.controls && strings.ContainsAny(out, "\x1b") {
				t.Errorf("control sequences with TERM=dumb:\n%q", out)
			}
		})
	}
}

// TestStreamJSONHandoff runs the demo's scripted model on the real harness
// with --output stream-json: two handoffs, every line JSON, and nothing of
// the writing turns between a writing event and its done event (DESIGN.md «Writing turn»).
func TestStreamJSONHandoff(t *testing.T) {
	harnessPath := realHarness(t)
	root := t.TempDir()
	ws, home := filepath.Join(root, "ws"), filepath.Join(root, "home")
	for _, d := range []string{ws, home} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	model := demo.NewModel(ws, 0)
	srv, err := scriptedapi.Start(model.Script)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	args := append([]string{"flower", "--harness", harnessPath, "-C", ws, "--window", "200000", "--model", demo.ModelName,
		"--step", demo.Step, "--turn-timeout", "1m", "--output", "stream-json", "--lang", "zh", demo.Task, "--"}, demo.HarnessArgs...)
	var stdout, stderr bytes.Buffer
	p := proc{stdin: strings.NewReader(""), stdout: &stdout, stderr: &stderr, env: demo.HarnessEnv(os.Environ(), home, srv.Env())}
	if err := runIn(ctx, args, p); err != nil {
		t.Fatalf("run: %v\nstderr:\n%s", err, stderr.String())
	}

	harness, flower := jsonLines(t, stdout.String())
	f := kinds(flower, "kind")
	if f["generation"] != demo.Generations || f["handoff/writing"] != demo.Generations-1 || f["handoff/done"] != demo.Generations-1 {
		t.Errorf("flower lines by kind %v, want %d generations and %d handoffs", f, demo.Generations, demo.Generations-1)
	}
	// A cut turn ends in the writing turn's result when its writing prompt
	// was queued (DESIGN.md «Queued cut»), and that is not streamed: the
	// last generation's turn has the one result line. No echo of a
	// prompt of flower's reaches the stream.
	if h := kinds(harness, "type"); h["assistant"] == 0 || h["result"] != 1 {
		t.Errorf("harness lines by type %v", h)
	}
	if strings.Contains(stdout.String(), `"isReplay"`) {
		t.Error("an echo of flower's prompt reached stdout")
	}
	writing := false
	for _, l := range strings.Split(stdout.String(), "\n") {
		switch {
		case strings.Contains(l, `"phase":"writing"`):
			writing = true
		case strings.Contains(l, `"phase":"done"`):
			writing = false
			var done struct {
				Handoff  map[string]string `json:"handoff"`
				Degraded *bool             `json:"degraded"`
				Path     string            `json:"path"`
			}
			json.Unmarshal([]byte(l), &done)
			if done.Handoff["doing"] == "" || done.Degraded == nil || done.Path == "" {
				t.Errorf("done line without its handoff, degraded flag or path: %.500s", l)
			}
		case writing && l != "":
			t.Errorf("a line of the writing turn reached stdout: %.300s", l)
		}
	}
	// The status lines are on stderr, as a person sees them.
	for _, want := range []string{"—— 写交接准备换代", "<- 交接写在 ", "<- 新会话接手"} {
		if strings.Count(stderr.String(), want) != demo.Generations-1 {
			t.Errorf("stderr has %q %d times, want %d:\n%s", want, strings.Count(stderr.String(), want), demo.Generations-1, stderr.String())
		}
	}
}
