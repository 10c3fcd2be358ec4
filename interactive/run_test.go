package interactive

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/flowerhq/flower/event"

	"github.com/creack/pty"

	"github.com/flowerhq/flower/handoffwriter"
	"github.com/flowerhq/flower/manifest"
	"github.com/flowerhq/flower/policy"
	"github.com/flowerhq/flower/supervisor"
)

// runOptions configure Run, the engine with this package's front, as
// cmd/flower wires them.
type runOptions struct {
	Workspace, HarnessPath string
	Env                    []string
	Policy                 policy.HandoffPolicy
	RunDir                 string
	Task                   string
	In                     *os.File
	Out                    *os.File
	Grace                  time.Duration
	Signals                []os.Signal
	OnEvent                func(event.Event)
	AfterFreeze            func(path string)
}

// Run runs one step interactively through the engine (package supervisor)
// with this package's Front, and gives the terminal back however it ends.
func Run(ctx context.Context, o runOptions) (*manifest.StepResult, error) {
	f, ctx, cancel, err := Open(ctx, Options{In: o.In, Out: o.Out, Signals: o.Signals})
	if err != nil {
		return nil, err
	}
	defer cancel(nil)
	defer f.Close()
	var log *slog.Logger
	if os.Getenv("FLOWER_TEST_LOG") != "" {
		log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	rt, err := supervisor.New(supervisor.Options{
		Logger: log, Workspace: o.Workspace, RunDir: o.RunDir, Workbench: true, Handoff: &o.Policy,
		HarnessPath: o.HarnessPath, Env: o.Env, Grace: o.Grace, Front: f,
		OnEvent: f.Sink(o.OnEvent), AfterFreeze: o.AfterFreeze,
	})
	if err != nil {
		return nil, err
	}
	return rt.RunStep(ctx, "main", o.Task)
}

// fakeRun is one Run against the fake harness.
type fakeRun struct {
	t         *testing.T
	person    *person
	dir       string // the fake's records
	workspace string
	opts      runOptions

	mu     sync.Mutex
	events []event.Event
}

func newFakeRun(t *testing.T, scripts ...fakeScript) *fakeRun {
	t.Helper()
	b, err := json.Marshal(scripts)
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeRun{t: t, person: newPerson(t), dir: t.TempDir(), workspace: t.TempDir()}
	env := append(os.Environ(), "FLOWER_FAKE_INTERACTIVE=1", "HOME="+t.TempDir(), "FAKE_DIR="+f.dir, "FAKE_SCRIPT="+string(b))
	f.opts = runOptions{
		Workspace: f.workspace, HarnessPath: os.Args[0], Env: env,
		Policy: policy.HandoffPolicy{Enabled: true, Window: 200_000, Headroom: 50_000, MaxGenerations: 8},
		RunDir: filepath.Join(f.workspace, ".flower", "runs", "t"),
		In:     f.person.slave, Out: f.person.slave, Grace: 2 * time.Second,
		Signals: []os.Signal{}, // none: only the signal test listens, for its own

		OnEvent: func(ev event.Event) {
			f.mu.Lock()
			f.events = append(f.events, ev)
			f.mu.Unlock()
		},
	}
	return f
}

// start runs Run in the background; wait collects its result.
func (f *fakeRun) start(ctx context.Context) func() (*manifest.StepResult, error) {
	type result struct {
		st  *manifest.StepResult
		err error
	}
	done := make(chan result, 1)
	go func() {
		st, err := Run(ctx, f.opts)
		done <- result{st, err}
	}()
	return func() (*manifest.StepResult, error) {
		select {
		case r := <-done:
			return r.st, r.err
		case <-time.After(60 * time.Second):
			f.t.Fatalf("Run did not return; screen:\n%s", f.person.seen())
			return nil, nil
		}
	}
}

func (f *fakeRun) handoffs(phase string) []event.Event {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []event.Event
	for _, ev := range f.events {
		if ev.Kind == event.KindHandoff && ev.Phase == phase {
			out = append(out, ev)
		}
	}
	return out
}

// record is what the fake of generation gen (1-based) left; an empty
// record while it has left none.
func (f *fakeRun) record(gen int) fakeRecord {
	var r fakeRecord
	b, err := os.ReadFile(filepath.Join(f.dir, fmt.Sprintf("record-%d.json", gen)))
	if err == nil {
		_ = json.Unmarshal(b, &r)
	}
	return r
}

func (f *fakeRun) generationUp(gen int) {
	f.t.Helper()
	f.person.waitFor(fmt.Sprintf("generation %d", gen), func() bool {
		return strings.Contains(f.person.seen(), fmt.Sprintf("fake harness, generation %d", gen))
	})
}

// crossTheThreshold plays the person of a two-reply script: the task, then
// the turn whose reply crosses the threshold, so that a handoff follows.
func (f *fakeRun) crossTheThreshold() {
	f.t.Helper()
	f.generationUp(1)
	f.person.waitFor("raw mode", f.person.raw)
	f.person.typeKeys("port the parser\r")
	f.person.waitFor("the near notice", func() bool { return len(f.handoffs(event.PhaseNear)) == 1 })
	f.person.typeKeys("go on\r")
}

// TestRunHandsOff: near notice, a cut in the middle of a tool call, the
// handoff typed verbatim while the person's keys wait, a person's edit of the
// handoff file reaching the successor (DESIGN.md «Launch from disk»), the
// successor started beside the burned harness's exit and shown after it
// (DESIGN.md «Warm successor»), and the bookkeeping.
func TestRunHandsOff(t *testing.T) {
	t.Parallel()
	f := newFakeRun(t,
		fakeScript{Replies: []fakeReply{{Context: 140_000}, {Context: 155_000, Tool: true}}, Writing: goodDoc, ExitTakes: 400 * time.Millisecond},
		fakeScript{Replies: []fakeReply{{Context: 20_000}}})
	f.opts.AfterFreeze = func(path string) {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Error(err)
			return
		}
		edited := strings.Replace(string(b), "NEXT-MARK.", "NEXT-MARK. EDITED-BY-A-PERSON", 1)
		if err := os.WriteFile(path, []byte(edited), 0o644); err != nil {
			t.Error(err)
		}
	}
	wait := f.start(context.Background())
	f.generationUp(1)
	f.person.waitFor("raw mode", f.person.raw)
	f.person.typeKeys("port the parser\r")
	f.person.waitFor("the near notice", func() bool { return len(f.handoffs(event.PhaseNear)) == 1 })
	f.person.waitFor("the near notice in the title", func() bool {
		return strings.Contains(f.person.seen(), TitleSequence("flower · context 140.0K/200K · about 10K to handoff"))
	})
	f.person.typeKeys("go on\r")
	f.person.waitFor("the writing turn", func() bool { return len(f.handoffs(event.PhaseWriting)) == 1 })
	f.person.typeKeys("HELD")
	f.generationUp(2)
	f.person.waitFor("the held keys in generation 2", func() bool { return f.record(2).Input == "HELD" })
	f.person.typeKeys("\x03\x03") // the person leaves: the first Ctrl-C clears HELD
	st, err := wait()
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if f.person.raw() {
		t.Errorf("terminal still raw after Run")
	}

	// flower's two long prompts reach the screen as one short line each,
	// which mentions a file of the run's holding the prompt verbatim
	// (DESIGN.md «Quiet screen»).
	gen1 := f.record(1)
	want := handoffwriter.HandoffPromptCarryingTask(155_000, 200_000) // the typed task is carried
	if len(gen1.Prompts) != 3 || !isQuietLine(gen1.Typed[2], "writing") || !strings.HasSuffix(gen1.Prompts[2], "\n"+want) {
		t.Fatalf("generation 1 got prompts %q; the third should be a short line that attaches the handoff prompt verbatim", gen1.Prompts)
	}
	gen2 := f.record(2)
	if len(gen2.Prompts) != 1 || !isQuietLine(gen2.Typed[0], "first") || !strings.Contains(gen2.Prompts[0], "You are taking over") ||
		!strings.Contains(gen2.Prompts[0], "EDITED-BY-A-PERSON") ||
		!strings.Contains(gen2.Prompts[0], handoffwriter.TaskBegin+"\nport the parser\n"+handoffwriter.TaskEnd) {
		t.Fatalf("generation 2's first prompt should be a short line that attaches the edited file's prompt block: %q", gen2.Prompts)
	}
	if n := len(f.handoffs(event.PhaseNear)); n != 1 {
		t.Errorf("%d near notices, want 1", n)
	}
	if st.Status != manifest.StatusSucceeded || len(st.Generations) != 2 || st.Task != "port the parser" {
		t.Fatalf("step %s, %d generations, task %q; errors %q", st.Status, len(st.Generations), st.Task, st.Errors)
	}
	g1, g2 := st.Generations[0], st.Generations[1]
	h := g1.Handoff
	if h == nil || h.Degraded || h.Context != 155_000 || h.Reason != manifest.ReasonThreshold || h.SHA256Written == h.SHA256Launched {
		t.Errorf("handoff record %+v (an edited file must show in the launched hash)", h)
	}
	if len(st.Retired) != 1 || st.Retired[0] != g1.SessionID || st.SessionID != g2.SessionID || g1.SessionID == g2.SessionID {
		t.Errorf("retired %q, session %q, generations %q %q", st.Retired, st.SessionID, g1.SessionID, g2.SessionID)
	}
	// The screen says what the harness cost only at its exit (a
	// cost-state line), when no turn is left to end: front.Exit carries it.
	if st.CostUSD != 0.5 || st.Context != 20_000 || st.NumTurns != 4 {
		t.Errorf("cost %v, context %d, turns %d; want 0.5 (two cost-state lines), 20000, 4", st.CostUSD, st.Context, st.NumTurns)
	}
	// The first harness told its cost as it exited, after the second had
	// started: its own generation's.
	if g1.CostUSD != 0.25 || g2.CostUSD != 0.25 {
		t.Errorf("generation costs %v and %v, want 0.25 each (one cost-state line each)", g1.CostUSD, g2.CostUSD)
	}
	r1, r2 := f.record(1), f.record(2)
	if !r1.ExitedByKeys || r2.Started >= r1.Exited {
		t.Errorf("generation 2 started %v after generation 1 exited (by keys: %v): want it started during that exit",
			time.Duration(r2.Started-r1.Exited), r1.ExitedByKeys)
	}
	screen := f.person.seen()
	if bye, up := strings.Index(screen, "bye\r\n"), strings.Index(screen, "fake harness, generation 2"); bye < 0 || up < bye {
		t.Errorf("generation 2's screen (at %d) shows before generation 1's goodbye (at %d)", up, bye)
	}
	for _, want := range []string{"# context 140.0K/200K · about 10K to handoff\r\n", "<- handoff written to " + h.Path + "\r\n"} {
		if !strings.Contains(screen, want) {
			t.Errorf("screen lacks %q", want)
		}
	}
	// Both harnesses said goodbye (flower ended the first, the person the
	// second); neither offered to resume its session.
	if n := strings.Count(screen, "bye\r\n"); n != 2 || strings.Contains(screen, "--resume") || strings.Contains(screen, g1.SessionID+"\r") {
		t.Errorf("screen shows %d goodbyes (want 2) or a harness's resume line:\n%q", n, screen)
	}
	if disk, err := manifest.Load(manifest.Path(f.opts.RunDir)); err != nil || disk.Step("main").Status != manifest.StatusSucceeded {
		t.Errorf("manifest on disk: %v", err)
	}
}

