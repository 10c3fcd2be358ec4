package supervisor

// The unattended rows of the in-memory guarantees table (DESIGN.md
// «Unattended: limits, budget, deadline»): a limit waited out on the fake
// clock, a wait past --max-wait, the budget and the deadline reached
// mid-turn. Each runs inside the table's synctest bubble.

import (
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/flowerhq/flower/front/fronttest"
	"github.com/flowerhq/flower/handoffwriter"
	"github.com/flowerhq/flower/inbox"
	"github.com/flowerhq/flower/manifest"
)

func memUnattendedRows() []memGuarantee {
	return []memGuarantee{
		{"limit waited out: the same session goes on, no attempt", memLimitWaited},
		{"limit on the writing turn: waited out, the handoff whole", memLimitWriting},
		{"limit on the writing turn at the harness's own screen: waited out, the handoff whole", memLimitWritingScreen},
		{"limit past --max-wait: degraded handoff on disk, session live, continue finishes", memMaxWait},
		{"budget reached mid-turn: cut, the writing turn exempt, continue raises it", memBudget},
		{"deadline reached mid-tool: cut on the clock's timer", memDeadline},
		{"limit on a person-driven front: shown, not waited", memLimitShown},
		{"harness dies during a wait: a failed attempt, the retry resumes the session", memLimitDied},
		{"limit on the cut turn: waited out, then the writing turn", memLimitAtCut},
		{"handoff asked for during a wait: written once the limit lifts", memHandoffInWait},
		{"limit on the writing turn past --max-wait: continue resumes it in its writing turn", memMaxWaitWriting},
	}
}

// memUsageLimit is a request the API refuses with a usage limit that resets in d.
func memUsageLimit(d time.Duration) fronttest.Round {
	return fronttest.Round{Limit: &fronttest.Limit{Usage: true, ResetIn: d}}
}

// stopErr asserts err is a bound's stop with status.
func stopErr(t *testing.T, err error, status string) {
	t.Helper()
	var se *StopError
	if !errors.As(err, &se) || se.Status != status || !errors.Is(err, ErrStopped) {
		t.Fatalf("err %v: want a *StopError with status %s", err, status)
	}
}

func (r *memRun) limitEvents() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, ev := range r.events {
		if ev.Kind == KindLimitWait && ev.Phase != "waiting" {
			out = append(out, ev.Phase)
		}
	}
	return out
}

func memLimitWaited(t *testing.T) {
	r := newMemRun(t, [][]fronttest.Round{{memTool(50_000, "echo one >> work.txt"), memUsageLimit(5 * time.Minute), memDone(60_000)}}, memHandoff)
	start := time.Now()
	st, err := r.runtime(Options{Handoff: window(200_000)}).RunStep(t.Context(), memStep, memTask)
	if err != nil {
		t.Fatalf("RunStep: %v", err)
	}
	if took := time.Since(start); took < 5*time.Minute || took > 6*time.Minute {
		t.Errorf("the step took %s on the clock: want the 5 min wait and little more", took)
	}
	st = r.step()
	if st.Status != manifest.StatusSucceeded || st.Attempts != 0 || len(st.Generations) != 1 || len(st.Retired) != 0 {
		t.Fatalf("status %s, %d attempts, %d generations, retired %q: want succeeded in one session, no attempt", st.Status, st.Attempts, len(st.Generations), st.Retired)
	}
	w := st.Generations[0].LimitWaits
	if len(w) != 1 || w[0].Kind != "usage_limit" || w[0].End == nil || w[0].Stopped || w[0].ResetAt == nil || w[0].Until.Sub(*w[0].ResetAt) != resetSlack {
		t.Fatalf("limit waits %+v: want one usage-limit wait, ended, until its reset and the slack", w)
	}
	procs := r.front.Procs()
	if len(procs) != 1 {
		t.Fatalf("%d harnesses: the wait keeps the one", len(procs))
	}
	if p := procs[0].Prompts(); len(p) != 2 || p[1] != limitContinue {
		t.Errorf("the session's turns %q: want the task, then the continuation", p)
	}
	reqs := r.front.Requests()
	last := reqs[len(reqs)-1]
	if last.Session != st.SessionID || !slices.Contains(last.History, "tool: echo one >> work.txt") {
		t.Errorf("the request after the wait %+v: want the same session, carrying its history", last)
	}
	if ev := r.limitEvents(); !slices.Equal(ev, []string{"begun", "ended"}) {
		t.Errorf("limit events %q: want begun, ended", ev)
	}
	r.checkLineage(st)
}

