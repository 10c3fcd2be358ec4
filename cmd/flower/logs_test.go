package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flowerhq/flower/registry"
	"github.com/flowerhq/flower/workbench"
)

// sampleLog writes records to dir's log the way a run does, through slog's
// JSON handler, with times from showT0 on, and returns the file's bytes.
func sampleLog(t *testing.T, dir string) []byte {
	t.Helper()
	var buf bytes.Buffer
	tick := 0
	h := slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug,
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if len(groups) == 0 && a.Key == slog.TimeKey {
				tick++
				return slog.Time(slog.TimeKey, showT0.Add(time.Duration(tick)*17*time.Second))
			}
			return a
		}})
	log := slog.New(h)
	step := log.With("step", "干活")
	g1 := step.With("gen", 1, "session", "0b1c2d3e-aaaa-4bbb-8ccc-000000000001", "phase", "working")
	log.Warn("compact policy", "notice", "auto-compact is off while flower hands off")
	g1.Info("harness started", "pid", 4242, "resume", "")
	g1.Debug("turn cost", "estimate_usd", 0.06917999999999999, "booked_usd", 1.5)
	g1.Info("session probed", "max_tokens", 200000, "floor", 21400, "auto_compact", false)
	g1.Info("handoff due: interrupting at the message boundary", "context", 155000, "at", 150000)
	g1.Error("write handoff", "err", `open /ws/.flower/notes/交接-干活.md: permission denied`)
	step.With("gen", 2, "phase", "writing").Info("handoff written", "reason", "threshold",
		"degraded", true, "why", "the handoff is missing next\nand scene", slog.Group("usage", "in", 10, "out", 2))
	step.With("gen", 2).Info("handoff document as written", "of_gen", 1, "path", "/ws/.flower/notes/交接-干活.md",
		"document", "# 交接\n\n## 现在在做\n- 把解析器移到 Go\n\n## 下一步\n- 跑测试\n", "cost_usd", 0.30000000000000004)
	data := buf.Bytes()
	// What a crash or another writer can leave in a log.
	data = append(data, "not json at all\n[1,2,3]\n"...)
	if err := os.WriteFile(filepath.Join(dir, workbench.LogFileName), data, 0o644); err != nil {
		t.Fatal(err)
	}
	return data
}

func TestLogsGolden(t *testing.T) {
	dir := t.TempDir()
	sampleLog(t, dir)
	out, _, err := runInProcess(context.Background(), "logs", dir)
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "logs.golden", []byte(out))
}

func TestLogsJSONIsTheFileAsWritten(t *testing.T) {
	dir := t.TempDir()
	want := sampleLog(t, dir)
	out, _, err := runInProcess(context.Background(), "logs", "--json", dir)
	if err != nil {
		t.Fatal(err)
	}
	if out != string(want) {
		t.Errorf("logs --json =\n%s\nwant the file:\n%s", out, want)
	}
}

// logs shows INFO and above unless --level says otherwise, and --since
// leaves out what came before it; with --json too, once given.
func TestLogsLevelAndSince(t *testing.T) {
	dir := t.TempDir()
	sampleLog(t, dir) // records 17 s apart from showT0, the third at DEBUG
	count := func(args ...string) (int, string) {
		t.Helper()
		out, _, err := runInProcess(context.Background(), append(append([]string{"logs"}, args...), dir)...)
		if err != nil {
			t.Fatalf("logs %q: %v", args, err)
		}
		return strings.Count(out, "\n"), out
	}
	if _, out := count(); strings.Contains(out, "turn cost") || !strings.Contains(out, "harness started") {
		t.Errorf("the default level shows DEBUG or hides INFO:\n%s", out)
	}
	if _, out := count("--level", "debug"); !strings.Contains(out, "estimate_usd=0.0692 booked_usd=1.5000") {
		t.Errorf("--level debug: the turn cost's dollars are not rounded:\n%s", out)
	}
	if _, out := count("--level", "ERROR"); strings.Contains(out, "INFO") || !strings.Contains(out, "write handoff") {
		t.Errorf("--level ERROR:\n%s", out)
	}
	// The sixth record (ERROR) is at showT0+102s; --since it keeps it and what follows.
	at := showT0.Add(102 * time.Second)
	for _, since := range []string{at.Format(time.RFC3339), at.In(time.Local).Format("2006-01-02 15:04:05")} {
		if _, out := count("--since", since); strings.Contains(out, "harness started") || !strings.HasPrefix(out, at.Format("15:04:05")+" ERROR") {
			t.Errorf("--since %s:\n%s", since, out)
		}
	}
	if n, out := count("--since", "1m"); n != 2 { // the records are from 2026: only the two lines that are not records
		t.Errorf("--since 1m printed %d lines, want the 2 that are not records:\n%s", n, out)
	}
	if n, _ := count("--json", "--level", "warn"); n != 2+2 {
		t.Errorf("--json --level warn: %d lines, want the WARN and ERROR records and the 2 that are not records", n)
	}
	for _, args := range [][]string{{"--level", "loud"}, {"--since", "yesterday"}, {"--since", "-5m"}} {
		_, _, err := runInProcess(context.Background(), append(append([]string{"logs"}, args...), dir)...)
		if exitCode(err) != exitUsage {
			t.Errorf("logs %q: %v, want a usage error", args, err)
		}
	}
}

