package supervisor

import (
	"context"
	"fmt"
	"time"

	"github.com/flowerhq/flower/front"
	"github.com/flowerhq/flower/inbox"
	"github.com/flowerhq/flower/manifest"
)

// openInbox empties the step's inbox (what is there was left by an earlier
// flower) and hears it for as long as the step runs: a request wakes the
// engine as it is posted, and nothing wakes it while none is (DESIGN.md
// «Inbox»). A step whose inbox cannot be made or watched runs without
// one: its compactions are still blocked, only not recorded, and a
// handoff cannot be asked for.
func (s *stepRun) openInbox(name string) {
	rt := s.rt
	dir := inbox.Dir(rt.opts.RunDir, name)
	if err := inbox.Prepare(dir); err != nil {
		s.log.Warn("inbox unavailable: blocked compactions go unrecorded, flower handoff now cannot reach this step", "err", err)
		return
	}
	w, err := inbox.Watch(dir, rt.clock.Now(), !rt.opts.InboxPostsOnly, s.log)
	if err != nil {
		s.log.Warn("inbox cannot be watched: blocked compactions go unrecorded, flower handoff now cannot reach this step", "err", err)
		return
	}
	s.inboxDir, s.inbox, s.requests = dir, w, w.Requests()
}

func (s *stepRun) closeInbox() {
	if s.inbox != nil {
		s.inbox.Close()
		s.inbox = nil
	}
}

// hold is what the engine asks of the harness's own compaction: held off,
// with the hook that records an attempt (DESIGN.md «Compaction levers»);
// nil when it stays on.
func (s *stepRun) hold() *front.Hold {
	rt := s.rt
	if !rt.holds {
		return nil
	}
	h := &front.Hold{}
	if rt.opts.HookBinary != "" && s.inboxDir != "" {
		h.Hook = []string{rt.opts.HookBinary, "hook", "precompact", "--inbox", s.inboxDir}
	}
	return h
}

// syncWait bounds the wait for a front to read what its harness wrote
// before a hook asked, well inside the hook's own wait (levers.HookWait):
// a front that cannot (a harness that writes without pause) is judged on
// what it has read.
const syncWait = time.Second

// heard acts on a request from the inbox. What the harness said before it
// asked is folded in first: the request is judged against it (its context,
// its round). A compaction's request comes from the hook the harness runs
// and waits for, so everything the harness wrote before it is on its way
// already: the front is synced to it before the fold (DESIGN.md «Inbox»).
func (a *attemptRun) heard(r inbox.Request) (outcome, bool) {
	if r.Kind == inbox.KindCompact {
		a.syncFront()
	}
	if out, end := a.fold(); end {
		inbox.Done(a.inboxDir, r.Name)
		return out, true
	}
	return a.request(r)
}

// syncFront waits, up to syncWait on the engine's clock, until the front
// holds every record its harness wrote before now (front.Syncer).
func (a *attemptRun) syncFront() {
	ctx, cancel := context.WithCancel(a.ctx)
	defer cancel()
	dl := a.rt.after(syncWait, "sync")
	defer dl.stop()
	go func() {
		select {
		case <-dl.C():
			cancel()
		case <-ctx.Done():
		}
	}()
	if err := a.pull.sync(ctx); err != nil {
		a.log.Warn("the front did not read all its harness wrote before the hook ran; the request is judged on what it read", "err", err)
	}
}

// request acts on one message from the inbox. Its poster waits until
// it is dealt with: the hook, so that the harness goes on only once flower
// has cut (DESIGN.md «Inbox»).
func (a *attemptRun) request(r inbox.Request) (outcome, bool) {
	defer inbox.Done(a.inboxDir, r.Name)
	switch r.Kind {
	case inbox.KindCompact:
		return a.blockedCompaction(r)
	case inbox.KindHandoff:
		return a.handoffAsked(r)
	}
	return outcome{}, false
}

// blockedCompaction records a compaction flower's hook blocked. One asked
// for (a /compact) is answered with a handoff; so is the harness's second
// automatic attempt in a session, since it means the harness's own
// threshold is passed (DESIGN.md «Compaction asked for»).
func (a *attemptRun) blockedCompaction(r inbox.Request) (outcome, bool) {
	rt := a.rt
	ctx := a.context()
	a.st.AddBlockedCompaction(manifest.BlockedCompaction{At: r.At, Trigger: r.Trigger, Context: ctx, SessionID: r.Session})
	rt.save(a.st)
	a.log.Warn("the harness tried to compact; flower's hook blocked it", "trigger", r.Trigger, "context", ctx, "phase", a.state.phase())
	if r.Trigger == "auto" {
		a.autoBlocked++
	}
	if !a.working() || !a.backstopArmed() {
		return outcome{}, false
	}
	switch {
	case r.Trigger == "manual":
		a.notice("compaction was asked for (/compact) and blocked: flower hands off instead")
	case a.autoBlocked >= 2:
		a.notice("the harness tried again to compact on its own and was blocked: its threshold is passed, so flower hands off now")
	default:
		return outcome{}, false
	}
	return a.cutNow(r, manifest.ReasonCompactBlocked)
}

// handoffAsked hands off at the next message boundary because a person
// asked (DESIGN.md «Handoff on request»).
func (a *attemptRun) handoffAsked(r inbox.Request) (outcome, bool) {
	if _, waiting := a.waitingForWork(); !a.working() && !waiting {
		a.log.Info("a handoff was asked for while one is under way; nothing more to do", "from", r.From)
		return outcome{}, false
	}
	a.notice(fmt.Sprintf("a handoff was asked for (%s): handing off at the next message boundary", orFrom(r.From)))
	if !a.sawRound || a.meter.SessionID == "" {
		// Nothing to hand off yet: the cut waits for the first round.
		a.handoffWanted = true
		return outcome{}, false
	}
	return a.cutNow(r, manifest.ReasonRequested)
}

// cutNow cuts for a reason of the inbox's. A session with no turn running
// (a person's or an application's, between turns: idle) has nothing to
// interrupt: its writing turn starts at once. A turn someone started shows
// as its prompt or its first round (onUserMessage, onRound): a /compact an
// application sends is such a turn, and its end is waited for; one the
// harness runs as a command of its own screen is none.
//
// The request is taken (inbox.Done) only once the cut is sent, so that a
// hook holding the harness lets it go on only after the interrupt; with
// no turn to cut, it is taken before the writing prompt goes out, so that
// the harness is done with what it was doing (its /compact) when the
// prompt comes.
func (a *attemptRun) cutNow(r inbox.Request, reason string) (outcome, bool) {
	if _, idle := a.state.(*idle); idle {
		inbox.Done(a.inboxDir, r.Name)
	}
	return a.handoffDue(cutAt{reason: reason, context: a.context()})
}

// context is the session's context as last measured: this attempt's
// meter, or, before its first round (a resumed session), the step's.
func (a *attemptRun) context() int {
	if a.meter.Context == 0 {
		return a.st.Context
	}
	return a.meter.Context
}

func orFrom(from string) string {
	if from == "" {
		return "the inbox"
	}
	return from
}

func (a *attemptRun) notice(msg string) {
	a.log.Warn(msg)
	a.rt.emit(Event{Kind: KindNotice, Step: a.st.Name, Generation: a.gen.N, Text: msg})
}
