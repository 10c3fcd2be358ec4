package harness

import (
	"context"
	"errors"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/flowerhq/flower/harness/harnesstest"
	"github.com/flowerhq/flower/transcript"
)

func TestMain(m *testing.M) {
	harnesstest.Main()
	os.Exit(m.Run())
}

func startFake(t *testing.T, mode string, extra ...string) *Process {
	t.Helper()
	p, err := Start(context.Background(), Config{
		Path:  os.Args[0],
		Env:   harnesstest.Env(mode, extra...),
		Grace: 300 * time.Millisecond,
	})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(p.Stop)
	return p
}

// next returns the next event or fails after a bounded wait.
func next(t *testing.T, p *Process) (transcript.Event, bool) {
	t.Helper()
	select {
	case ev, ok := <-p.Events():
		return ev, ok
	case <-time.After(10 * time.Second):
		t.Fatal("no event within 10s")
		return transcript.Event{}, false
	}
}

func untilResult(t *testing.T, p *Process) []transcript.Event {
	t.Helper()
	var evs []transcript.Event
	for {
		ev, ok := next(t, p)
		if !ok {
			t.Fatalf("events closed before a result; got %d events", len(evs))
		}
		evs = append(evs, ev)
		if ev.Kind == transcript.KindResult {
			return evs
		}
	}
}

func TestTurnsAndControl(t *testing.T) {
	p := startFake(t, harnesstest.ModeStream, harnesstest.EnvContext+"=150000,160000", "DISABLE_AUTO_COMPACT=1")
	resp, err := p.Control(context.Background(), "get_context_usage")
	if err != nil {
		<-p.Done()
		t.Fatalf("Control: %v (exit %v, stderr %q)", err, p.Err(), p.Stderr())
	}
	if resp.Get("isAutoCompactEnabled").Bool() {
		t.Errorf("the env reached the child: want isAutoCompactEnabled false, got %s", resp.Raw)
	}
	for turn, want := range []int{150000, 160000} {
		if err := p.SendUser("hello"); err != nil {
			t.Fatal(err)
		}
		var m transcript.Meter
		for _, ev := range untilResult(t, p) {
			m.Observe(&ev)
		}
		if m.Context != want || !strings.HasPrefix(m.SessionID, "fake-") || m.Results != 1 {
			t.Errorf("turn %d: meter %+v", turn, m)
		}
	}
	if err := p.CloseInput(); err != nil {
		t.Fatal(err)
	}
	if _, ok := next(t, p); ok {
		t.Errorf("events must close after stdin EOF ends the harness")
	}
	<-p.Done()
	if p.Err() != nil {
		t.Errorf("clean exit expected: %v", p.Err())
	}
}

func TestGarbageIsSkipped(t *testing.T) {
	p := startFake(t, harnesstest.ModeGarbage)
	if err := p.SendUser("x"); err != nil {
		t.Fatal(err)
	}
	evs := untilResult(t, p)
	if len(evs) != 3 { // init, assistant, result
		t.Errorf("got %d events, want 3", len(evs))
	}
	if p.Skipped() < 2 {
		t.Errorf("skipped %d garbage lines, want >= 2", p.Skipped())
	}
	p.Stop()
	if !strings.Contains(p.Stderr(), "stderr noise") {
		t.Errorf("stderr tail lost: %q", p.Stderr())
	}
}

func TestCrashMidLine(t *testing.T) {
	p := startFake(t, harnesstest.ModeCrashMidLine)
	_ = p.SendUser("x")
	var kinds []transcript.Kind
	for {
		ev, ok := next(t, p)
		if !ok {
			break
		}
		kinds = append(kinds, ev.Kind)
	}
	if len(kinds) != 1 || kinds[0] != transcript.KindInit {
		t.Errorf("events %v, want only init (the torn line skipped)", kinds)
	}
	<-p.Done()
	var ee interface{ ExitCode() int }
	if !errors.As(p.Err(), &ee) || ee.ExitCode() != 3 {
		t.Errorf("exit: %v", p.Err())
	}
	if err := p.SendUser("again"); !errors.Is(err, ErrExited) {
		t.Errorf("write after exit: %v, want ErrExited", err)
	}
	if _, err := p.Control(context.Background(), "get_context_usage"); !errors.Is(err, ErrExited) {
		t.Errorf("control after exit: %v, want ErrExited", err)
	}
}

func TestHugeLineIsRead(t *testing.T) {
	p := startFake(t, harnesstest.ModeHugeLine)
	_ = p.SendUser("x")
	evs := untilResult(t, p)
	var sawHuge bool
	for _, ev := range evs {
		if ev.Kind == transcript.KindUser && len(ev.Raw) > 50<<20 {
			sawHuge = true
		}
	}
	if !sawHuge {
		t.Errorf("the 50 MB line did not arrive as an event")
	}
}

func TestStopEscalatesOnIgnoredSIGINT(t *testing.T) {
	p := startFake(t, harnesstest.ModeIgnoreSIGINT)
	if ev, ok := next(t, p); !ok || ev.Kind != transcript.KindInit {
		t.Fatalf("first event %v %v", ev.Kind, ok)
	}
	pgid := p.PID()
	start := time.Now()
	p.Stop()
	p.Stop() // safe twice
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Stop took %v with a 300ms grace", d)
	}
	var ws interface{ Sys() any }
	if errors.As(p.Err(), &ws) {
		if st, ok := ws.Sys().(syscall.WaitStatus); !ok || st.Signal() != syscall.SIGKILL {
			t.Errorf("want death by SIGKILL, got %v", p.Err())
		}
	}
	if harnesstest.GroupAlive(pgid) {
		t.Errorf("process group %d still alive", pgid)
	}
}

func TestGrandchildDoesNotHoldUsUp(t *testing.T) {
	p := startFake(t, harnesstest.ModeGrandchild)
	_ = p.SendUser("x")
	untilResult(t, p)
	pgid := p.PID()
	start := time.Now()
	_ = p.CloseInput()
	select {
	case <-p.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("a grandchild holding stdout kept the process from finishing")
	}
	t.Logf("done %v after stdin close", time.Since(start))
	if harnesstest.GroupAlive(pgid) {
		t.Errorf("grandchild in group %d survived", pgid)
	}
}

func TestContextCancelStopsHarness(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	p, err := Start(ctx, Config{Path: os.Args[0], Env: harnesstest.Env(harnesstest.ModeHangTurn), Grace: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	_ = p.SendUser("x")
	next(t, p) // init: the turn is running
	cancel()
	select {
	case <-p.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("cancel did not end a harness that ignores SIGINT")
	}
}

func TestStartErrors(t *testing.T) {
	if _, err := Start(context.Background(), Config{}); err == nil {
		t.Error("no path: want error")
	}
	if _, err := Start(context.Background(), Config{Path: "/nonexistent/claude"}); err == nil || !strings.Contains(err.Error(), "/nonexistent/claude") {
		t.Errorf("missing binary: %v", err)
	}
}

func TestArgv(t *testing.T) {
	got := strings.Join(Config{Model: "m", Resume: "s1", Args: []string{"--allowedTools", "Bash"}}.Argv(), " ")
	want := "-p --input-format stream-json --output-format stream-json --verbose --model m --resume s1 --allowedTools Bash"
	if got != want {
		t.Errorf("Argv = %q\nwant    %q", got, want)
	}
}