// TestRunDegrades: the paths that hand off without a complete document still
// hand off, and say why (DESIGN.md «Degraded handoff», «Overflow path»).
func TestRunDegrades(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		gen1   fakeScript
		reason string
		why    string
	}{
		{"overflow", fakeScript{Replies: []fakeReply{{Overflow: true}}}, manifest.ReasonOverflow, "overflow: Prompt is too long"},
		{"no next section", fakeScript{Replies: []fakeReply{{Before: 100_000, Context: 160_000}}, Writing: "## 现在在做 (doing)\nhalf done\n"}, manifest.ReasonThreshold, "the handoff is missing next"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFakeRun(t, tt.gen1, fakeScript{Replies: []fakeReply{{Context: 20_000}}})
			f.opts.Task = "TASK-MARK do the thing"
			wait := f.start(context.Background())
			f.generationUp(2)
			f.person.waitFor("generation 2's prompt", func() bool { return len(f.record(2).Prompts) == 1 })
			f.person.typeKeys("\x03")
			time.Sleep(200 * time.Millisecond)
			f.person.typeKeys("\x03")
			st, err := wait()
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			h := st.Generations[0].Handoff
			if h == nil || !h.Degraded || h.Reason != tt.reason || !strings.Contains(h.Why, tt.why) {
				t.Fatalf("handoff %+v, want degraded %s because %q", h, tt.reason, tt.why)
			}
			if len(st.Errors) == 0 || !strings.HasPrefix(st.Errors[0], "交接降级(") {
				t.Errorf("errors %q lack the degraded entry", st.Errors)
			}
			p := f.record(2).Prompts[0]
			if !strings.Contains(p, handoffwriter.DegradedMarker) || !strings.Contains(p, "TASK-MARK") {
				t.Errorf("successor prompt is not the degraded block with the task: %.300q", p)
			}
		})
	}
}