func memLimitWriting(t *testing.T) {
	asked := 0
	r := newMemRun(t, memTwoGens, func(g int) fronttest.Round {
		if asked++; asked == 1 {
			return memUsageLimit(2 * time.Minute)
		}
		return memHandoff(g)
	})
	st, err := r.runtime(Options{Handoff: window(200_000)}).RunStep(t.Context(), memStep, memTask)
	if err != nil {
		t.Fatalf("RunStep: %v", err)
	}
	st = r.step()
	if st.Status != manifest.StatusSucceeded || st.Attempts != 0 || len(st.Generations) != 2 {
		t.Fatalf("status %s, %d attempts, %d generations: want succeeded over a handoff", st.Status, st.Attempts, len(st.Generations))
	}
	h := st.Generations[0].Handoff
	if h == nil || h.Degraded || h.Reason != manifest.ReasonThreshold {
		t.Fatalf("receipt %+v: want a whole handoff at the threshold", h)
	}
	if w := st.Generations[0].LimitWaits; len(w) != 1 || !w[0].Writing || w[0].End == nil {
		t.Errorf("limit waits %+v: want one, of the writing turn, ended", w)
	}
	if r.writings() != 2 {
		t.Errorf("%d writing asks: want the first and the one after the wait", r.writings())
	}
	r.checkLineage(st)
}

// memLimitWritingScreen is memLimitWriting where a person types the work
// turns (the interactive front): the writing turn is flower's there too,
// and is asked again once the limit lifts.
func memLimitWritingScreen(t *testing.T) {
	first := memDone(100_000)
	first.PersonNext = "PERSON-TURN-MARK: now the second part"
	last := memDone(20_000)
	last.PersonExits = true
	asked := 0
	r := newMemRun(t, [][]fronttest.Round{{first, memTool(155_000, "echo two >> work.txt")}, {last}}, func(g int) fronttest.Round {
		if asked++; asked == 1 {
			return memUsageLimit(2 * time.Minute)
		}
		return memHandoff(g)
	})
	personTypes(r.front)
	if _, err := r.runtime(Options{Handoff: window(200_000)}).RunStep(t.Context(), memStep, memTask); err != nil {
		t.Fatalf("RunStep: %v", err)
	}
	st := r.step()
	if h := st.Generations[0].Handoff; len(st.Generations) != 2 || h == nil || h.Degraded {
		t.Fatalf("%d generations, receipt %+v: want a whole handoff", len(st.Generations), h)
	}
	if w := st.Generations[0].LimitWaits; len(w) != 1 || !w[0].Writing || w[0].End == nil {
		t.Errorf("limit waits %+v: want one, of the writing turn, ended", w)
	}
	if r.writings() != 2 {
		t.Errorf("%d writing asks: want the first and the one after the wait", r.writings())
	}
}

func memMaxWait(t *testing.T) {
	r := newMemRun(t, [][]fronttest.Round{{memTool(50_000, "echo one >> work.txt"), memUsageLimit(3 * time.Hour), memDone(60_000)}}, memHandoff)
	_, err := r.runtime(Options{Handoff: window(200_000), MaxWait: 10 * time.Minute}).RunStep(t.Context(), memStep, memTask)
	stopErr(t, err, manifest.StatusLimited)
	st := r.step()
	session := st.Generations[0].SessionID
	if st.Status != manifest.StatusLimited || st.SessionID != session || session == "" || len(st.Retired) != 0 || st.Generations[0].Handoff != nil {
		t.Fatalf("status %s, session %q (generation's %q), retired %q: want limit_wait_exceeded with the session live", st.Status, st.SessionID, session, st.Retired)
	}
	w := st.Generations[0].LimitWaits
	if len(w) != 1 || !w[0].Stopped || w[0].HandoffPath == "" {
		t.Fatalf("limit waits %+v: want one stopped, with the degraded handoff's path", w)
	}
	b, _ := os.ReadFile(w[0].HandoffPath)
	if !strings.Contains(string(b), handoffwriter.DegradedMarker) || !strings.Contains(string(b), "did not lift within --max-wait") || !strings.Contains(string(b), "GUAR-TASK-MARK") {
		t.Errorf("the handoff on disk is not the degraded one with the reason and the task:\n%s", b)
	}
	if !slices.ContainsFunc(st.Errors, func(e string) bool { return strings.HasPrefix(e, "交接降级(") }) {
		t.Errorf("errors %q lack the degraded handoff's entry", st.Errors)
	}
	// The limit lifts; continue resumes the live session.
	if _, err := r.runtime(Options{Handoff: window(200_000)}).Continue(t.Context(), memStep, ""); err != nil {
		t.Fatalf("Continue: %v", err)
	}
	st = r.step()
	if st.Status != manifest.StatusSucceeded || len(st.Generations) != 1 || st.SessionID != session || len(st.Retired) != 0 {
		t.Fatalf("after continue: status %s, %d generations, session %q: want succeeded in session %q", st.Status, len(st.Generations), st.SessionID, session)
	}
	if procs := r.front.Procs(); len(procs) != 2 || procs[1].Spec.Resume != session {
		t.Errorf("continue's harness resumes %q: want %q", procs[len(procs)-1].Spec.Resume, session)
	}
	r.checkLineage(st)
}

