package supervisor

import (
	"fmt"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/flowerhq/flower/inbox"
	"github.com/flowerhq/flower/levers"
	"github.com/flowerhq/flower/manifest"
)

// inboxPoll is how often the step's inbox is read when it cannot be
// watched (DESIGN.md «Inbox»): the system has no watch left to give, or the
// engine runs in a testing/synctest bubble, whose fake clock cannot wait on
// a watch (a goroutine blocked on one is not durably blocked). It is read on
// the engine's clock.
const inboxPoll = 100 * time.Millisecond

// openInbox empties the step's inbox (what is there was left by an earlier
// flower) and reads it for as long as the step runs: whenever a request
// file appears in it (fsnotify), or every inboxPoll on the engine's clock
// when it cannot be watched. A step whose inbox cannot be made runs without
// one: its compactions are still blocked, only not recorded, and a handoff
// cannot be asked for.
func (s *stepRun) openInbox(name string) {
	rt := s.rt
	dir := inbox.Dir(rt.opts.RunDir, name)
	if err := inbox.Prepare(dir); err != nil {
		s.log.Warn("inbox unavailable: blocked compactions go unrecorded, flower handoff now cannot reach this step", "err", err)
		return
	}
	s.inboxDir = dir
	s.requests = make(chan inbox.Request, 64)
	stop := make(chan struct{})
	s.inboxStop = stop
	rd := inbox.NewReader(dir, rt.clock.Now(), s.log)
	log := s.log
	scan := func() {
		for _, r := range rd.Scan() {
			select {
			case s.requests <- r:
			default:
				log.Warn("inbox: too many requests waiting; dropped one", "kind", r.Kind)
				inbox.Done(dir, r.Name)
			}
		}
	}
	var w *fsnotify.Watcher
	if !rt.pollInbox {
		var err error
		if w, err = fsnotify.NewWatcher(); err == nil {
			if err = w.Add(dir); err != nil {
				w.Close()
				w = nil
			}
		}
		if err != nil {
			log.Warn("inbox: cannot watch it; reading it every "+inboxPoll.String(), "err", err)
		}
	}
	if w != nil {
		go func() {
			defer w.Close()
			scan() // what came before the watch
			for {
				select {
				case <-stop:
					return
				case ev, ok := <-w.Events:
					if !ok {
						return
					}
					if ev.Has(fsnotify.Create) || ev.Has(fsnotify.Rename) {
						scan()
					}
				case err, ok := <-w.Errors:
					if !ok {
						return
					}
					// An overflowed queue lost events: read what is there.
					log.Warn("inbox: watch error; reading it now", "err", err)
					scan()
				}
			}
		}()
		return
	}
	go func() {
		for {
			t := rt.clock.NewTimer(inboxPoll)
			select {
			case <-stop:
				t.Stop()
				return
			case <-t.C():
				scan()
			}
		}
	}()
}

func (s *stepRun) closeInbox() {
	if s.inboxStop != nil {
		close(s.inboxStop)
		s.inboxStop = nil
	}
}

// harnessArgs are the harness's arguments for this step: with handoff on
// and compaction not asked for, the person's own with flower's
// compaction levers merged into their --settings (DESIGN.md «Compaction levers»).
func (s *stepRun) harnessArgs() []string {
	rt := s.rt
	if !rt.levers {
		return rt.opts.HarnessArgs
	}
	hook := levers.BlockOnly
	if rt.opts.HookBinary != "" && s.inboxDir != "" {
		hook = levers.Hook(rt.opts.HookBinary, "hook", "precompact", "--inbox", s.inboxDir)
	}
	return levers.Args(rt.opts.HarnessArgs, rt.ownSettings, hook)
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
	return a.cutNow(manifest.ReasonCompactBlocked, r.Trigger == "manual")
}

// handoffAsked hands off at the next message boundary because a person
// asked (DESIGN.md «Handoff on request»).
func (a *attemptRun) handoffAsked(r inbox.Request) (outcome, bool) {
	if !a.working() {
		a.log.Info("a handoff was asked for while one is under way; nothing more to do", "from", r.From)
		return outcome{}, false
	}
	a.notice(fmt.Sprintf("a handoff was asked for (%s): handing off at the next message boundary", orFrom(r.From)))
	if !a.sawRound || a.meter.SessionID == "" {
		// Nothing to hand off yet: the cut waits for the first round.
		a.handoffWanted = true
		return outcome{}, false
	}
	return a.cutNow(manifest.ReasonRequested, false)
}

// cutNow cuts for a reason of the inbox's. A session with no turn running
// (a person's or an application's, between turns) has nothing to
// interrupt: its writing turn starts at once, unless a turn's result is on
// its way (a blocked /compact ends in one).
func (a *attemptRun) cutNow(reason string, resultDue bool) (outcome, bool) {
	at := cutAt{reason: reason, context: a.context()}
	if _, idle := a.state.(*idle); idle && !resultDue {
		a.log.Info("handoff due with no turn running: writing at once", "reason", reason, "context", at.context)
		return a.startWriting(at)
	}
	a.cut(at)
	return outcome{}, false
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