func TestRunGenerationLimit(t *testing.T) {
	t.Parallel()
	f := newFakeRun(t, fakeScript{Replies: []fakeReply{{Before: 100_000, Context: 160_000}}, Writing: goodDoc})
	f.opts.Policy.MaxGenerations = 1
	f.opts.Task = "go"
	st, err := f.start(context.Background())()
	if !errors.Is(err, policy.ErrGenerationLimit) {
		t.Fatalf("err = %v, want the generation limit", err)
	}
	if st.Status != manifest.StatusGenerationLimit || f.person.raw() {
		t.Errorf("status %s, raw %v", st.Status, f.person.raw())
	}
}

// TestRunRestoresTerminal: however Run ends, the terminal is as it was.
func TestRunRestoresTerminal(t *testing.T) {
	t.Parallel()
	t.Run("the harness fails", func(t *testing.T) {
		t.Parallel()
		f := newFakeRun(t, fakeScript{CrashAfter: time.Second})
		wait := f.start(context.Background())
		f.person.waitFor("raw mode", f.person.raw)
		st, err := wait()
		if !errors.Is(err, supervisor.ErrStepFailed) || st.Status != manifest.StatusFailed {
			t.Fatalf("err %v, status %s", err, st.Status)
		}
		if f.person.raw() {
			t.Errorf("terminal still raw")
		}
	})
	t.Run("a signal", func(t *testing.T) {
		t.Parallel()
		f := newFakeRun(t, fakeScript{Replies: []fakeReply{{Context: 1000}}})
		f.opts.Signals = []os.Signal{syscall.SIGUSR2}
		wait := f.start(context.Background())
		f.generationUp(1)
		f.person.waitFor("raw mode", f.person.raw)
		if err := syscall.Kill(os.Getpid(), syscall.SIGUSR2); err != nil {
			t.Fatal(err)
		}
		st, err := wait()
		if !errors.Is(err, context.Canceled) || st.Status != manifest.StatusInterrupted {
			t.Fatalf("err %v, status %s", err, st.Status)
		}
		if f.person.raw() {
			t.Errorf("terminal still raw")
		}
		// Its goodbye may be kept off the screen (flower hides it when it
		// ends the harness itself), so the fake's own record says how it
		// went.
		if !f.record(1).ExitedByKeys {
			t.Errorf("the harness was not ended with its exit keys; screen:\n%s", f.person.seen())
		}
	})
	t.Run("a signal before its screen reads keys", func(t *testing.T) {
		t.Parallel()
		// Its exit keys wait for the screen: sent at once, they would be
		// lost, and only SIGTERM after the grace period would end it.
		f := newFakeRun(t, fakeScript{Replies: []fakeReply{{Context: 1000}}, PasteOnAfter: 700 * time.Millisecond})
		f.opts.Signals = []os.Signal{syscall.SIGUSR1}
		wait := f.start(context.Background())
		f.generationUp(1)
		if err := syscall.Kill(os.Getpid(), syscall.SIGUSR1); err != nil {
			t.Fatal(err)
		}
		st, err := wait()
		if !errors.Is(err, context.Canceled) || st.Status != manifest.StatusInterrupted {
			t.Fatalf("err %v, status %s", err, st.Status)
		}
		if r := f.record(1); !r.ExitedByKeys {
			t.Errorf("the harness was not ended with its exit keys; screen:\n%s", f.person.seen())
		}
	})
	t.Run("a panic", func(t *testing.T) {
		t.Parallel()
		f := newFakeRun(t, fakeScript{Replies: []fakeReply{{Context: 1000}}})
		f.opts.OnEvent = func(ev event.Event) {
			if ev.Kind == event.KindGeneration {
				panic("boom")
			}
		}
		func() {
			defer func() {
				if v := recover(); v != "boom" {
					t.Errorf("recovered %v, want the panic", v)
				}
			}()
			Run(context.Background(), f.opts)
		}()
		if f.person.raw() {
			t.Errorf("terminal still raw after a panic")
		}
	})
}