func memBudget(t *testing.T) {
	// Each 100K round is priced about $0.031 (Sonnet's list price): the
	// second one of the turn reaches $0.05.
	plan := [][]fronttest.Round{{memTool(100_000, "echo one >> work.txt"), memTool(100_000, "echo two >> work.txt"), memTool(100_000, "echo three >> work.txt")}, {memDone(20_000)}}
	r := newMemRun(t, plan, memHandoff)
	_, err := r.runtime(Options{Handoff: window(200_000), MaxBudgetUSD: 0.05}).RunStep(t.Context(), memStep, memTask)
	stopErr(t, err, manifest.StatusBudget)
	st := r.step()
	if st.Status != manifest.StatusBudget || len(st.Generations) != 1 || st.BudgetUSD != 0.05 {
		t.Fatalf("status %s, %d generations, budget %v: want budget_reached after one", st.Status, len(st.Generations), st.BudgetUSD)
	}
	h := st.Generations[0].Handoff
	if h == nil || h.Degraded || h.Reason != manifest.ReasonBudget || h.Context != 100_000 {
		t.Fatalf("receipt %+v: want a whole handoff, reason budget, cut at the second round", h)
	}
	n := 0
	for _, q := range r.front.Requests() {
		if !q.Writing {
			n++
		}
	}
	if n != 2 {
		t.Errorf("%d working requests: want the cut at the second round's boundary", n)
	}
	if len(r.front.Procs()) != 1 {
		t.Errorf("%d harnesses: no successor starts when a bound stops the step", len(r.front.Procs()))
	}
	// continue with more budget starts the successor from the handoff.
	if _, err := r.runtime(Options{Handoff: window(200_000), MaxBudgetUSD: 1}).Continue(t.Context(), memStep, ""); err != nil {
		t.Fatalf("Continue: %v", err)
	}
	st = r.step()
	if st.Status != manifest.StatusSucceeded || len(st.Generations) != 2 || st.BudgetUSD != 1 {
		t.Fatalf("after continue: status %s, %d generations, budget %v: want succeeded in a successor, budget 1", st.Status, len(st.Generations), st.BudgetUSD)
	}
	if p := r.firstPrompt(st, 1); !strings.Contains(p, "NEXT-MARK-1") {
		t.Errorf("the successor's first prompt lacks the handoff:\n%s", p)
	}
	r.checkLineage(st)
}

func memDeadline(t *testing.T) {
	long := memTool(100_000, "sleep 600")
	long.Tool.Took = 10 * time.Minute
	r := newMemRun(t, [][]fronttest.Round{{memTool(50_000, "echo one >> work.txt"), long, memDone(120_000)}}, memHandoff)
	start := time.Now()
	_, err := r.runtime(Options{Handoff: window(200_000), MaxDuration: 30 * time.Second}).RunStep(t.Context(), memStep, memTask)
	stopErr(t, err, manifest.StatusDeadline)
	if took := time.Since(start); took > time.Minute {
		t.Errorf("the step took %s on the clock: the deadline's timer should cut the 10 min tool at 30 s", took)
	}
	st := r.step()
	h := st.Generations[0].Handoff
	if st.Status != manifest.StatusDeadline || st.Deadline == nil || h == nil || h.Degraded || h.Reason != manifest.ReasonDeadline {
		t.Fatalf("status %s, deadline %v, receipt %+v: want deadline_reached with a whole handoff", st.Status, st.Deadline, h)
	}
	r.checkLineage(st)
}