func TestLogsWithoutLog(t *testing.T) {
	dir := t.TempDir()
	_, _, err := runInProcess(context.Background(), "logs", dir)
	if err == nil {
		t.Fatal("logs succeeded on a run dir without a log")
	}
	if msg := err.Error(); !strings.Contains(msg, workbench.LogFileName) || strings.Contains(msg, "\n") {
		t.Errorf("error %q: want one line naming %s", msg, workbench.LogFileName)
	}
	if got := exitCode(err); got != exitFailed {
		t.Errorf("exit code %d, want %d", got, exitFailed)
	}
}

// syncBuffer is a bytes.Buffer the command writes while the test reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// waitOutput fails the test unless out ends with want within d.
func waitOutput(t *testing.T, out *syncBuffer, want string, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !strings.HasSuffix(out.String(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("after %v the output ends %q, want it to end with %q", d, tail(out.String(), 300), want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

func TestLogsFollow(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, workbench.LogFileName)
	writeFileT(t, path, `{"level":"INFO","msg":"before","gen":1}`+"\n")
	// A run goes on in dir as long as the test: following stops at Ctrl-C.
	listRun(t, dir)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out syncBuffer
	done := make(chan error, 1)
	go func() { done <- run(ctx, []string{"flower", "logs", "-f", dir}, strings.NewReader(""), &out, &out) }()
	waitOutput(t, &out, "INFO  gen 1  before\n", 5*time.Second)

	appendLine := func(s string) {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, err := f.WriteString(s); err != nil {
			t.Fatal(err)
		}
	}
	// The bound for a new line to show.
	const within = time.Second

	appendLine(`{"level":"INFO","msg":"appended","gen":1}` + "\n")
	waitOutput(t, &out, "INFO  gen 1  appended\n", within)

	appendLine(`{"level":"WARN","msg":"half`)
	time.Sleep(100 * time.Millisecond)
	appendLine(` a line","gen":2}` + "\n")
	waitOutput(t, &out, "INFO  gen 1  appended\nWARN  gen 2  half a line\n", within)

	if err := os.Truncate(path, 0); err != nil {
		t.Fatal(err)
	}
	appendLine(`{"level":"INFO","msg":"after truncation"}` + "\n")
	waitOutput(t, &out, "INFO   after truncation\n", within)

	tmp := path + ".tmp"
	writeFileT(t, tmp, `{"level":"INFO","msg":"a new file"}`+"\n")
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
	waitOutput(t, &out, "INFO   after truncation\nINFO   a new file\n", within)

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("logs -f ended with %v, want nil after the interrupt", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("logs -f did not stop after the interrupt")
	}
	if n := strings.Count(out.String(), "before"); n != 1 {
		t.Errorf("the first line was printed %d times, want once:\n%s", n, out.String())
	}
}

// listRun lists this process in a registry of the test's own as a flower
// running in dir, and returns the handle that ends it.
func listRun(t *testing.T, dir string) *registry.Handle {
	t.Helper()
	reg := filepath.Join(t.TempDir(), "ps")
	t.Setenv(registry.EnvDir, reg)
	h, err := registry.Register(reg, registry.Entry{Front: "headless", Workspace: dir, Step: "main", RunDir: dir}, time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return h
}

// logs -f follows a run while it runs, and stops by itself, with what was
// written to the end, once no flower runs in the run dir; on a run that
// has ended, it prints the log and stops, as logs does.
func TestLogsFollowEndsWithTheRun(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, workbench.LogFileName)
	writeFileT(t, path, `{"level":"INFO","msg":"before"}`+"\n")
	h := listRun(t, dir)
	var out, errOut syncBuffer
	done := make(chan error, 1)
	go func() {
		done <- run(context.Background(), []string{"flower", "logs", "-f", dir}, strings.NewReader(""), &out, &errOut)
	}()
	waitOutput(t, &out, "INFO   before\n", 5*time.Second)
	// Still running: following goes on past two looks.
	time.Sleep(3 * runCheckInterval)
	select {
	case err := <-done:
		t.Fatalf("logs -f stopped while the run was listed (%v)\n%s%s", err, out.String(), errOut.String())
	default:
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(`{"level":"INFO","msg":"the last line"}` + "\n"); err != nil {
		t.Fatal(err)
	}
	f.Close()
	h.Close()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("logs -f ended with %v, want nil", err)
		}
	case <-time.After(10 * runCheckInterval):
		t.Fatalf("logs -f went on after the run ended\n%s", out.String())
	}
	if !strings.Contains(out.String(), "INFO   the last line\n") {
		t.Errorf("the line written before the end was not printed:\n%s", out.String())
	}
	if want := "no flower runs in " + dir + " any more"; !strings.Contains(errOut.String(), want) {
		t.Errorf("stderr %q, want %q", errOut.String(), want)
	}

	// The run has ended: the whole log, and an end.
	var again syncBuffer
	if err := run(context.Background(), []string{"flower", "logs", "-f", dir}, strings.NewReader(""), &again, io.Discard); err != nil {
		t.Fatal(err)
	}
	if got := again.String(); !strings.Contains(got, "before") || !strings.Contains(got, "the last line") {
		t.Errorf("logs -f on an ended run printed %q", got)
	}
}
