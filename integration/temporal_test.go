package integration_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"
	"google.golang.org/protobuf/encoding/protojson"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/converter"

	"github.com/flowerhq/flower/fleet"
	"github.com/flowerhq/flower/manifest"
	"github.com/flowerhq/flower/scriptedapi"
)

// temporalVersion is the Temporal CLI scripts/install-temporal.sh builds.
const temporalVersion = "1.5.1"

// temporalLimit bounds every wait on a step run through Temporal: the dev
// server, workers and harnesses all share a loaded 2-core machine.
const temporalLimit = 4 * time.Minute

// temporalCLI finds the pinned Temporal CLI: $FLOWER_TEMPORAL_CLI (make
// test sets it), else the cache the install script fills.
func temporalCLI(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("needs the Temporal dev server and the real harness: make test runs this, make unit does not")
	}
	if p := os.Getenv("FLOWER_TEMPORAL_CLI"); p != "" {
		return p
	}
	cache := os.Getenv("XDG_CACHE_HOME")
	if cache == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			t.Fatal(err)
		}
		cache = filepath.Join(home, ".cache")
	}
	p := filepath.Join(cache, "flower", "temporal", temporalVersion, "temporal")
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("no Temporal CLI at %s: run `make temporal` (make test does) or set FLOWER_TEMPORAL_CLI", p)
	}
	return p
}

// freePort finds a port on 127.0.0.1 that nothing listens on. It looks
// below the kernel's ephemeral range (32768 and up here), so that an
// outgoing connection made between this check and the server's bind cannot
// take the port: a plain ":0" port came back to us in use once on CI.
func freePort(t *testing.T) int {
	t.Helper()
	for range 100 {
		var b [2]byte
		_, _ = rand.Read(b[:])
		port := 20000 + (int(b[0])<<8|int(b[1]))%12000
		ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			continue
		}
		ln.Close()
		return port
	}
	t.Fatal("no free port on 127.0.0.1 in 20000-31999")
	return 0
}

// devServer is a Temporal dev server of the test's own: ports of its own
// on 127.0.0.1, its own SQLite file.
type devServer struct {
	addr string
	cl   client.Client
}

// startTemporal starts a dev server, and starts it again on fresh ports
// if another process took one of its ports between the check and the bind.
func startTemporal(t *testing.T) *devServer {
	t.Helper()
	for attempt := 1; ; attempt++ {
		s, out, err := tryStartTemporal(t)
		if err == nil {
			return s
		}
		if attempt < 3 && strings.Contains(out, "address already in use") {
			t.Logf("temporal dev server lost a port, starting it again: %v", err)
			continue
		}
		t.Fatalf("%v:\n%s", err, out)
	}
}

