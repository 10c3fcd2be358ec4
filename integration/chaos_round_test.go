package integration_test

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	mrand "math/rand"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/flowerhq/flower/handoffwriter"
	"github.com/flowerhq/flower/manifest"
	"github.com/flowerhq/flower/scriptedapi"
)

// Bounds of one round. A flower run that outlives flowerLimit is stuck;
// a round that needs more than maxRuns flower runs does not converge.
const (
	flowerLimit = 3 * time.Minute
	maxRuns     = 16
	// outliveLimit is how long a process of the run may outlive flower.
	outliveLimit = time.Second
	// pauseAfterFreeze widens the launch window (between freezing the
	// handoff file and starting the successor) so that a person's edit,
	// and a kill, can land in it.
	pauseAfterFreeze = "1s"
)

// chaosStep is the step every round runs.
const chaosStep = "main"

// round is one seeded run of the campaign's job under faults.
type round struct {
	t     *testing.T
	seed  int64
	front front
	plan  []*fault
	model *chaosModel
	srv   *scriptedapi.Server

	flower, harness  string // executables
	ws, home, runDir string
	task             string
	env              []string
	key              string // the fake API key: in no file, ever
	marker           string // NAME=VALUE in the environment of every process of the run
	watch            *watcher

	mu     sync.Mutex
	broken []string    // invariants broken: "what: detail"
	runs   int         // flower processes started
	starts []time.Time // when each flower run started
	start  time.Time
	// lastOutput is what the last flower printed.
	lastOutput string
}

// roundResult is what a round leaves for the campaign's figures.
type roundResult struct {
	seed        int64
	faults      []*fault
	sessions    int
	generations int
	degraded    []string // one per degraded successor: "seed S generation N: why"
	edits       int      // successors whose first request carried a person's edit
	runs        int
	broken      []string
	took        time.Duration
}

