package interactive

import (
	"context"
	"errors"
	"fmt"
	"github.com/flowerhq/flower/handoff"
	"log/slog"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/tidwall/gjson"

	"github.com/flowerhq/flower/handoffwriter"
	"github.com/flowerhq/flower/manifest"
	"github.com/flowerhq/flower/policy"
	"github.com/flowerhq/flower/supervisor"
	"github.com/flowerhq/flower/transcript"
)

type phase int

const (
	phaseWorking   phase = iota
	phaseCutting         // waiting for the turn to end at the message boundary
	phaseSubmitted       // the handoff prompt is typed; waiting for it to arrive
	phaseWriting         // the handoff-writing turn (exempt from the threshold, R15)
)

// setPhase moves the generation to p and says so in the log records.
func (g *genRun) setPhase(p phase) {
	g.phase = p
	g.logState.SetPhase(p.String())
}

func (p phase) String() string {
	switch p {
	case phaseCutting:
		return "cutting"
	case phaseSubmitted:
		return "submitted"
	case phaseWriting:
		return "writing"
	}
	return "working"
}

// Timings of the cut, from the harness's observed behaviour (package doc).
const (
	pollEvery = 200 * time.Millisecond
	// escAgain: a turn still running this long after Esc gets another one
	// (far enough apart not to read as a double press).
	escAgain = 3 * time.Second
	// idleTurnEnd: the state file saying "idle" this long ends a turn whose
	// end the transcript did not mark.
	idleTurnEnd = 1500 * time.Millisecond
	// clearWait outlasts the harness's Ctrl-C double-press window (~0.8 s).
	clearWait = 1200 * time.Millisecond
	pasteGap  = 40 * time.Millisecond
	settle    = 300 * time.Millisecond
	// startTyping: how long after the harness is up a long first prompt
	// is typed.
	startTyping = 1500 * time.Millisecond
	// keysAfter: a harness that writes no state file gets the person's keys
	// this long after it started.
	keysAfter = 3 * time.Second
	// keysAfterPrompt: a harness started with its first prompt gets the
	// person's keys once that prompt is in (its transcript appears), or
	// this long after it started. Its state file comes earlier in its
	// start-up than its input box does: keys released on the state file
	// alone were lost on a loaded machine.
	keysAfterPrompt = 20 * time.Second
)

// genRun is one generation: one harness process and its transcript.
type genRun struct {
	*run
	gen *manifest.Generation
	p   *proc
	log *slog.Logger
	loc locator

	fol       *transcript.Follower
	folCancel context.CancelFunc
	following string // the session whose transcript fol reads ("" if unknown)
	drained   bool   // the transcript was read to its end; follow no more
	meter     transcript.Meter
	lastMsg   string // the latest main-thread message id (one API reply, maybe many lines)
	turns     int    // main-thread API replies
	cost      float64
	lastStop  string // stop_reason of the latest main-thread reply
	warned    bool   // the near notice was shown (R10)
	ready     bool   // the harness's state file has appeared
	released  bool   // the person's keys go to this harness
	argPrompt bool   // the harness was started with its first prompt as an argument
	idleSince time.Time

	typedPrompt string // a first prompt too long for the command line

	phase        phase
	reason       string
	cutContext   int
	cutStart     time.Time
	deadline     time.Time
	escAt        time.Time // when to press Esc again; zero for never
	writingStart time.Time
	writing      strings.Builder
	writingTools int
	replies      int // replies seen in the writing turn
}

// follow watches the harness and its transcript until the generation ends.
func (g *genRun) follow(ctx context.Context) outcome {
	tick := time.NewTicker(pollEvery)
	defer tick.Stop()
	for {
		var events <-chan transcript.Event
		if g.fol != nil {
			events = g.fol.Events()
		}
		select {
		case <-g.p.Exited():
			return g.exited(ctx)
		case ev, ok := <-events:
			if !ok {
				// A read error; the next tick starts over from the top.
				g.log.Warn("transcript follower stopped", "err", g.fol.Err())
				g.folCancel()
				g.fol, g.following = nil, ""
				continue
			}
			if out, end := g.handle(ctx, &ev); end {
				return out
			}
		case <-tick.C:
			if out, end := g.tick(ctx); end {
				return out
			}
		case <-ctx.Done():
			return outcome{kind: outcomeInterrupted, why: context.Cause(ctx).Error()}
		}
	}
}