// memLimitShown: where a person starts the turns, a limit that ends one is
// told (its reset, for the terminal's title) and the engine waits nothing:
// the person decides when to go on.
func memLimitShown(t *testing.T) {
	lim := memUsageLimit(5 * time.Minute)
	lim.PersonNext = "PERSON-TURN-MARK: go on"
	last := memDone(30_000)
	last.PersonExits = true
	r := newMemRun(t, [][]fronttest.Round{{memTool(20_000, "echo one >> work.txt"), lim, last}}, memHandoff)
	r.front.PersonTypes = true
	start := time.Now()
	if _, err := r.runtime(Options{Handoff: window(200_000)}).RunStep(t.Context(), memStep, memTask); err != nil {
		t.Fatalf("RunStep: %v", err)
	}
	if took := time.Since(start); took >= 5*time.Minute {
		t.Errorf("the step took %s on the clock: the engine waited the limit out on a person's front", took)
	}
	st := r.step()
	if st.Status != manifest.StatusSucceeded || st.Attempts != 0 || len(st.Generations[0].LimitWaits) != 0 {
		t.Fatalf("status %s, %d attempts, waits %+v: want succeeded, no attempt, no wait", st.Status, st.Attempts, st.Generations[0].LimitWaits)
	}
	r.mu.Lock()
	var shown []Event
	for _, ev := range r.events {
		if ev.Kind == KindLimitWait {
			shown = append(shown, ev)
		}
	}
	r.mu.Unlock()
	if len(shown) != 1 || shown[0].Phase != "shown" || shown[0].Limit != "usage_limit" || shown[0].ResetAt == nil ||
		shown[0].ResetAt.Sub(start) < 5*time.Minute-time.Second || shown[0].ResetAt.Sub(start) > 5*time.Minute+time.Second {
		t.Fatalf("limit events %+v: want one shown usage limit resetting 5 min after the start", shown)
	}
	if p := r.front.Procs()[0].Prompts(); len(p) != 2 || p[1] != lim.PersonNext {
		t.Errorf("the harness's turns %q: want the task, then the person's", p)
	}
	r.checkEnds("1 limit", "1 on its own")
}

// memLimitDied: a harness that exits while a limit is waited out is a
// failed attempt like any other (the wait recorded as ended), and the
// retry resumes the same session.
func memLimitDied(t *testing.T) {
	r := newMemRun(t, [][]fronttest.Round{{memTool(50_000, "echo one >> work.txt"), memUsageLimit(5 * time.Minute), memDone(60_000)}}, memHandoff)
	go func() {
		time.Sleep(time.Minute) // well into the wait, on the bubble's clock
		r.front.Procs()[0].Kill()
	}()
	if _, err := r.runtime(Options{Handoff: window(200_000)}).RunStep(t.Context(), memStep, memTask); err != nil {
		t.Fatalf("RunStep: %v", err)
	}
	st := r.step()
	if st.Status != manifest.StatusSucceeded || st.Attempts != 1 || len(st.Generations) != 1 || len(st.Retired) != 0 {
		t.Fatalf("status %s, %d attempts, %d generations, retired %q: want succeeded after one failed attempt, in one session", st.Status, st.Attempts, len(st.Generations), st.Retired)
	}
	if w := st.Generations[0].LimitWaits; len(w) != 1 || w[0].End == nil || w[0].End.After(w[0].Until) {
		t.Errorf("limit waits %+v: want the one wait, ended when its harness died", w)
	}
	procs := r.front.Procs()
	if len(procs) != 2 || procs[1].Spec.Resume != st.SessionID {
		t.Fatalf("%d harnesses: want the retry resuming session %s", len(procs), st.SessionID)
	}
	r.checkLineage(st)
}

// memLimitAtCut: the request after the cut was decided (a /compact the
// hook blocked, before the round) meets a limit: the cut turn ends on it,
// the limit is waited out, and the writing turn starts once it lifts.
func memLimitAtCut(t *testing.T) {
	limitAtCut := memUsageLimit(2 * time.Minute)
	limitAtCut.PreCompact = []string{"manual"}
	r := newMemRun(t, [][]fronttest.Round{{memTool(50_000, "echo one >> work.txt"), limitAtCut}, {memDone(20_000)}}, memHandoff)
	if _, err := r.runtime(Options{Handoff: window(200_000)}).RunStep(t.Context(), memStep, memTask); err != nil {
		t.Fatalf("RunStep: %v", err)
	}
	st := r.step()
	if st.Status != manifest.StatusSucceeded || st.Attempts != 0 || len(st.Generations) != 2 {
		t.Fatalf("status %s, %d attempts, %d generations: want succeeded over a handoff, no attempt", st.Status, st.Attempts, len(st.Generations))
	}
	h := st.Generations[0].Handoff
	if h == nil || h.Degraded || h.Reason != manifest.ReasonCompactBlocked {
		t.Fatalf("receipt %+v: want a whole handoff for the blocked /compact", h)
	}
	if w := st.Generations[0].LimitWaits; len(w) != 1 || w[0].Writing || w[0].End == nil {
		t.Errorf("limit waits %+v: want one, of the cut turn, ended", w)
	}
	if n := r.writings(); n != 1 {
		t.Errorf("%d writing asks: want one, after the wait", n)
	}
	if p := r.firstPrompt(st, 1); !strings.Contains(p, "NEXT-MARK-1") {
		t.Errorf("the successor's first prompt lacks the handoff:\n%s", p)
	}
	r.checkLineage(st)
}