func newRound(t *testing.T, fr front, seed int64, faults int, flower, harness string) *round {
	rng := mrand.New(mrand.NewSource(seed))
	r := &round{t: t, seed: seed, front: fr, flower: flower, harness: harness, start: time.Now()}
	if real, err := filepath.EvalSymlinks(harness); err == nil {
		r.harness = real // as /proc/PID/exe shows it
	}
	r.plan = planRound(rng, fr, faults)
	r.model = newChaosModel(r.plan)
	r.srv = startServer(t, r.model.reply)
	r.ws = t.TempDir()
	r.runDir = filepath.Join(r.ws, ".flower", "runs", "chaos")
	r.task = chaosTaskMark + ": append lines to work.txt, one Bash command at a time, until told the job is done."
	r.key = "sk-ant-chaos-" + randomHex(16)
	cred := []string{"ANTHROPIC_API_KEY=" + r.key}
	if slices.ContainsFunc(r.plan, func(f *fault) bool { return f.kind == faultAPIUsageLimit }) {
		// The harness reads a usage limit only as a subscriber's; the
		// token is then the secret no file or output may show.
		r.key = "sk-ant-oat01-chaos-" + randomHex(16)
		cred = []string{"ANTHROPIC_API_KEY=", "CLAUDE_CODE_OAUTH_TOKEN=" + r.key}
	}
	r.marker = "FLOWER_CHAOS_RUN=" + randomHex(8)
	r.env = harnessEnv(t, r.srv, append(append([]string{"FLOWER_HARNESS=" + harness}, cred...), // after the server's: the last one wins
		"ANTHROPIC_MODEL=claude-haiku-4-5",
		// Measured on 2.1.328: the harness retries 5xx, 529 and resets
		// itself, 10 times by default with growing backoff; two keeps a
		// persistent fault to about 2 s before it reaches flower. A
		// stream that stalls after its first bytes is given up only by
		// the byte watchdog (10 s is its floor), after which the harness
		// retries without streaming; the stream idle timeout cannot go
		// below 5 minutes.
		"CLAUDE_CODE_MAX_RETRIES=2",
		"CLAUDE_BYTE_STREAM_IDLE_TIMEOUT_MS=10000",
		"FLOWER_TEST_PAUSE_AFTER_FREEZE="+pauseAfterFreeze,
		r.marker,
	)...)
	r.home = homeOf(r.env)
	r.watch = newWatcher(r)
	return r
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// breach records a broken invariant.
func (r *round) breach(what string, format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	msg := what + ": " + fmt.Sprintf(format, args...)
	for _, b := range r.broken {
		if b == msg {
			return
		}
	}
	r.broken = append(r.broken, msg)
	r.t.Errorf("[%6.1fs] invariant broken: %s", time.Since(r.start).Seconds(), msg)
}

// note logs what the driver did.
func (r *round) note(format string, args ...any) {
	r.t.Logf("[%6.1fs] %s", time.Since(r.start).Seconds(), fmt.Sprintf(format, args...))
}

// run drives the round: flower on the task, process faults at their
// moments, `flower continue` after every exit that leaves the step
// unfinished, and the invariants after every exit and at the end.
func (r *round) run() *roundResult {
	for _, f := range r.plan {
		r.note("planned: %s", f)
	}
	r.watch.start()
	defer r.watch.stop()
	var pending []*fault
	for _, f := range r.plan {
		if !f.kind.api() && f.kind != faultEditNotes {
			pending = append(pending, f)
		}
	}
	h := r.startFlower(false)
	for h != nil {
		cause := "flower exited by itself"
		if f := r.waitTrigger(h, pending); f != nil {
			pending = slices.DeleteFunc(pending, func(p *fault) bool { return p == f })
			r.inject(h, f)
			if f.kind == faultKillHarness {
				continue
			}
			cause = "after " + string(f.kind)
		}
		if !r.waitExit(h, flowerLimit) {
			r.breach("flower ends", "flower (pid %d) still running after %v; output:\n%s", h.pid(), flowerLimit, clip(h.output(), 3000))
			_ = syscall.Kill(h.pid(), syscall.SIGKILL)
			<-h.exited()
		}
		r.lastOutput = h.output()
		if strings.Contains(r.lastOutput, r.key) {
			r.breach("the API key is in no output", "flower pid %d printed it", h.pid())
		}
		r.note("flower pid %d exited %d (%s)", h.pid(), h.exitCode(), cause)
		r.checkNoSurvivors(h)
		st := r.checkState(cause)
		code := h.exitCode()
		h = nil
		switch {
		case st == nil:
		case st.Status == manifest.StatusSucceeded:
		case st.Status == manifest.StatusRunning || st.Status == manifest.StatusInterrupted:
			if r.runs >= maxRuns {
				r.breach("the step ends succeeded", "still %s after %d flower runs; the last printed:\n%s", st.Status, r.runs, clip(r.lastOutput, 3000))
				break
			}
			h = r.startFlower(true)
		default:
			r.breach("the step ends succeeded", "status %s (exit %d); errors %q; output:\n%s", st.Status, code, st.Errors, clip(r.lastOutput, 3000))
		}
	}
	for _, f := range pending {
		if f.note == "" {
			f.note = "the job ended before its moment"
		}
	}
	r.watch.stop()
	return r.finish()
}

// startFlower starts flower through the front (cont: flower continue).
func (r *round) startFlower(cont bool) flowerHandle {
	r.runs++
	r.mu.Lock()
	r.starts = append(r.starts, time.Now())
	r.mu.Unlock()
	h, err := r.front.start(r, cont)
	if err != nil {
		r.t.Fatalf("start flower: %v", err)
	}
	what := "flower TASK"
	if cont {
		what = "flower continue"
	}
	r.note("%s started (pid %d, run %d)", what, h.pid(), r.runs)
	return h
}

// runStartedBefore returns when the last flower run that started before t
// started.
func (r *round) runStartedBefore(t time.Time) time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	var last time.Time
	for _, s := range r.starts {
		if s.Before(t) {
			last = s
		}
	}
	return last
}

// waitTrigger waits, while flower runs, for the moment of a pending fault
// (its trigger, then its delay) and returns that fault; nil when flower
// exited first.
func (r *round) waitTrigger(h flowerHandle, pending []*fault) *fault {
	deadline := time.After(flowerLimit)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-h.exited():
			return nil
		case <-deadline:
			return nil // waitExit reports it
		case <-tick.C:
			for _, f := range pending {
				if !r.model.reached(f) {
					continue
				}
				select {
				case <-h.exited():
					return nil
				case <-time.After(f.delay):
					return f
				}
			}
		}
	}
}

func (r *round) waitExit(h flowerHandle, limit time.Duration) bool {
	select {
	case <-h.exited():
		return true
	case <-time.After(limit):
		return false
	}
}