// exited ends the generation of a harness that is gone. The transcript is
// read to its end first: the reply being waited for may be in it.
func (g *genRun) exited(ctx context.Context) outcome {
	if out, end := g.drain(ctx, true); end {
		return out
	}
	why := "the harness exited"
	if err := g.p.Err(); err != nil {
		why += " (" + err.Error() + ")"
	}
	switch {
	case ctx.Err() != nil:
		return outcome{kind: outcomeInterrupted, why: context.Cause(ctx).Error()}
	case g.phase != phaseWorking:
		return g.handoffOutcome(handoffwriter.Handoff{}, why+" during the handoff")
	case g.p.Err() != nil && !endedByPerson(g.p.Err()):
		return outcome{kind: outcomeFailed, why: why}
	}
	g.log.Info("harness ended by the person")
	return outcome{kind: outcomeDone}
}

// drain stops following and folds in the lines still unread. With act set,
// they may end the generation as they would have while it ran.
func (g *genRun) drain(ctx context.Context, act bool) (outcome, bool) {
	if g.drained {
		return outcome{}, false
	}
	if g.fol == nil {
		g.locate() // a harness that exited at once may still have left a file
	}
	g.drained = true
	if g.fol == nil {
		return outcome{}, false
	}
	g.folCancel()
	var out outcome
	end := false
	for ev := range g.fol.Events() {
		if end || !act {
			g.observe(&ev)
			continue
		}
		out, end = g.handle(ctx, &ev)
	}
	g.fol = nil
	return out, end
}

// finish stops the harness if it still runs, reads the rest of its
// transcript, and books the generation's cost and turns.
func (g *genRun) finish() {
	g.gate.Hold()
	g.p.Stop(g.exitKeys)
	g.gate.Attach(nil)
	g.drain(context.Background(), false)
	g.st.AddUsage(g.cost, g.turns)
	g.st.SetContext(g.meter.Context)
	g.save()
	g.log.Info("harness stopped", "exit", fmt.Sprint(g.p.Err()), "context", g.meter.Context, "cost_usd", g.cost, "turns", g.turns)
}