func TestRunNeedsATerminal(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	_, _, _, err = Open(context.Background(), Options{In: r, Out: w})
	if !errors.Is(err, ErrNotTerminal) {
		t.Errorf("err = %v, want ErrNotTerminal", err)
	}
}

// TestRunFollowsClear: /clear starts a new session in the same harness; the
// meter follows it there, and the old session counts as burned.
func TestRunFollowsClear(t *testing.T) {
	t.Parallel()
	f := newFakeRun(t,
		fakeScript{Replies: []fakeReply{{Context: 100_000}, {Context: 160_000}}, Writing: goodDoc},
		fakeScript{Replies: []fakeReply{{Context: 20_000}}})
	wait := f.start(context.Background())
	f.generationUp(1)
	f.person.typeKeys("first\r")
	f.person.waitFor("the first prompt", func() bool { return len(f.record(1).Prompts) == 1 })
	time.Sleep(500 * time.Millisecond)
	f.person.typeKeys("/clear\r")
	time.Sleep(800 * time.Millisecond) // a tick or two to notice the switch
	f.person.typeKeys("second\r")
	f.generationUp(2)
	f.person.waitFor("generation 2's prompt", func() bool { return len(f.record(2).Prompts) == 1 })
	f.person.typeKeys("\x03\x03")
	st, err := wait()
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	g1 := st.Generations[0]
	if !strings.HasSuffix(g1.SessionID, "-cleared") || g1.Handoff == nil || g1.Handoff.Context != 160_000 {
		t.Fatalf("generation 1 should have handed off from the cleared session at 160k: %+v", g1)
	}
	if len(st.Retired) != 2 || st.Retired[1] != g1.SessionID || st.Retired[0]+"-cleared" != g1.SessionID {
		t.Errorf("retired %q: want the session before /clear, then the one after", st.Retired)
	}
}