func tryStartTemporal(t *testing.T) (*devServer, string, error) {
	t.Helper()
	cli := temporalCLI(t)
	port, httpPort, metricsPort := freePort(t), freePort(t), freePort(t)
	cmd := exec.Command(cli, "server", "start-dev", "--headless", "--ip", "127.0.0.1",
		"--port", strconv.Itoa(port), "--http-port", strconv.Itoa(httpPort), "--metrics-port", strconv.Itoa(metricsPort),
		"--db-filename", filepath.Join(t.TempDir(), "temporal.db"), "--log-level", "warn")
	var out bytes.Buffer
	var mu sync.Mutex
	cmd.Stdout, cmd.Stderr = lockedWriter{&mu, &out}, lockedWriter{&mu, &out}
	cmd.SysProcAttr = diesWithTests()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-exited
	})
	output := func() string {
		mu.Lock()
		defer mu.Unlock()
		return out.String()
	}
	s := &devServer{addr: fmt.Sprintf("127.0.0.1:%d", port)}
	deadline := time.Now().Add(temporalLimit)
	for {
		cl, err := fleet.Dial(context.Background(), fleet.Conn{HostPort: s.addr})
		if err == nil {
			s.cl = cl
			t.Cleanup(cl.Close)
			return s, "", nil
		}
		select {
		case <-exited:
			return nil, output(), fmt.Errorf("temporal dev server exited")
		default:
		}
		if time.Now().After(deadline) {
			return nil, output(), fmt.Errorf("temporal dev server not up after %v: %v", temporalLimit, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// startWorker runs `flower worker` as its own process (so that SIGKILL of
// a worker is real), with a HOME of its own, as a machine of its own.
func (s *devServer) startWorker(t *testing.T, srv *scriptedapi.Server, queue, identity string, flags ...string) *flowerProc {
	t.Helper()
	// The tests' workspaces are temp dirs: the worker serves them all.
	args := append([]string{"worker", "--temporal", s.addr, "--task-queue", queue, "--identity", identity,
		"--harness", harnessPath(t), "--workspace-root", os.TempDir()}, flags...)
	args = append(args, "--", "--allowedTools", "Bash")
	return startFlower(t, harnessEnv(t, srv), args...)
}

func (s *devServer) status(t *testing.T, id string) *fleet.Status {
	t.Helper()
	st, err := fleet.Query(context.Background(), s.cl, id)
	if err != nil {
		t.Fatalf("query %s: %v", id, err)
	}
	return st
}

// history is the workflow's history: the generations' inputs and results
// as the server keeps them, and the events themselves.
type history struct {
	raw     *historypb.History
	inputs  []fleet.GenerationTask
	results []fleet.Outcome
	signals []fleet.HandoffEdit
	bytes   int
}

func (s *devServer) history(t *testing.T, id string) history {
	t.Helper()
	var h history
	h.raw = &historypb.History{}
	it := s.cl.GetWorkflowHistory(context.Background(), id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	dc := converter.GetDefaultDataConverter()
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			t.Fatalf("history of %s: %v", id, err)
		}
		h.raw.Events = append(h.raw.Events, ev)
		if a := ev.GetActivityTaskScheduledEventAttributes(); a != nil {
			var in fleet.GenerationTask
			if err := dc.FromPayloads(a.GetInput(), &in); err != nil {
				t.Fatal(err)
			}
			h.inputs = append(h.inputs, in)
		}
		if a := ev.GetActivityTaskCompletedEventAttributes(); a != nil {
			var out fleet.Outcome
			if err := dc.FromPayloads(a.GetResult(), &out); err != nil {
				t.Fatal(err)
			}
			h.results = append(h.results, out)
		}
		if a := ev.GetWorkflowExecutionSignaledEventAttributes(); a != nil {
			var e fleet.HandoffEdit
			if err := dc.FromPayloads(a.GetInput(), &e); err != nil {
				t.Fatal(err)
			}
			h.signals = append(h.signals, e)
		}
	}
	b, err := protojson.Marshal(h.raw)
	if err != nil {
		t.Fatal(err)
	}
	h.bytes = len(b)
	return h
}

// showOutput runs `flower show --temporal` and returns its output.
func (s *devServer) show(t *testing.T, id string) string {
	t.Helper()
	code, out := runFlowerCLI(t, nil, "show", "--temporal", s.addr, id)
	if code != 0 {
		t.Fatalf("flower show --temporal exited %d:\n%s", code, out)
	}
	return out
}

func randomID(prefix string) string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return prefix + "-" + hex.EncodeToString(b)
}

// gate holds a scripted reply until it is opened.
type gate struct {
	once sync.Once
	ch   chan struct{}
	hit  chan struct{} // closed when the held request arrived
	hits sync.Once
}

func newGate() *gate  { return &gate{ch: make(chan struct{}), hit: make(chan struct{})} }
func (g *gate) open() { g.once.Do(func() { close(g.ch) }) }
func (g *gate) hold() {
	g.hits.Do(func() { close(g.hit) })
	<-g.ch
}

func waitFor(t *testing.T, what string, c <-chan struct{}) {
	t.Helper()
	select {
	case <-c:
	case <-time.After(temporalLimit):
		t.Fatalf("timed out after %v waiting for %s", temporalLimit, what)
	}
}

// untilT polls cond for up to temporalLimit.
func untilT(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(temporalLimit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", temporalLimit, what)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// threeGenerations is a scripted job of three generations; the first
// working request of the generation whose prompt carries holdMark waits for
// the gate.
func threeGenerationJob(holdMark string, g *gate) (*job, scriptedapi.Script) {
	work := []scriptedapi.Reply{bash(100_000, "echo one >> work.txt"), bash(140_000, "echo two >> work.txt"), bash(155_000, "echo three >> work.txt")}
	j := &job{plans: [][]scriptedapi.Reply{work, work, {bash(30_000, "echo final >> work.txt"), done(40_000)}}, handoff: goodHandoff}
	return j, func(r *scriptedapi.Request) scriptedapi.Reply {
		if g != nil && r.Kind == scriptedapi.KindMain && strings.Contains(r.LastUserText, holdMark) {
			g.hold()
		}
		return j.script(r)
	}
}

// Case 1 and 5: a 3-generation step on two workers sharing one workspace,
// submitted with --wait: both handoffs are in the workflow's history, the
// notes file and its archive are written, flower show --temporal reports 3
// generations mid-run and at the end, and submit --wait prints a local
// run's status lines and exits 0.
func TestTemporalThreeGenerationsTwoWorkers(t *testing.T) {
	ts := startTemporal(t)
	g := newGate()
	_, script := threeGenerationJob("DOING-MARK-2", g) // generation 3 waits
	srv := startServer(t, script)
	queue, id := randomID("q"), randomID("step")
	ws := t.TempDir()
	var workers []*flowerProc
	for _, name := range []string{"worker-a", "worker-b"} {
		workers = append(workers, ts.startWorker(t, srv, queue, name, "--window", "200000"))
	}
	sub := startFlower(t, harnessEnv(t, srv), "submit", "--temporal", ts.addr, "--task-queue", queue, "-C", ws,
		"--id", id, "--wait", "--lang", "zh", "Build the shim. TASK-MARK")

	waitFor(t, "generation 3's first request", g.hit)
	mid := ts.show(t, id)
	if !strings.Contains(mid, "generations 3 (generation 3 running)") {
		t.Errorf("flower show --temporal mid-run does not report 3 generations:\n%s", mid)
	}
	g.open()
	if code := sub.wait(temporalLimit); code != 0 {
		t.Fatalf("flower submit --wait exited %d:\n%s", code, sub.output())
	}
	out := sub.output()
	if !strings.HasPrefix(out, id+"\n") {
		t.Errorf("submit did not print the workflow id first:\n%s", out)
	}
	for _, want := range []string{
		"# 上下文 140.0K/200K · 还有约 10K 到换代\n",
		"# 上下文 155.0K/200K —— 写交接准备换代\n",
		"  - 现在在做  Generation 1 was adding the shim header DOING-MARK-1.\n",
		"  - 现在在做  Generation 2 was adding the shim header DOING-MARK-2.\n",
		"<- 交接写在 " + filepath.Join(ws, ".flower", "notes", "交接-main.md") + "\n",
		"<- 新会话接手,上下文从 155.0K 重新开始\n",
		`flower: step "main" succeeded · 3 generation(s), 2 handoff(s)`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("submit --wait did not print %q:\n%s", want, out)
		}
	}
	if n := strings.Count(out, "—— 写交接准备换代"); n != 2 {
		t.Errorf("%d writing lines, want 2:\n%s", n, out)
	}

	end := ts.show(t, id)
	for _, want := range []string{"generations 3\n", "step main: succeeded"} {
		if !strings.Contains(end, want) {
			t.Errorf("flower show --temporal at the end lacks %q:\n%s", want, end)
		}
	}
	// An ended step is shown from its result: no worker needs to run.
	for _, w := range workers {
		_ = w.cmd.Process.Kill()
		w.wait(temporalLimit)
	}
	if after := ts.show(t, id); after != end {
		t.Errorf("flower show --temporal with no worker left differs:\n%s\nfrom:\n%s", after, end)
	}
	h := ts.history(t, id)
	if len(h.results) != 3 {
		t.Fatalf("%d generations completed in the history, want 3", len(h.results))
	}
	for i, mark := range []string{"DOING-MARK-1", "DOING-MARK-2"} {
		if r := h.results[i]; r.End != "handoff" || !strings.Contains(r.Handoff, mark) || r.Degraded {
			t.Errorf("generation %d's result in the history: end %q, degraded %v, handoff %q; want the handoff with %s", i+1, r.End, r.Degraded, r.Handoff, mark)
		}
		if in := h.inputs[i+1]; !strings.Contains(in.Handoff, mark) {
			t.Errorf("generation %d's input in the history does not carry %s: %q", i+2, mark, in.Handoff)
		}
	}
	notes, err := os.ReadFile(filepath.Join(ws, ".flower", "notes", "交接-main.md"))
	if err != nil || !strings.Contains(string(notes), "DOING-MARK-2") {
		t.Errorf("notes file: %v, %q", err, notes)
	}
	archive, _ := filepath.Glob(filepath.Join(ws, ".flower", "notes", "archive", "交接", "main-*.md"))
	if len(archive) != 1 {
		t.Errorf("archive holds %v, want generation 1's handoff", archive)
	} else if b, _ := os.ReadFile(archive[0]); !strings.Contains(string(b), "DOING-MARK-1") {
		t.Errorf("archive %s: %q", archive[0], b)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "work.txt")); strings.Count(string(b), "one") != 2 || !strings.Contains(string(b), "final") {
		t.Errorf("work.txt: %q", b)
	}
	if err := writeHistory(h, id); err != nil {
		t.Fatal(err)
	}
	t.Logf("history: %d events, %d bytes for 3 generations", len(h.raw.Events), h.bytes)
}

// writeHistory records the history for the replay test when
// FLOWER_RECORD_HISTORY names a file.
func writeHistory(h history, id string) error {
	path := os.Getenv("FLOWER_RECORD_HISTORY")
	if path == "" {
		return nil
	}
	b, err := protojson.MarshalOptions{Multiline: true, Indent: "  "}.Marshal(h.raw)
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// Case 2: SIGKILL of the worker running generation 2. The step finishes on
// the other worker; the successor starts from generation 1's handoff; the
// loss is recorded; no harness of the dead worker survives.
func TestTemporalLostWorker(t *testing.T) {
	ts := startTemporal(t)
	g := newGate()
	_, script := threeGenerationJob("DOING-MARK-1", g) // generation 2 waits
	srv := startServer(t, script)
	queue, id := randomID("q"), randomID("step")
	ws := t.TempDir()
	workers := map[string]*flowerProc{}
	for _, name := range []string{"worker-a", "worker-b"} {
		workers[name] = ts.startWorker(t, srv, queue, name, "--window", "200000")
	}
	sub := startFlower(t, harnessEnv(t, srv), "submit", "--temporal", ts.addr, "--task-queue", queue, "-C", ws,
		"--id", id, "--heartbeat-timeout", "10s", "--wait", "Build the shim. TASK-MARK")
	waitFor(t, "generation 2's first request", g.hit)
	// One generation runs at a time: the worker with a harness is the one
	// running it (generation numbers can move if a loaded machine makes a
	// heartbeat late, so the test does not go by them).
	var running string
	var pids []int
	untilT(t, "one worker to run generation 2's harness", func() bool {
		running, pids = "", nil
		for name, w := range workers {
			if d := w.descendants(); hasProcess(d, "claude") {
				if running != "" {
					return false // a generation given up on is still stopping
				}
				running, pids = name, d
			}
		}
		return running != ""
	})
	victim := workers[running]
	before := len(srv.Requests())
	if err := victim.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	allGone(t, pids, 30*time.Second)
	g.open()
	if code := sub.wait(temporalLimit); code != 0 {
		t.Fatalf("flower submit --wait exited %d:\n%s", code, sub.output())
	}
	// The first request of the restarted generation carries generation 1's handoff.
	var first *scriptedapi.Request
	for _, r := range srv.Requests()[before:] {
		if r.Kind == scriptedapi.KindMain && r.NumMessages <= 2 {
			first = &r
			break
		}
	}
	if first == nil || !strings.Contains(first.LastUserText, "DOING-MARK-1") || !strings.Contains(first.LastUserText, "lost with its machine") {
		t.Fatalf("the generation restarted after the kill did not start from generation 1's handoff with a note: %+v", first)
	}
	st := ts.status(t, id)
	if st.Record.Status != "succeeded" || !hasErrorText(&st.Record, "was lost with its machine") {
		t.Errorf("status %s, errors %q", st.Record.Status, st.Record.Errors)
	}
	h := ts.history(t, id)
	var handoffs []string
	for _, r := range h.results {
		if r.Handoff != "" {
			handoffs = append(handoffs, r.Handoff)
		}
	}
	if len(handoffs) < 1 || !strings.Contains(handoffs[0], "DOING-MARK-1") {
		t.Errorf("handoffs in the history: %q", handoffs)
	}
	if b, err := os.ReadFile(filepath.Join(ws, ".flower", "notes", "交接-main.md")); err != nil || !strings.Contains(string(b), "DOING-MARK-1") {
		t.Errorf("generation 1's handoff file after the loss: %v %q", err, b)
	}
	survivor := "worker-a"
	if running == survivor {
		survivor = "worker-b"
	}
	if out := workers[survivor].output(); !strings.Contains(out, "was lost with its machine") {
		t.Errorf("the surviving worker %s did not say it took over a lost generation:\n%s", survivor, out)
	}
}

// Case 3: flower handoff set while generation 1 runs: generation 2's first
// request carries the person's document, and the history holds both.
func TestTemporalHandoffSet(t *testing.T) {
	ts := startTemporal(t)
	g := newGate()
	j, script := threeGenerationJob("TASK-MARK", g) // generation 1 waits
	j.plans = j.plans[1:]
	srv := startServer(t, script)
	queue, id := randomID("q"), randomID("step")
	ws := t.TempDir()
	ts.startWorker(t, srv, queue, "worker-a", "--window", "200000")
	sub := startFlower(t, harnessEnv(t, srv), "submit", "--temporal", ts.addr, "--task-queue", queue, "-C", ws,
		"--id", id, "--wait", "Build the shim. TASK-MARK")
	waitFor(t, "generation 1's first request", g.hit)
	edit := filepath.Join(t.TempDir(), "edit.md")
	if err := os.WriteFile(edit, []byte("## 现在在做 (doing)\nA person says: EDIT-MARK.\n\n## 下一步 (next)\nFollow EDIT-NEXT.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out := runFlowerCLI(t, nil, "handoff", "set", "--temporal", ts.addr, id, edit); code != 0 {
		t.Fatalf("flower handoff set exited %d:\n%s", code, out)
	}
	untilT(t, "the edit to reach the workflow", func() bool { return ts.status(t, id).Pending != "" })
	g.open()
	if code := sub.wait(temporalLimit); code != 0 {
		t.Fatalf("flower submit --wait exited %d:\n%s", code, sub.output())
	}
	var second *scriptedapi.Request
	for _, r := range srv.Requests() {
		if r.Kind == scriptedapi.KindMain && r.NumMessages <= 2 && strings.Contains(r.LastUserText, "You are taking over") {
			second = &r
			break
		}
	}
	if second == nil || !strings.Contains(second.LastUserText, "EDIT-MARK") || strings.Contains(second.LastUserText, "DOING-MARK-1") {
		t.Fatalf("generation 2's first request does not carry the edit (alone): %+v", second)
	}
	h := ts.history(t, id)
	if len(h.signals) != 1 || !strings.Contains(h.signals[0].Document, "EDIT-MARK") {
		t.Errorf("signals in the history: %+v", h.signals)
	}
	if len(h.results) < 2 || !strings.Contains(h.results[0].Handoff, "DOING-MARK-1") || !h.inputs[1].Replaced || !strings.Contains(h.inputs[1].Handoff, "EDIT-MARK") {
		t.Errorf("the history does not hold both versions: results %d, input 2 %+v", len(h.results), h.inputs[1:])
	}
	archive, _ := filepath.Glob(filepath.Join(ws, ".flower", "notes", "archive", "交接", "main-*.md"))
	if len(archive) < 1 {
		t.Errorf("generation 1's handoff was not archived when the edit replaced it: %v", archive)
	}
}

// Case 4: the generation limit and a futile window end the workflow with
// the messages of a local run, and submit --wait exits 3 as a local run
// does.
func TestTemporalGenerationLimitAndFutile(t *testing.T) {
	ts := startTemporal(t)
	_, script := threeGenerationJob("", nil)
	srv := startServer(t, script)
	for _, tc := range []struct {
		name  string
		flags []string
	}{
		{"limit", []string{"--window", "200000", "--max-generations", "1"}},
		{"futile", []string{"--window", "30000", "--headroom", "20000"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			queue := randomID("q")
			ts.startWorker(t, srv, queue, "worker-"+tc.name, tc.flags...)
			ws := t.TempDir()
			code, remote := runFlowerCLI(t, harnessEnv(t, srv), "submit", "--temporal", ts.addr, "--task-queue", queue, "-C", ws,
				"--id", randomID(tc.name), "--wait", "Build the shim. TASK-MARK")
			if code != 3 {
				t.Fatalf("submit --wait exited %d, want 3:\n%s", code, remote)
			}
			args := append([]string{"-C", t.TempDir(), "--harness", harnessPath(t), "-q"}, tc.flags...)
			args = append(args, "Build the shim. TASK-MARK", "--", "--allowedTools", "Bash")
			lcode, local := runFlowerCLI(t, harnessEnv(t, srv), args...)
			if lcode != 3 {
				t.Fatalf("local run exited %d, want 3:\n%s", lcode, local)
			}
			want := limitMessage(t, local)
			if got := limitMessage(t, remote); got != want {
				t.Errorf("the remote step ends with\n%s\nthe local run with\n%s", got, want)
			}
		})
	}
}

// limitMessage is the generation limit's message in flower's output, its
// measured start-up floor (it varies by a few tokens) blanked.
func limitMessage(t *testing.T, out string) string {
	t.Helper()
	i := strings.Index(out, "handoff generation limit reached")
	if i < 0 {
		t.Fatalf("no generation limit message in:\n%s", out)
	}
	msg, _, _ := strings.Cut(out[i:], "\n")
	if j := strings.Index(msg, "a fresh session starts at "); j >= 0 {
		k := strings.Index(msg[j:], ",")
		msg = msg[:j] + "a fresh session starts at N" + msg[j+k:]
	}
	return msg
}

// Case 5: a server that cannot be reached gives one clear line and exit 2.
func TestTemporalUnreachable(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs flower")
	}
	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t)) // nothing listens there any more
	for _, args := range [][]string{
		{"submit", "--temporal", addr, "--task-queue", "q", "-C", t.TempDir(), "--wait", "a task"},
		{"show", "--temporal", addr, "some-id"},
		{"worker", "--temporal", addr, "--task-queue", "q", "--harness", "/bin/true", "--workspace-root", "/"},
	} {
		code, out := runFlowerCLI(t, os.Environ(), args...)
		if code != 2 {
			t.Errorf("flower %s exited %d, want 2:\n%s", args[0], code, out)
		}
		if lines := strings.Split(strings.TrimRight(out, "\n"), "\n"); len(lines) != 1 || !strings.Contains(out, "temporal server unreachable at "+addr) {
			t.Errorf("flower %s printed, want one line naming the server:\n%s", args[0], out)
		}
	}
}

