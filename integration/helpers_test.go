package integration_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/flowerhq/flower/integration/itest"
	"github.com/flowerhq/flower/scriptedapi"
)

var harnessVersion = itest.HarnessVersion

// waitLimit bounds every wait for the harness. Startup alone takes 0.3 s on
// an idle machine but was seen to take 12 s with other tests fuzzing on both
// cores; a hung harness fails the test after this long instead of hanging it.
const waitLimit = 45 * time.Second

// harnessPath finds the real harness, or skips under -short.
func harnessPath(t *testing.T) string { return itest.HarnessPath(t) }

// line is one stdout line of the harness, parsed.
type line struct {
	gjson.Result
	at time.Duration // since start
}

func (l line) typ() string { return l.Get("type").String() + "/" + l.Get("subtype").String() }

// harness is the real binary in stream-json mode with its own HOME and cwd,
// pointed at a scripted server.
type harness struct {
	t       *testing.T
	srv     *scriptedapi.Server
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	cwd     string
	started time.Time

	lines  chan line     // every stdout line, in order; closed at EOF
	exited chan struct{} // closed once Wait returned
	err    error         // Wait's error, valid after exited

	mu     sync.Mutex
	seen   []line
	stderr bytes.Buffer
	nextID int
}

// startHarness starts the harness against srv with extra env (after the
// server's, so it wins) and extra arguments. The child gets a clean
// environment: nothing of the developer's ANTHROPIC_* settings leaks in.
func startHarness(t *testing.T, srv *scriptedapi.Server, env []string, args ...string) *harness {
	t.Helper()
	bin := harnessPath(t)
	home, cwd := t.TempDir(), t.TempDir()
	h := &harness{t: t, srv: srv, cwd: cwd, lines: make(chan line, 10000), exited: make(chan struct{})}
	argv := append([]string{"-p", "--input-format", "stream-json", "--output-format", "stream-json", "--verbose"}, args...)
	h.cmd = exec.Command(bin, argv...)
	h.cmd.Dir = cwd
	h.cmd.Env = append([]string{"HOME=" + home, "PATH=" + os.Getenv("PATH"), "TMPDIR=" + os.TempDir()}, srv.Env()...)
	h.cmd.Env = append(h.cmd.Env, env...)
	h.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	h.cmd.Stderr = lockedWriter{&h.mu, &h.stderr}
	var err error
	if h.stdin, err = h.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	stdout, err := h.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	h.started = time.Now()
	if err := h.cmd.Start(); err != nil {
		t.Fatalf("start harness: %v", err)
	}
	go h.read(stdout)
	t.Cleanup(h.stop)
	return h
}

// read drains stdout. Lines can be megabytes long (tool results), so it
// uses ReadBytes rather than a Scanner with its 64 KiB limit.
func (h *harness) read(stdout io.Reader) {
	br := bufio.NewReaderSize(stdout, 1<<16)
	for {
		b, err := br.ReadBytes('\n')
		if b = bytes.TrimSpace(b); len(b) > 0 {
			l := line{at: time.Since(h.started)}
			if gjson.ValidBytes(b) {
				l.Result = gjson.ParseBytes(b)
			} else {
				l.Result = gjson.Result{Type: gjson.String, Str: string(b), Raw: string(b)}
			}
			h.mu.Lock()
			h.seen = append(h.seen, l)
			h.mu.Unlock()
			h.lines <- l
		}
		if err != nil {
			break
		}
	}
	close(h.lines)
	h.err = h.cmd.Wait()
	close(h.exited)
}

// stop closes stdin, gives the harness a moment to exit, then kills its
// process group; on failure it logs what the harness said.
func (h *harness) stop() {
	_ = h.stdin.Close()
	select {
	case <-h.exited:
	case <-time.After(10 * time.Second):
		_ = syscall.Kill(-h.cmd.Process.Pid, syscall.SIGKILL)
		<-h.exited
	}
	// Tools the harness started (Bash) share its process group.
	_ = syscall.Kill(-h.cmd.Process.Pid, syscall.SIGKILL)
	if h.t.Failed() {
		h.mu.Lock()
		defer h.mu.Unlock()
		for _, l := range h.seen {
			h.t.Logf("[%5.2fs] %s", l.at.Seconds(), clip(l.Raw, 600))
		}
		h.t.Logf("stderr: %s", clip(h.stderr.String(), 2000))
		for _, r := range h.srv.Requests() {
			h.t.Logf("request %d kind=%s last user text %q", r.Seq, r.Kind, clip(r.LastUserText, 200))
		}
	}
}