// locate starts following the transcript once it can be found.
func (g *genRun) locate() {
	if g.drained {
		return
	}
	path, sid, ok := g.loc.find()
	if sid != "" && g.meter.SessionID == "" {
		g.meter.SessionID = sid
		g.sessionChanged()
	}
	if !ok {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	fol, err := transcript.Follow(ctx, path, transcript.FollowOptions{Logger: g.log})
	if err != nil {
		cancel()
		g.log.Warn("follow transcript", "path", path, "err", err)
		return
	}
	g.fol, g.folCancel, g.following = fol, cancel, sid
	g.used[path] = true
	g.logState.SetSession(sid)
	g.log.Info("transcript found", "path", path)
}

// switchSession follows the harness to a new session in the same process
// (/clear starts one, with a transcript of its own): the old session is
// burned, the meter starts over.
func (g *genRun) switchSession(sid string) {
	if !exists(transcript.FilePath(g.configDir, g.opts.Workspace, sid)) {
		if m, _ := filepath.Glob(filepath.Join(g.configDir, "projects", "*", sid+".jsonl")); len(m) == 0 {
			return // not written yet; look again at the next tick
		}
	}
	g.log.Info("the harness switched sessions", "from", g.following, "to", sid)
	g.folCancel()
	for ev := range g.fol.Events() {
		g.observe(&ev)
	}
	g.st.Retire(g.following)
	g.fol, g.following = nil, ""
	g.meter, g.lastMsg, g.warned = transcript.Meter{}, "", false
	g.st.SetContext(0)
	g.locate()
}

func (g *genRun) sessionChanged() {
	g.st.SetSessionID(g.meter.SessionID)
	g.save()
	g.emit(g.event(supervisor.KindSession))
}

// tick does what waits on time rather than on lines.
func (g *genRun) tick(ctx context.Context) (outcome, bool) {
	now := g.opts.Now()
	state, err := readState(g.configDir, g.p.PID())
	if err == nil {
		g.ready = true
		if state.Status == "idle" {
			if g.idleSince.IsZero() {
				g.idleSince = now
			}
		} else {
			g.idleSince = time.Time{}
		}
	}
	keysReady, wait := g.ready, keysAfter
	if g.argPrompt {
		keysReady, wait = g.following != "", keysAfterPrompt
	}
	if !g.released && g.phase == phaseWorking && g.typedPrompt == "" && (keysReady || now.Sub(g.p.start) >= wait) {
		// The harness is up: the person's keys go straight to it now.
		g.released = true
		if err := g.gate.Release(); err != nil {
			g.log.Debug("deliver held keys", "err", err)
		}
	}
	if err == nil && g.phase == phaseWorking && g.following != "" && state.SessionID != "" && state.SessionID != g.following {
		g.switchSession(state.SessionID)
	}
	if g.fol == nil {
		g.locate()
	}
	idle := !g.idleSince.IsZero() && now.Sub(g.idleSince) >= idleTurnEnd
	switch g.phase {
	case phaseWorking:
		if g.typedPrompt != "" && g.ready && now.Sub(g.p.start) >= startTyping {
			g.gate.Hold()
			err := Typist{Type: g.gate.Type, Gap: pasteGap, Settle: settle}.Submit(ctx, g.typedPrompt)
			g.typedPrompt = ""
			g.released = true
			_ = g.gate.Release()
			if err != nil {
				return outcome{kind: outcomeFailed, why: "type the first prompt: " + err.Error()}, true
			}
		}
	case phaseCutting:
		if now.After(g.deadline) {
			return g.handoffOutcome(handoffwriter.Handoff{}, fmt.Sprintf("the harness did not end the turn within %v of the cut", g.opts.CutTimeout)), true
		}
		if idle && now.Sub(g.cutStart) >= time.Second {
			return g.typeHandoff(ctx)
		}
		if !g.escAt.IsZero() && now.After(g.escAt) {
			g.log.Info("turn still running; pressing Esc again")
			_ = g.gate.Type([]byte(keyEsc))
			g.escAt = now.Add(escAgain)
		}
	case phaseSubmitted:
		if now.After(g.deadline) {
			return g.handoffOutcome(handoffwriter.Handoff{}, fmt.Sprintf("the handoff prompt did not reach the session within %v", g.opts.SubmitTimeout)), true
		}
	case phaseWriting:
		if now.After(g.deadline) {
			return g.handoffOutcome(handoffwriter.Handoff{}, fmt.Sprintf("the writing turn did not finish within %v", g.opts.WritingTimeout)), true
		}
		if idle && g.replies > 0 && g.idleSince.After(g.writingStart) {
			g.log.Info("writing turn ended (the harness is idle; no turn_duration line)")
			return g.writingDone(), true
		}
	}
	return outcome{}, false
}

func (g *genRun) event(kind supervisor.EventKind) supervisor.Event {
	p := g.opts.Policy
	return supervisor.Event{Kind: kind, Step: g.st.Name, Generation: g.gen.N, SessionID: g.meter.SessionID,
		Context: g.meter.Context, Window: p.Window, At: p.At(), WarnAt: p.WarnAt(), CostUSD: g.st.CostUSD}
}

// observe folds a line into the bookkeeping only (meter, session, cost).
func (g *genRun) observe(ev *transcript.Event) (contextChanged bool) {
	prev := g.meter.SessionID
	changed := g.meter.Observe(ev)
	if g.meter.SessionID != prev && g.meter.SessionID != "" {
		g.sessionChanged()
	}
	switch {
	case ev.Kind == transcript.KindAssistant && ev.MainThread() && !ev.Synthetic():
		if ev.MessageID == "" || ev.MessageID != g.lastMsg {
			g.turns++
			g.lastMsg = ev.MessageID
		}
		g.lastStop = ev.StopReason
	case ev.Type == "cost-state":
		g.cost = gjson.GetBytes(ev.Raw, "totalCostUSD").Float()
	}
	if changed {
		g.st.SetContext(g.meter.Context)
		g.save()
	}
	return changed
}

// handle folds one transcript line into the generation; end reports that
// the generation is over.
func (g *genRun) handle(ctx context.Context, ev *transcript.Event) (outcome, bool) {
	g.observe(ev)
	switch ev.Kind {
	case transcript.KindAssistant:
		if !ev.MainThread() {
			return outcome{}, false
		}
		if ev.Synthetic() {
			return g.apiError(ev)
		}
		if g.phase == phaseWriting {
			g.replies++
			if ev.Text != "" {
				g.writing.WriteString(ev.Text)
				g.writing.WriteString("\n")
			}
			g.writingTools += len(ev.ToolUses)
			return outcome{}, false
		}
		if ev.Text != "" {
			e := g.event(supervisor.KindText)
			e.Text = ev.Text
			g.emit(e)
		}
		for _, tu := range ev.ToolUses {
			e := g.event(supervisor.KindTool)
			e.Tool, e.Input = tu.Name, tu.Input
			g.emit(e)
		}
		g.check()
	case transcript.KindUser:
		if !ev.MainThread() {
			return outcome{}, false
		}
		text := userText(ev)
		switch {
		case g.phase == phaseWorking && g.st.Task == "" && isPrompt(text):
			// The person typed the task: it is what a degraded handoff
			// carries (R23).
			g.st.Task = text
			g.books().FreezeTask() // saves
		case g.phase == phaseSubmitted && strings.Contains(text, handoffwriter.PromptTag):
			g.setPhase(phaseWriting)
			g.writingStart = g.opts.Now()
			g.deadline = g.writingStart.Add(g.opts.WritingTimeout)
			g.log.Info("handoff prompt submitted; the writing turn runs")
		case ev.Interrupted && g.phase == phaseCutting:
			return g.typeHandoff(ctx)
		case ev.Interrupted && g.phase == phaseWriting:
			return g.handoffOutcome(handoffwriter.Handoff{}, "the writing turn was interrupted"), true
		}
	case transcript.KindSystem:
		switch ev.Subtype {
		case "turn_duration":
			g.emit(g.event(supervisor.KindTurn))
			switch g.phase {
			case phaseCutting:
				return g.typeHandoff(ctx)
			case phaseWriting:
				return g.writingDone(), true
			}
		case "compact_boundary":
			g.st.AddError("the harness compacted the context although handoff had switched auto-compact off")
			g.save()
		}
	}
	return outcome{}, false
}

// apiError handles a message the harness made up from an API error: an
// overflow cuts the generation without a writing turn (R26); other errors
// are the person's to see and deal with.
func (g *genRun) apiError(ev *transcript.Event) (outcome, bool) {
	if !handoffwriter.IsOverflow(ev.Text) {
		return outcome{}, false
	}
	switch g.phase {
	case phaseWriting:
		return g.handoffOutcome(handoffwriter.Handoff{}, "the writing turn failed: "+ev.Text), true
	case phaseWorking:
		g.cutContext = g.meter.Context
	}
	g.reason = manifest.ReasonOverflow
	g.gate.Hold()
	return g.handoffOutcome(handoffwriter.Handoff{}, "overflow: "+ev.Text), true
}

// check applies the thresholds after a main-thread round (R8, R10).
func (g *genRun) check() {
	if g.phase != phaseWorking {
		return
	}
	s := policy.State{Policy: g.opts.Policy, Context: g.meter.Context, SessionID: g.meter.SessionID, Warned: g.warned}
	if policy.NearDue(s) {
		g.warned = true
		e := g.event(supervisor.KindHandoff)
		e.Phase = supervisor.PhaseNear
		g.show(e)
	}
	if !policy.HandoffDue(s) {
		return
	}
	now := g.opts.Now()
	g.reason, g.cutContext = manifest.ReasonThreshold, g.meter.Context
	g.setPhase(phaseCutting)
	g.cutStart, g.deadline = now, now.Add(g.opts.CutTimeout)
	// From here on the person's keys wait: nothing they type may land in
	// the handoff prompt.
	g.gate.Hold()
	if g.lastStop == "end_turn" {
		g.log.Info("handoff due: the turn ends with this reply", "context", g.meter.Context, "at", g.opts.Policy.At())
		return
	}
	g.log.Info("handoff due: interrupting at the message boundary", "context", g.meter.Context, "at", g.opts.Policy.At(), "stop_reason", g.lastStop)
	if err := g.gate.Type([]byte(keyEsc)); err != nil {
		g.log.Warn("interrupt", "err", err)
	}
	g.escAt = now.Add(escAgain)
}

// typeHandoff clears the input and types the handoff prompt (R14).
func (g *genRun) typeHandoff(ctx context.Context) (outcome, bool) {
	g.escAt = time.Time{}
	g.setPhase(phaseSubmitted)
	e := g.event(supervisor.KindHandoff)
	e.Phase, e.Context = supervisor.PhaseWriting, g.cutContext
	g.show(e)
	// One Ctrl-C empties whatever sits in the input (a prompt the harness
	// put back after the interrupt, keys typed before the gate closed);
	// then wait out the double-press window so no later key reads as the
	// second press.
	err := g.gate.Type([]byte(keyCtrlC))
	if err == nil {
		err = sleep(ctx, clearWait)
	}
	if err == nil {
		prompt := handoff.WritingPrompt(g.cutContext, g.opts.Policy.Window, g.st.Task, g.opts.TaskCarry)
		err = Typist{Type: g.gate.Type, Gap: pasteGap, Settle: settle}.Submit(ctx, prompt)
	}
	if err != nil {
		if ctx.Err() != nil {
			return outcome{kind: outcomeInterrupted, why: context.Cause(ctx).Error()}, true
		}
		return g.handoffOutcome(handoffwriter.Handoff{}, "type the handoff prompt: "+err.Error()), true
	}
	g.deadline = g.opts.Now().Add(g.opts.SubmitTimeout)
	return outcome{}, false
}

// writingDone parses the writing turn's reply.
func (g *genRun) writingDone() outcome {
	h := handoffwriter.Parse(g.writing.String())
	why := ""
	if !h.Complete() {
		why = "the handoff is missing " + strings.Join(h.Missing(), ", ")
		if g.writingTools > 0 {
			why += fmt.Sprintf(" (the writing turn called %d tool(s))", g.writingTools)
		}
	}
	return g.handoffOutcome(h, why)
}

// handoffOutcome ends the generation with a handoff; a non-empty why
// degrades it (R23).
func (g *genRun) handoffOutcome(h handoffwriter.Handoff, why string) outcome {
	if g.reason == "" {
		g.reason = manifest.ReasonThreshold
	}
	if g.cutContext == 0 {
		g.cutContext = g.meter.Context
	}
	c := handoff.Cut{Handoff: h, Why: why, Reason: g.reason, Context: g.cutContext, Outcome: manifest.OutcomeNoWritingTurn}
	if !g.writingStart.IsZero() {
		c.WritingSeconds = g.opts.Now().Sub(g.writingStart).Seconds()
		c.Outcome = "" // derived by Freeze: written or degraded
	}
	if why != "" {
		g.log.Warn("handoff degrades", "why", why)
	}
	return outcome{kind: outcomeHandoff, cut: c}
}

// userText is the text of a user line: a plain string or its text blocks.
func userText(ev *transcript.Event) string {
	c := gjson.GetBytes(ev.Raw, "message.content")
	if c.Type == gjson.String {
		return c.String()
	}
	var parts []string
	c.ForEach(func(_, b gjson.Result) bool {
		if b.Get("type").String() == "text" {
			parts = append(parts, b.Get("text").String())
		}
		return true
	})
	return strings.Join(parts, "\n")
}

// isPrompt tells a prompt a person typed from what the harness writes as
// user lines of its own (tool results, reminders, notifications, commands).
func isPrompt(text string) bool {
	t := strings.TrimSpace(text)
	return t != "" && !strings.HasPrefix(t, "<") && !strings.HasPrefix(t, "[Request interrupted") &&
		!strings.Contains(t, handoffwriter.PromptTag)
}

// endedByPerson tells a harness a person stopped (an interrupt or hangup
// that reached it while it was exiting, say) from one that failed.
func endedByPerson(err error) bool {
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return false
	}
	ws, ok := ee.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && (ws.Signal() == syscall.SIGINT || ws.Signal() == syscall.SIGHUP)
}