// TestRunFollowsWindowSize: a resized terminal resizes the harness's pty.
func TestRunFollowsWindowSize(t *testing.T) {
	t.Parallel()
	f := newFakeRun(t, fakeScript{Replies: []fakeReply{{Context: 1000}}})
	wait := f.start(context.Background())
	f.generationUp(1)
	f.person.waitFor("raw mode", f.person.raw)
	if err := pty.Setsize(f.person.master, &pty.Winsize{Rows: 30, Cols: 100}); err != nil {
		t.Fatal(err)
	}
	// The kernel signals the terminal's foreground group; here that is
	// the test process, which is not in this pty's group, so say it here,
	// again at each look: a signal that came before the run listened for
	// it (the person's raw mode can come first, on a loaded machine) is
	// lost, as it would be on a terminal resized at that instant.
	var said time.Time
	f.person.waitFor("the harness to see 100x30", func() bool {
		if strings.Contains(f.person.seen(), "size 100x30") {
			return true
		}
		if time.Since(said) > 250*time.Millisecond {
			said = time.Now()
			if err := syscall.Kill(os.Getpid(), syscall.SIGWINCH); err != nil {
				t.Error(err)
			}
		}
		return false
	})
	f.person.typeKeys("\x03")
	time.Sleep(200 * time.Millisecond)
	f.person.typeKeys("\x03")
	// No turn was typed: the step ends, never as a success.
	if _, err := wait(); err == nil || !strings.Contains(err.Error(), "closed before the API answered any turn") {
		t.Fatalf("wait: %v", err)
	}
}

