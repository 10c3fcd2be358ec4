package harness

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/flowerhq/flower/child"
	"github.com/flowerhq/flower/harness/harnesstest"
	"github.com/flowerhq/flower/transcript"
)

// The main goroutine keeps the main thread, which Go never ends: every
// other goroutine runs on threads that can end (TestHarnessOutlivesStartersThread).
func init() { runtime.LockOSThread() }

func TestMain(m *testing.M) {
	harnesstest.Main()
	if os.Getenv(envParent) != "" {
		os.Exit(parentMain())
	}
	os.Exit(m.Run())
}

// envParent makes the re-executed test binary a program that starts a fake
// harness (with a grandchild), prints the harness's pid, and waits to be
// killed: the stand-in for flower in TestHarnessDiesWithParent.
const envParent = "FLOWER_TEST_HARNESS_PARENT"

func parentMain() int {
	p, err := Start(context.Background(), Config{Path: os.Args[0],
		Env: harnesstest.Env(harnesstest.ModeStream, harnesstest.EnvGrandchild+"="+os.Getenv(envParent), envParent+"=")})
	if err != nil {
		fmt.Println("error", err)
		return 1
	}
	if err := p.SendUser("hello"); err != nil {
		fmt.Println("error", err)
		return 1
	}
	for ev := range p.Events() {
		if ev.Kind == transcript.KindResult {
			break
		}
	}
	fmt.Println(p.PID())
	select {}
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
	case <-time.After(60 * time.Second):
		t.Fatal("no event within 60s (a hang guard: a 50 MB line under -race on a loaded machine takes over 10 s)")
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
		var context, results int
		var session string
		for _, ev := range untilResult(t, p) {
			if ev.SessionID != "" {
				session = ev.SessionID
			}
			switch {
			case ev.Kind == transcript.KindAssistant && ev.MainThread() && !ev.Synthetic():
				context = ev.Usage.Context()
			case ev.Kind == transcript.KindResult:
				results++
			}
		}
		if context != want || !strings.HasPrefix(session, "fake-") || results != 1 {
			t.Errorf("turn %d: context %d, session %q, %d results", turn, context, session, results)
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
	if !groupGoneWithin(pgid, time.Second) {
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
	want := "-p --input-format stream-json --output-format stream-json --verbose --replay-user-messages --model m --resume s1 --allowedTools Bash"
	if got != want {
		t.Errorf("Argv = %q\nwant    %q", got, want)
	}
}

// The program that started the harness dies by SIGKILL, with no chance to
// clean up: the harness and the tool it left running (a grandchild that
// ignores SIGINT, in the harness's group or, as the real harness runs its
// Bash commands, in a session of its own, or there with its environment
// cleared) must be gone within a few seconds. Pdeathsig reaches only the
// harness; the guard takes the rest (package child).
func TestHarnessDiesWithParent(t *testing.T) {
	for _, grandchild := range []string{"1", "session", "escape"} {
		t.Run("grandchild="+grandchild, func(t *testing.T) {
			parent := exec.Command(os.Args[0], "-test.run=^$")
			parent.Env = append(os.Environ(), envParent+"="+grandchild)
			parent.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			out, err := parent.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := parent.Start(); err != nil {
				t.Fatal(err)
			}
			defer parent.Process.Kill()
			line, err := bufio.NewReader(out).ReadString('\n')
			if _, perr := strconv.Atoi(strings.TrimSpace(line)); err != nil || perr != nil {
				t.Fatalf("parent said %q (%v)", line, err)
			}
			left := harnesstest.Descendants(parent.Process.Pid)
			if len(left) < 3 { // harness, guard, grandchild
				t.Fatalf("the parent has %d descendants before the kill, want the harness, its guard and its grandchild", len(left))
			}
			_ = parent.Process.Kill()
			_ = parent.Wait()
			killed := time.Now()
			for len(harnesstest.Alive(left)) > 0 {
				if time.Since(killed) > 5*time.Second {
					t.Fatalf("%v outlived their parent by 5s", harnesstest.Alive(left))
				}
				time.Sleep(20 * time.Millisecond)
			}
			t.Logf("%d descendants gone %v after the parent's SIGKILL", len(left), time.Since(killed))
		})
	}
}

// KillAll reaches every live group at once, whatever the harness ignores.
func TestKillAll(t *testing.T) {
	ps := []*Process{startFake(t, harnesstest.ModeIgnoreSIGINT), startFake(t, harnesstest.ModeHangTurn, harnesstest.EnvGrandchild+"=session")}
	_ = ps[1].SendUser("x")
	for _, p := range ps {
		next(t, p) // init: running
	}
	left := harnesstest.Descendants(ps[1].PID())
	if len(left) != 1 {
		t.Fatalf("the hanging fake has descendants %v, want its grandchild", left)
	}
	if n := child.KillAll(); n != 2 {
		t.Errorf("KillAll signalled %d groups, want 2", n)
	}
	for _, p := range ps {
		select {
		case <-p.Done():
		case <-time.After(2 * time.Second):
			t.Fatalf("harness %d still running 2s after KillAll", p.PID())
		}
		if !groupGoneWithin(p.PID(), time.Second) {
			t.Errorf("group %d alive after KillAll: %v", p.PID(), harnesstest.GroupMembers(p.PID()))
		}
	}
	if !goneWithin(left, time.Second) {
		t.Errorf("the grandchild in its own session survived KillAll")
	}
	if n := child.KillAll(); n != 0 {
		t.Errorf("KillAll found %d live groups after all were done", n)
	}
}

// A tool left running goes when the harness exits on its own: in its group
// or in a session of its own.
func TestToolsKilledWhenHarnessExits(t *testing.T) {
	for _, grandchild := range []string{"1", "session", "escape"} {
		t.Run("grandchild="+grandchild, func(t *testing.T) {
			p := startFake(t, harnesstest.ModeCrashMidLine, harnesstest.EnvGrandchild+"="+grandchild)
			pgid := p.PID()
			var left []int
			for deadline := time.Now().Add(5 * time.Second); len(left) == 0 && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
				left = harnesstest.Descendants(pgid) // the grandchild, once started
			}
			_ = p.SendUser("x")
			select {
			case <-p.Done():
			case <-time.After(5 * time.Second):
				t.Fatal("the crashing harness was not done")
			}
			// SIGKILL is sent before Done; dying takes the kernel a moment.
			if len(left) == 0 || !goneWithin(left, time.Second) || !groupGoneWithin(pgid, time.Second) {
				t.Errorf("left behind: %v of %v, group %v", harnesstest.Alive(left), left, harnesstest.GroupMembers(pgid))
			}
		})
	}
}

func goneWithin(pids []int, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for len(harnesstest.Alive(pids)) > 0 {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
	return true
}

func groupGoneWithin(pgid int, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for harnesstest.GroupAlive(pgid) {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
	return true
}

// After the harness exits, writes say why: the exit status and its last
// stderr line. A refused --resume is recognised by that text.
func TestExitedErrorSaysWhy(t *testing.T) {
	p := startFake(t, harnesstest.ModeExitEarly)
	<-p.Done()
	err := p.SendUser("x")
	if !errors.Is(err, ErrExited) || !strings.Contains(err.Error(), "exit status 1") || !strings.Contains(err.Error(), "refusing to start") {
		t.Errorf("SendUser after exit: %v", err)
	}
	if ResumeRefused(err.Error()) {
		t.Errorf("an exit before start is not a refused resume: %v", err)
	}

	dir := t.TempDir()
	p, err = Start(context.Background(), Config{Path: os.Args[0], Resume: "gone-session", Grace: 300 * time.Millisecond,
		Env: harnesstest.Env(harnesstest.ModeStream, harnesstest.EnvSessions+"="+dir)})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	_, err = p.Control(context.Background(), "get_context_usage")
	if !errors.Is(err, ErrExited) || !ResumeRefused(err.Error()) {
		t.Errorf("control on a refused resume: %v", err)
	}
}

// Pdeathsig fires when the thread that forked the harness exits. A harness
// started from a goroutine locked to its thread, which then returns (Go
// ends that thread), must live on: Start forks from a thread that never
// exits.
func TestHarnessOutlivesStartersThread(t *testing.T) {
	started := make(chan *Process, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with this goroutine
		p, err := Start(context.Background(), Config{Path: os.Args[0], Env: harnesstest.Env(harnesstest.ModeStream), Grace: 300 * time.Millisecond})
		if err != nil {
			started <- nil
			return
		}
		started <- p
	}()
	p := <-started
	if p == nil {
		t.Fatal("Start failed")
	}
	t.Cleanup(p.Stop)
	time.Sleep(300 * time.Millisecond) // the starter's thread is gone by now
	if err := p.SendUser("still there?"); err != nil {
		t.Fatalf("the harness died with its starter's thread: %v (exit %v)", err, p.Err())
	}
	untilResult(t, p)
}

func TestLoggedArgsHideConfigs(t *testing.T) {
	got := LoggedArgs([]string{"--verbose", "--mcp-config", `{"k":"sk-secret"}`, "--settings={\"env\":{}}", "--model=m"})
	want := []string{"--verbose", "--mcp-config", "<17 bytes>", "--settings=<10 bytes>", "--model=m"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("LoggedArgs = %q, want %q", got, want)
	}
}

// A secret in any position of a harness command line stays out of the log:
// every value of a flag that takes several, inline values, URLs in flags'
// values and on their own; what is not secret is kept as given.
func TestLoggedArgsMaskEveryPosition(t *testing.T) {
	const tok = "TOKENTOKENTOKEN"
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{"every mcp config", []string{"--mcp-config", `{"a":"` + tok + `1"}`, "/etc/" + tok + "2.json", `{"c":"` + tok + `3"}`, "--model", "m"},
			[]string{"--mcp-config", "<24 bytes>", "<26 bytes>", "<24 bytes>", "--model", "m"}},
		{"inline then more values", []string{"--mcp-config=" + tok + "1", tok + "2", "--verbose"},
			[]string{"--mcp-config=<16 bytes>", "<16 bytes>", "--verbose"}},
		{"settings and agents", []string{"--settings", tok + "1", "--agents", `{"r":{"mcpServers":"` + tok + `2"}}`, "--allowedTools", "Bash", "Write"},
			[]string{"--settings", "<16 bytes>", "--agents", "<39 bytes>", "--allowedTools", "Bash", "Write"}},
		{"managed settings at the end", []string{"-p", "--managed-settings", tok},
			[]string{"-p", "--managed-settings", "<15 bytes>"}},
		{"url value of a flag", []string{"--plugin-url", "https://plugins.example/dl/" + tok + "?sig=" + tok + "s"},
			[]string{"--plugin-url", "https://plugins.example/****/TOKE…****?sig=TOKE…****"}},
		{"inline url value", []string{"--plugin-url=https://u:" + tok + "@plugins.example/p"},
			[]string{"--plugin-url=https://u:TOKE…****@plugins.example/****"}},
		{"bare url", []string{"--cloud", "https://claude.example/code/" + tok},
			[]string{"--cloud", "https://claude.example/****/TOKE…****"}},
		{"plain values kept", []string{"--allowedTools", "Bash(git *)", "Edit", "--add-dir", "/src/app", "-"},
			[]string{"--allowedTools", "Bash(git *)", "Edit", "--add-dir", "/src/app", "-"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := LoggedArgs(tt.args)
			if strings.Join(got, "\x00") != strings.Join(tt.want, "\x00") {
				t.Errorf("LoggedArgs(%q)\n = %q\nwant %q", tt.args, got, tt.want)
			}
			if j := strings.Join(got, " "); strings.Contains(j, "TOKENT") {
				t.Errorf("a token is in %q", j)
			}
		})
	}
}

// Warm's blank turn never reaches Events: the first turn seen is the first
// prompt's, with its own init, and no extra result.
func TestWarmBlankTurnIsDropped(t *testing.T) {
	p := startFake(t, harnesstest.ModeStream, harnesstest.EnvContext+"=150000")
	if err := p.Warm(); err != nil {
		t.Fatal(err)
	}
	if err := p.SendUser("hello"); err != nil {
		t.Fatal(err)
	}
	evs := untilResult(t, p)
	if evs[0].Kind != transcript.KindInit {
		t.Errorf("first event %v, want the first prompt's init", evs[0].Kind)
	}
	var assistant bool
	for _, ev := range evs {
		if ev.Kind == transcript.KindSystem {
			t.Errorf("the blank turn's notice came through: %s", ev.Raw)
		}
		assistant = assistant || ev.Kind == transcript.KindAssistant
	}
	if !assistant {
		t.Errorf("the result came before the first prompt's reply: the blank turn's result came through (%d events)", len(evs))
	}
}

// A harness that answers the blank prompt with a turn of its own (not the
// one it is measured to give) loses no line of it: dropping stops at the
// first line that is not a system line or a result.
func TestWarmStopsDroppingAtAnUnexpectedLine(t *testing.T) {
	p := &Process{}
	p.warming = true
	for _, tc := range []struct {
		kind transcript.Kind
		drop bool
	}{{transcript.KindInit, true}, {transcript.KindAssistant, false}, {transcript.KindSystem, false}, {transcript.KindResult, false}} {
		if got := p.warmLine(&transcript.Event{Kind: tc.kind}); got != tc.drop {
			t.Errorf("%v: dropped %v, want %v", tc.kind, got, tc.drop)
		}
	}
}

// What the harness wrote to stderr comes back with its URLs masked: it
// ends up in errors, the manifest and the log.
func TestStderrMasksURLs(t *testing.T) {
	const tok = "TOKENTOKENTOKEN42"
	p, err := Start(context.Background(), Config{Path: "/bin/sh", Exact: true,
		Args: []string{"-c", "echo 'API error at https://gw.example/" + tok + "/v1/messages: 401' >&2"}})
	if err != nil {
		t.Fatal(err)
	}
	for range p.Events() {
	}
	<-p.Done()
	if got := p.Stderr(); strings.Contains(got, tok) || !strings.Contains(got, "API error at https://gw.example/TOKE…****/****/****: 401") {
		t.Errorf("Stderr() = %q", got)
	}
}