// TestTemporalBudget: a Temporal step's budget counts every generation
// (DESIGN.md «Unattended: limits, budget, deadline»). The first generation
// hands off at the threshold under it; the second passes it at its first
// response, is cut there, writes its whole handoff, and the step ends
// budget_reached: submit --wait exits 4, as a local run does.
func TestTemporalBudget(t *testing.T) {
	ts := startTemporal(t)
	_, script := threeGenerationJob("", nil)
	srv := startServer(t, script)
	queue, id := randomID("q"), randomID("budget")
	// At Sonnet's list price (the harness's and flower's agree): $0.170
	// for generation 1 and its handoff, $0.031 more at generation 2's
	// first response.
	ts.startWorker(t, srv, queue, "worker-budget", "--window", "200000", "--model", "claude-sonnet-4-5")
	ws := t.TempDir()
	code, out := runFlowerCLI(t, harnessEnv(t, srv), "submit", "--temporal", ts.addr, "--task-queue", queue, "-C", ws,
		"--id", id, "--wait", "--max-budget-usd", "0.19", "Build the shim. TASK-MARK")
	if code != 4 {
		t.Fatalf("submit --wait exited %d, want 4:\n%s", code, out)
	}
	st := ts.status(t, id)
	if st.Record.Status != manifest.StatusBudget || len(st.Record.Generations) != 2 {
		t.Fatalf("status %s, %d generations; want %s, 2", st.Record.Status, len(st.Record.Generations), manifest.StatusBudget)
	}
	g1, g2 := st.Record.Generations[0].Handoff, st.Record.Generations[1].Handoff
	if g1 == nil || g1.Reason != manifest.ReasonThreshold || g2 == nil || g2.Reason != manifest.ReasonBudget || g2.Degraded {
		t.Errorf("handoffs %+v, %+v; want one at the threshold, then a whole one for the budget", g1, g2)
	}
	if st.Record.CostUSD < 0.19 {
		t.Errorf("the step cost $%v, under its budget of $0.19", st.Record.CostUSD)
	}
	if show := ts.show(t, id); !strings.Contains(show, "of $0.1900 spent") {
		t.Errorf("flower show --temporal does not show spent against the budget:\n%s", show)
	}
}