// TestRunAdoptsTheHarnessWindow (DESIGN.md «Window from the harness»): the
// name rule says 1M for claude-sonnet-4-5, the harness says 200K; the
// session's probe brings the harness's figure, so 155K hands off: with a
// cut when the 155K round runs a tool until it is stopped, and at once
// when the turn was over before the probe answered (no turn to cut).
func TestRunAdoptsTheHarnessWindow(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		tool bool
	}{{"the turn runs", true}, {"the turn is over", false}} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFakeRun(t,
				fakeScript{Replies: []fakeReply{{Context: 155_000, Before: 60_000, Tool: tt.tool}}, Writing: goodDoc},
				fakeScript{Replies: []fakeReply{{Context: 20_000}}})
			f.opts.Env = append(f.opts.Env, "ANTHROPIC_MODEL=claude-sonnet-4-5")
			f.opts.Policy = policy.HandoffPolicy{Enabled: true}
			wait := f.start(context.Background())
			f.generationUp(1)
			f.person.waitFor("raw mode", f.person.raw)
			f.person.typeKeys("port the parser\r")
			f.generationUp(2)
			f.person.typeKeys("\x03\x03")
			st, err := wait()
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if st.Window != 200_000 || st.WindowSource != manifest.WindowFromHarness {
				t.Errorf("window %d from %q, want 200000 from the harness", st.Window, st.WindowSource)
			}
			if len(st.Generations) != 2 || st.Generations[0].HarnessWindow != 200_000 {
				t.Fatalf("%d generations; generation 1's harness window %d", len(st.Generations), st.Generations[0].HarnessWindow)
			}
			if h := st.Generations[0].Handoff; h == nil || h.At != 150_000 || h.WindowSource != manifest.WindowFromHarness {
				t.Errorf("receipt %+v, want a handoff at 150K of the harness's 200K", h)
			}
			if ac := st.Generations[0].AutoCompactEnabled; ac == nil || *ac {
				t.Errorf("auto-compact %v, want the probe's false (DISABLE_AUTO_COMPACT=1 reached the harness)", ac)
			}
			if n := f.record(1).Escs; n != map[bool]int{true: 1, false: 0}[tt.tool] {
				t.Errorf("%d Esc pressed in generation 1", n)
			}
		})
	}
}

// TestRunHearsTheSuccessorBesideTheOldExit: a burned harness slow to exit
// does not hide its successor from the engine: the successor's session is
// named (and so in the manifest) while the old harness is still going, not
// only once it is gone (DESIGN.md «Warm successor»). A launch that waited
// for the old exit left a flower killed meanwhile with a manifest that
// lacked the session the API had seen.
func TestRunHearsTheSuccessorBesideTheOldExit(t *testing.T) {
	t.Parallel()
	f := newFakeRun(t,
		fakeScript{Replies: []fakeReply{{Context: 140_000}, {Context: 155_000, Tool: true}}, Writing: goodDoc, ExitTakes: 1900 * time.Millisecond},
		fakeScript{Replies: []fakeReply{{Context: 20_000}}})
	var mu sync.Mutex
	var named time.Time
	onEvent := f.opts.OnEvent
	f.opts.OnEvent = func(ev event.Event) {
		if ev.Kind == event.KindSession && ev.Generation == 2 && ev.SessionID != "" {
			mu.Lock()
			if named.IsZero() {
				named = time.Now()
			}
			mu.Unlock()
		}
		onEvent(ev)
	}
	wait := f.start(context.Background())
	f.crossTheThreshold()
	f.generationUp(2)
	f.person.waitFor("generation 1's exit", func() bool { return f.record(1).Exited != 0 })
	f.person.typeKeys("\x03\x03")
	st, err := wait()
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	exited := time.Unix(0, f.record(1).Exited)
	if named.IsZero() || !named.Before(exited) {
		t.Fatalf("generation 2's session was named at %v, generation 1's harness exited at %v: the successor went unheard until the old harness was gone",
			named.Format(time.StampMilli), exited.Format(time.StampMilli))
	}
	if len(st.Generations) != 2 || st.Generations[1].SessionID == "" || len(st.Retired) != 1 {
		t.Fatalf("generations %+v, retired %q", st.Generations, st.Retired)
	}
	t.Logf("generation 2 named %v before generation 1's harness exited", exited.Sub(named).Round(time.Millisecond))
}