// memMaxWaitWriting: the writing turn meets a limit that outlasts
// --max-wait; the step stops with its session live, and continue resumes
// that session in its writing turn, so the handoff is whole.
func memMaxWaitWriting(t *testing.T) {
	asked := 0
	r := newMemRun(t, memTwoGens, func(g int) fronttest.Round {
		if asked++; asked == 1 {
			return memUsageLimit(3 * time.Hour)
		}
		return memHandoff(g)
	})
	_, err := r.runtime(Options{Handoff: window(200_000), MaxWait: 10 * time.Minute}).RunStep(t.Context(), memStep, memTask)
	stopErr(t, err, manifest.StatusLimited)
	session := r.step().Generations[0].SessionID
	if _, err := r.runtime(Options{Handoff: window(200_000)}).Continue(t.Context(), memStep, ""); err != nil {
		t.Fatalf("Continue: %v", err)
	}
	st := r.step()
	if st.Status != manifest.StatusSucceeded || len(st.Generations) != 2 || st.Generations[0].SessionID != session {
		t.Fatalf("after continue: status %s, %d generations: want succeeded over a handoff from session %q", st.Status, len(st.Generations), session)
	}
	// The successor started as the harness took the writing prompt was
	// stopped unused when the limit stopped the step.
	var prompted []*fronttest.Proc
	for _, p := range r.front.Procs() {
		if len(p.Prompts()) > 0 {
			prompted = append(prompted, p)
		} else if !p.Stopped() {
			t.Errorf("harness %d got no prompt and was not stopped", p.N)
		}
	}
	if len(prompted) != 3 || prompted[1].Spec.Resume != session {
		t.Fatalf("%d harnesses prompted: want the first, the resumed one of session %q, the successor", len(prompted), session)
	}
	if h := st.Generations[0].Handoff; h == nil || h.Degraded || h.Reason != manifest.ReasonThreshold {
		t.Fatalf("receipt %+v: want a whole handoff at the threshold, written by the resumed session", h)
	}
	if p := r.firstPrompt(st, 1); !strings.Contains(p, "NEXT-MARK-1") {
		t.Errorf("the successor's first prompt lacks the handoff:\n%s", p)
	}
	r.checkLineage(st)
}

// memHandoffInWait: a handoff asked for while a work turn's limit is
// waited out is kept: once the limit lifts, the session writes its
// handoff instead of going on with the work.
func memHandoffInWait(t *testing.T) {
	var r *memRun
	tool := memTool(50_000, "echo one >> work.txt")
	tool.Tool.Started = func(*fronttest.Proc) {
		go func() {
			time.Sleep(2 * time.Minute) // the limit's wait is on by then
			if _, err := inbox.Post(inbox.Dir(r.runDir, memStep), inbox.Request{Kind: inbox.KindHandoff, From: "flower handoff now"}); err != nil {
				t.Error(err)
			}
		}()
	}
	r = newMemRun(t, [][]fronttest.Round{{tool, memUsageLimit(5 * time.Minute), memDone(60_000)}, {memDone(20_000)}}, memHandoff)
	if _, err := r.runtime(Options{Handoff: window(200_000)}).RunStep(t.Context(), memStep, memTask); err != nil {
		t.Fatalf("RunStep: %v", err)
	}
	st := r.step()
	if st.Status != manifest.StatusSucceeded || st.Attempts != 0 || len(st.Generations) != 2 {
		t.Fatalf("status %s, %d attempts, %d generations: want succeeded over a handoff, no attempt", st.Status, st.Attempts, len(st.Generations))
	}
	if h := st.Generations[0].Handoff; h == nil || h.Degraded || h.Reason != manifest.ReasonRequested {
		t.Fatalf("receipt %+v: want a whole handoff, asked for", h)
	}
	if w := st.Generations[0].LimitWaits; len(w) != 1 || w[0].End == nil {
		t.Errorf("limit waits %+v: want one, ended", w)
	}
	if p := r.front.Procs()[0].Prompts(); len(p) != 2 || slices.Contains(p, limitContinue) {
		t.Errorf("the first session's turns %q: want the task, then the writing prompt, no continuation", p)
	}
	if p := r.firstPrompt(st, 1); !strings.Contains(p, "NEXT-MARK-1") {
		t.Errorf("the successor's first prompt lacks the handoff:\n%s", p)
	}
	r.checkLineage(st)
}