// inject carries out a process fault on the running flower.
func (r *round) inject(h flowerHandle, f *fault) {
	at := r.model.mainRequests()
	switch f.kind {
	case faultKillFlower, faultTermFlower:
		sig := syscall.SIGKILL
		if f.kind == faultTermFlower {
			sig = syscall.SIGTERM
		}
		if err := syscall.Kill(h.pid(), sig); err != nil {
			f.note = "flower was gone: " + err.Error()
			return
		}
	case faultKillHarness:
		var pid int
		deadline := time.Now().Add(3 * time.Second)
		for pid == 0 && time.Now().Before(deadline) {
			pid = r.harnessOf(h.pid())
			if pid == 0 {
				time.Sleep(20 * time.Millisecond)
			}
		}
		if pid == 0 {
			f.note = "no harness was running"
			r.note("%s: no harness was running", f.kind)
			return
		}
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			f.note = "the harness was gone: " + err.Error()
			return
		}
	}
	f.injected, f.injectedAt = true, time.Now()
	f.note = fmt.Sprintf("after request %d, %s", at, r.phase())
	r.note("injected %s (%s)", f.kind, f.note)
}

// phase says roughly where the step stood, from the API's view: what the
// last main-thread request was.
func (r *round) phase() string {
	reqs := r.srv.Requests()
	for i := len(reqs) - 1; i >= 0; i-- {
		if isMain(&reqs[i]) {
			if strings.Contains(reqs[i].LastUserText, handoffwriter.PromptTag) {
				return "last request a writing turn"
			}
			return fmt.Sprintf("last request work in session %s", clip(reqs[i].SessionID, 8))
		}
	}
	return "before any request"
}

// harnessOf returns the pid of flower's harness child, 0 if none runs.
func (r *round) harnessOf(flowerPID int) int {
	for _, p := range runProcs(r.marker) {
		if p.ppid == flowerPID && p.exe == r.harness {
			return p.pid
		}
	}
	return 0
}

// checkNoSurvivors: no process of the run outlives flower by more than
// outliveLimit. The run's processes carry the marker in their environment
// (the harness and every tool it starts inherit it); the reapers carry a
// clean one and are known by the harness tags seen while flower ran.
func (r *round) checkNoSurvivors(h flowerHandle) {
	gone := time.Now() // h has just been reaped
	var alive []runProc
	for {
		alive = r.survivors()
		if len(alive) == 0 || time.Since(gone) > outliveLimit {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if len(alive) == 0 {
		return
	}
	var desc []string
	for _, p := range alive {
		desc = append(desc, fmt.Sprintf("%d %s", p.pid, p.comm))
		_ = syscall.Kill(p.pid, syscall.SIGKILL) // ours: it carries the marker or tag
	}
	r.breach("no process outlives flower by more than 1s", "flower pid %d exited %d; still running %v later: %s",
		h.pid(), h.exitCode(), outliveLimit, strings.Join(desc, ", "))
}

func (r *round) survivors() []runProc {
	tags := r.watch.harnessTags()
	var out []runProc
	for _, p := range allProcs() {
		if p.hasEnv(r.marker) || (p.reaperTag != "" && tags[p.reaperTag]) {
			out = append(out, p)
		}
	}
	return out
}

// loadStep reads the manifest; an unreadable or invalid one is a breach.
func (r *round) loadStep() *manifest.StepResult {
	m, err := manifest.Load(manifest.Path(r.runDir))
	if err != nil {
		r.breach("manifest.json is valid JSON", "%v", err)
		return nil
	}
	st := m.Step(chaosStep)
	if st == nil {
		r.breach("the step is recorded", "manifest has no step %q", chaosStep)
	}
	return st
}

// keyInNoFile: the API key is in no file of the workspace (the run dir and
// notes included) or the harness's HOME.
func (r *round) keyInNoFile() {
	for _, dir := range []string{r.ws, r.home} {
		_ = filepath.Walk(dir, func(path string, fi os.FileInfo, err error) error {
			if err != nil || !fi.Mode().IsRegular() {
				return nil
			}
			b, err := os.ReadFile(path)
			if err == nil && strings.Contains(string(b), r.key) {
				r.breach("the API key is in no file", "%s holds it", path)
			}
			return nil
		})
	}
}