// TestRunStartsTheSuccessorScreenEarly: the successor's screen starts beside
// the writing turn, before the handoff is written, and is given the handoff
// prompt typed once its screen reads keys (a screen slow to turn bracketed
// paste on loses what came before), verbatim; none of it shows, and none
// of the person's keys reach it, until the old harness is gone; the keys
// typed meanwhile reach it after its prompt (DESIGN.md «Warm successor»).
func TestRunStartsTheSuccessorScreenEarly(t *testing.T) {
	t.Parallel()
	f := newFakeRun(t,
		fakeScript{Replies: []fakeReply{{Context: 140_000}, {Context: 155_000, Tool: true}}, Writing: goodDoc,
			WritingTakes: 1500 * time.Millisecond, ExitTakes: 300 * time.Millisecond},
		fakeScript{Replies: []fakeReply{{Context: 20_000}}, PasteOnAfter: 2500 * time.Millisecond})
	wait := f.start(context.Background())
	f.crossTheThreshold()
	f.person.waitFor("the writing turn", func() bool { return len(f.handoffs(event.PhaseWriting)) == 1 })
	f.person.typeKeys("HELD")
	f.generationUp(2)
	f.person.waitFor("the held keys in generation 2", func() bool { return f.record(2).Input == "HELD" })
	f.person.typeKeys("\x03\x03")
	st, err := wait()
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	r1, r2 := f.record(1), f.record(2)
	if r1.Wrote == 0 || r2.Started >= r1.Wrote {
		t.Errorf("generation 2 started %v after the handoff was written: want it started beside the writing turn",
			time.Duration(r2.Started-r1.Wrote))
	}
	if st.Status != manifest.StatusSucceeded || len(st.Generations) != 2 {
		t.Fatalf("step %s, %d generations; errors %q", st.Status, len(st.Generations), st.Errors)
	}
	if len(r2.Prompts) != 1 || !strings.Contains(r2.Prompts[0], "You are taking over") || !strings.Contains(r2.Prompts[0], "NEXT-MARK") ||
		strings.Contains(r2.Prompts[0], "HELD") {
		t.Fatalf("generation 2's prompts %q: want the handoff's prompt block alone", r2.Prompts)
	}
	screen := f.person.seen()
	if bye, up := strings.Index(screen, "bye\r\n"), strings.Index(screen, "fake harness, generation 2"); bye < 0 || up < bye {
		t.Errorf("generation 2's screen (at %d) shows before generation 1's goodbye (at %d)", up, bye)
	}
	if !r1.ExitedByKeys || st.Generations[1].SessionID == "" || st.Generations[1].SessionID == st.Generations[0].SessionID {
		t.Errorf("generation 1 exited by keys %v; sessions %q, %q", r1.ExitedByKeys, st.Generations[0].SessionID, st.Generations[1].SessionID)
	}
}

// isQuietLine: typed is one short line that mentions a prompt file of kind
// in a front's prompts folder.
func isQuietLine(typed, kind string) bool {
	return len(typed) < 400 && !strings.Contains(typed, "\n") && strings.HasPrefix(typed, "flower: ") &&
		regexp.MustCompile(`@"/[^"]*/prompts/[^/"]+-\d+-`+kind+`-\d+\.md"[^"]+$`).MatchString(typed)
}