// send writes one JSON line to stdin.
func (h *harness) send(v any) {
	h.t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		h.t.Fatal(err)
	}
	if _, err := h.stdin.Write(append(b, '\n')); err != nil {
		h.t.Fatalf("write to harness: %v", err)
	}
}

func (h *harness) sendUser(text string) {
	h.t.Helper()
	h.send(map[string]any{"type": "user", "message": map[string]any{"role": "user", "content": text}})
}

// control sends a control_request and returns its request_id.
func (h *harness) control(subtype string) string {
	h.t.Helper()
	h.mu.Lock()
	h.nextID++
	id := fmt.Sprintf("req-%d", h.nextID)
	h.mu.Unlock()
	h.send(map[string]any{"type": "control_request", "request_id": id, "request": map[string]any{"subtype": subtype}})
	return id
}

// until reads lines until match accepts one, and returns every line read,
// the match last. It fails the test on timeout or end of output.
func (h *harness) until(what string, match func(line) bool) []line {
	h.t.Helper()
	var got []line
	deadline := time.NewTimer(waitLimit)
	defer deadline.Stop()
	for {
		select {
		case l, ok := <-h.lines:
			if !ok {
				h.t.Fatalf("harness output ended while waiting for %s (exit: %v)", what, h.exitErr())
			}
			got = append(got, l)
			if match(l) {
				return got
			}
		case <-deadline.C:
			h.t.Fatalf("no %s within %s", what, waitLimit)
		}
	}
}

// turn sends one user line and reads through its result line.
func (h *harness) turn(text string) []line {
	h.t.Helper()
	h.sendUser(text)
	return h.until("result of turn "+fmt.Sprintf("%q", text), isType("result"))
}

// closeAndWait closes stdin and returns the remaining lines and the exit
// error once the harness has exited.
func (h *harness) closeAndWait() ([]line, error) {
	h.t.Helper()
	_ = h.stdin.Close()
	var rest []line
	deadline := time.After(waitLimit)
	for {
		select {
		case l, ok := <-h.lines:
			if !ok {
				<-h.exited
				return rest, h.err
			}
			rest = append(rest, l)
		case <-deadline:
			h.t.Fatalf("harness did not exit within %s of stdin closing", waitLimit)
		}
	}
}

func (h *harness) exitErr() error {
	select {
	case <-h.exited:
		return h.err
	default:
		return errors.New("still running")
	}
}

func (h *harness) running() bool {
	select {
	case <-h.exited:
		return false
	default:
		return true
	}
}

// isType matches lines by "type" or "type/subtype".
func isType(t string) func(line) bool {
	return func(l line) bool {
		if strings.Contains(t, "/") {
			return l.typ() == t
		}
		return l.Get("type").String() == t
	}
}

func filter(ls []line, match func(line) bool) []line {
	var out []line
	for _, l := range ls {
		if match(l) {
			out = append(out, l)
		}
	}
	return out
}

// texts gathers the text blocks of assistant or user lines.
func texts(ls []line) []string {
	var out []string
	for _, l := range ls {
		l.Get("message.content").ForEach(func(_, b gjson.Result) bool {
			if b.Get("type").String() == "text" {
				out = append(out, b.Get("text").String())
			}
			return true
		})
	}
	return out
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (w lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.w.Write(p)
}

// startServer starts a scripted API server closed at the end of the test.
func startServer(t *testing.T, script scriptedapi.Script) *scriptedapi.Server {
	t.Helper()
	srv, err := scriptedapi.Start(script)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return srv
}

func stringsOf(rs []gjson.Result) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.String())
	}
	return out
}

// gjsonKey escapes a map key (a model name has dots) for a gjson path.
func gjsonKey(k string) string {
	return strings.NewReplacer(".", `\.`, "*", `\*`, "?", `\?`).Replace(k)
}

// exitCode is the process's exit status, -1 if it did not exit normally.
func exitCode(err error) int { return itest.ExitCode(err) }
