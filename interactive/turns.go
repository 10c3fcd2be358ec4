package interactive

import (
	"log/slog"
	"time"

	"github.com/tidwall/gjson"

	"github.com/flowerhq/flower/front"
	"github.com/flowerhq/flower/transcript"
)

// idleSettle: the harness's state file says "idle" before its last
// transcript lines of the turn are written; a turn whose end the
// transcript never marks (see endOnIdle) is reported ended once the
// harness has said idle and written nothing for this long, on the
// session's clock, so that a marker that is only late still says how it
// ended.
const idleSettle = 1500 * time.Millisecond

// turns is the interactive front's translation of what the harness
// states (its transcript lines, its state file's status, its exit) into
// facts, with what the front's own commands add to it (a prompt typed, an
// Esc pressed). It does no I/O and reads no clock: every call is given the
// moment it happens at, so that tests drive it with scripted lines on a
// fake clock (turns_test.go). The session calls it with its mu held.
//
// What it keeps is translation, not the engine's phase: the turn the
// transcript shows running (so that each ends with one TurnEnded, and how),
// and the commands carried out whose effect has not shown yet (a prompt
// typed that is not in the transcript yet; an Esc pressed whose turn has
// not ended).
type turns struct {
	log *slog.Logger
	// submitWithin: a prompt typed and not in the transcript after this
	// long is given up for lost (see due).
	submitWithin time.Duration

	tr front.Translator
	// turn is the turn the transcript shows running: from its prompt (or
	// a first reply) to its end; nil between turns.
	turn *turnRun
	// pending is the prompt the front typed (or is typing) that has not
	// shown up in the transcript yet.
	pending *pendingPrompt
	// escOnArrival: the engine asked to end the running turn while its
	// prompt was still on its way; Esc goes when it shows up.
	escOnArrival bool
	status       string    // the state file's latest
	idleAt       time.Time // the idle sign ends the running turn then; zero for never
	cost         float64   // the process's cost so far (cost-state lines)
	begun        bool      // a main-thread reply or a turn's end was read
	// request is the digest of the main thread's latest API request with
	// no reply read since, and retries how often it went out again.
	lastRequest string
	retries     int
}

// turnRun is what the transcript showed of the running turn.
type turnRun struct {
	replies  int    // the main thread's API responses
	lastStop string // stop_reason of its latest reply
	lastText string // text of its latest reply that had some
	esc      bool   // the front pressed Esc for it
	busy     bool   // the state file said the harness was at work during it
	idled    bool   // the state file said idle after it ran (see sawStatus)
}

// pendingPrompt is a prompt the front typed, on its way to the transcript.
type pendingPrompt struct {
	kind front.TurnKind
	text string    // as typed, spaces squeezed (promptText)
	by   time.Time // it must have shown up by then; zero while typing
	// first: the prompt given on the harness's command line, which the
	// first prompt line is, whatever the harness made of its text.
	first bool
}

// resumed makes sid the session running until a line says otherwise.
func (u *turns) resumed(sid string) {
	u.tr.Facts(&transcript.Event{Kind: transcript.KindInit, SessionID: sid}, func(front.Fact) {})
}

// named takes the session the harness's state file names, when no line
// has named one yet: the harness names its session there as it starts,
// before any prompt, while its transcript is on disk only about when the
// first prompt's request leaves (DESIGN.md «Screen turns»; the session
// passes it on only for a harness flower gave its first prompt). The
// transcript's lines name it again, with the model and version.
func (u *turns) named(sid string) (facts []front.Fact) {
	if u.tr.SessionID() != "" {
		return nil
	}
	u.tr.Facts(&transcript.Event{Kind: transcript.KindInit, SessionID: sid}, func(f front.Fact) { facts = append(facts, f) })
	return facts
}

// interrupt says whether the running turn gets an Esc now: "" for yes,
// else why not (see session.interrupt).
func (u *turns) interrupt() (skip string) {
	t := u.turn
	switch {
	case t == nil && u.pending != nil:
		u.escOnArrival = true
		return "its prompt has not shown up yet; Esc goes when it does"
	case t == nil:
		return "no turn is running"
	case t.esc:
		return "Esc was pressed for this turn already"
	case t.lastStop == "end_turn":
		return "the turn's last reply ended it"
	}
	// The translator is told too, although the transcript has no result
	// line for it to read: the turn's end is read here, with t.esc.
	t.esc = true
	u.tr.Interrupting()
	return ""
}

// typed records how typing p went, at now: a prompt that could not be
// typed is no longer awaited; one typed is awaited for submitWithin.
func (u *turns) typed(p *pendingPrompt, err error, now time.Time) {
	if u.pending != p {
		return
	}
	if err != nil {
		u.pending = nil
	} else {
		p.by = now.Add(u.submitWithin)
	}
}

// next is the earliest moment due has something to do; zero for none.
func (u *turns) next() time.Time {
	next := u.idleAt
	if p := u.pending; p != nil && !p.by.IsZero() && (next.IsZero() || p.by.Before(next)) {
		next = p.by
	}
	return next
}

// due does what waits on the clock, at now: the idle sign ends the running
// turn; a typed prompt that did not show up is given up. The latter makes
// no fact: the harness stated nothing, and the engine's own deadline for
// the turn it sent (the writing, cut or turn timeout) judges it
// (DESIGN.md «Screen turns»); a prompt that shows up later starts a turn
// as a person's would.
func (u *turns) due(now time.Time) []front.Fact {
	if p := u.pending; p != nil && !p.by.IsZero() && !now.Before(p.by) {
		u.pending, u.escOnArrival = nil, false
		u.log.Warn("the typed prompt did not show up in the transcript; the engine's deadline judges its turn",
			"turn", p.kind.String(), "within", u.submitWithin)
	}
	switch t := u.turn; {
	case t == nil:
		u.idleAt = time.Time{}
	case !u.idleAt.IsZero() && !now.Before(u.idleAt):
		u.log.Info("the turn ended: the harness is idle and its transcript marked no end")
		return []front.Fact{u.endOnIdle(t)}
	}
	return nil
}

// quiet: no turn runs and no typed prompt is on its way.
func (u *turns) quiet() bool { return u.turn == nil && u.pending == nil }

// sawStatus takes what the state file says of the harness at now: at work
// (see working) or "idle". Idle after a turn that ran (or whose last reply
// ended it) is a sign of its end; the transcript has idleSettle to say how
// (see endOnIdle).
func (u *turns) sawStatus(status string, now time.Time) {
	u.status = status
	t := u.turn
	switch {
	case t == nil:
	case working(status):
		t.busy = true
		u.idleAt = time.Time{}
	case status == "idle" && (t.busy || t.lastStop == "end_turn") && u.idleAt.IsZero():
		u.idleAt, t.idled = now.Add(idleSettle), true
	}
}

// endOnIdle ends a turn the harness said it is done with (its state file
// says idle) while its transcript marked no end: no turn_duration line,
// which it leaves out, for one, when the turn ended otherwise than
// "completed", or while background work it started still runs. How it
// ended is read from what the transcript did show.
func (u *turns) endOnIdle(t *turnRun) front.TurnEnded {
	switch {
	case t.lastStop == "end_turn":
		return u.endTurn(front.EndedOnOwn, t.lastText, "idle with no turn_duration line", nil)
	case t.esc:
		return u.endTurn(front.EndedInterrupted, "", "idle after Esc, with no interrupt note", nil)
	default:
		return u.endTurn(front.EndedError, "the harness went idle without ending the turn in its transcript", "idle with no end of the turn", nil)
	}
}

// endTurn reports the running turn ended.
func (u *turns) endTurn(how front.Ending, text, detail string, lim *transcript.Limit) front.TurnEnded {
	t := u.turn
	u.turn, u.idleAt = nil, time.Time{}
	u.begun = true
	return front.TurnEnded{SessionID: u.tr.SessionID(), How: how, Text: text, Detail: detail,
		CostUSD: u.cost, Turns: t.replies, Limit: lim}
}

// exited ends what the harness's exit ended: a turn still running (its
// transcript marked no end before the harness went), on its own if its
// last reply ended it.
func (u *turns) exited() []front.Fact {
	t := u.turn
	if t == nil {
		if u.cost > 0 {
			// The screen says what the process cost only as it exits,
			// when no turn is left whose end could carry it: Exit
			// carries it.
			u.log.Info("the harness's cost at its exit", "cost_usd", u.cost)
		}
		return nil
	}
	if t.lastStop == "end_turn" {
		// Its last reply ended it; the harness went before its
		// transcript marked the end (see endOnIdle).
		return []front.Fact{u.endTurn(front.EndedOnOwn, t.lastText, "exited after the last reply, with no turn_duration line", nil)}
	}
	how := front.EndedError
	if t.esc {
		how = front.EndedInterrupted
	}
	return []front.Fact{u.endTurn(how, "the harness exited before the turn ended", "exited during the turn", nil)}
}

// line turns one transcript line, read at now, into facts: the
// Translator's, and the end of a turn where the line marks one (the file
// has no result lines). esc: the line is the prompt of a turn the engine
// asked to end while it was on its way; its Esc is due now.
func (u *turns) line(ev *transcript.Event, now time.Time) (facts []front.Fact, esc bool) {
	add := func(f front.Fact) { facts = append(facts, f) }
	u.tr.Facts(ev, func(f front.Fact) {
		add(f)
		r, ok := f.(front.Round)
		if ok && r.MainThread {
			u.begun = true
		}
		if ok && r.MainThread && !r.Synthetic && !r.Repeat {
			u.running().replies++
		}
	})
	if u.turn != nil && !u.idleAt.IsZero() {
		// The harness is still writing the turn down.
		u.idleAt = now.Add(idleSettle)
	}
	switch {
	case ev.Type == "cost-state":
		u.cost = gjson.GetBytes(ev.Raw, "totalCostUSD").Float()
	case ev.Type == "api-request":
		u.request(ev, add)
	case ev.Kind == transcript.KindAssistant && ev.MainThread():
		u.lastRequest, u.retries = "", 0
		u.reply(ev, now, add)
	case ev.Kind == transcript.KindUser && ev.MainThread():
		esc = u.user(ev, add)
	case ev.Kind == transcript.KindSystem && ev.Subtype == "turn_duration":
		if t := u.turn; t != nil {
			add(u.endTurn(front.EndedOnOwn, t.lastText, "", nil))
		}
	}
	return facts, esc
}

// request takes an "api-request" line: the harness's record of a request
// it sent. The main thread's request sent again, the same bytes with no
// reply between, is a retry of the harness's own (2.1.328 writes one line
// per try, and says why only on its screen).
func (u *turns) request(ev *transcript.Event, add func(front.Fact)) {
	if gjson.GetBytes(ev.Raw, "querySource").String() != "repl_main_thread" {
		return
	}
	digest := gjson.GetBytes(ev.Raw, "requestDigest").String()
	if digest != "" && digest == u.lastRequest {
		u.retries++
		add(front.Retrying{Retry: transcript.Retry{Attempt: u.retries}, Blind: true})
		return
	}
	u.lastRequest, u.retries = digest, 0
}

// reply takes a main-thread reply of the running turn.
func (u *turns) reply(ev *transcript.Event, now time.Time, add func(front.Fact)) {
	t := u.running()
	if ev.Synthetic() {
		// The harness turned an API error into a reply: the turn ended in
		// it (front.EndingOf tells an overflow or a limit from the rest).
		how, lim := front.EndingOf(ev, t.esc, now)
		end := u.endTurn(how, ev.Text, "the harness's error reply", lim)
		// No HTTP status in the file: "authentication_failed" is a key
		// the API refused, or none at all.
		end.NoCredentials = how == front.EndedError && ev.ErrorCode == "authentication_failed"
		add(end)
		return
	}
	t.lastStop = ev.StopReason
	if ev.Text != "" {
		t.lastText = ev.Text
	}
	if u.status == "idle" && t.lastStop == "end_turn" && u.idleAt.IsZero() {
		// The state file said idle before this reply was read: the file
		// and the transcript are read apart, and either may come first.
		u.idleAt, t.idled = now.Add(idleSettle), true
	}
}

// user takes a main-thread user line: an interrupt's note ends the turn, a
// prompt starts one (the pending prompt's, when it is that).
func (u *turns) user(ev *transcript.Event, add func(front.Fact)) (esc bool) {
	text := transcript.UserText(ev)
	switch {
	case ev.Interrupted:
		if t := u.turn; t != nil {
			who := "a person's Esc"
			if t.esc {
				who = "flower's Esc"
			}
			u.log.Info("the turn was interrupted", "by", who)
			add(u.endTurn(front.EndedInterrupted, "", text, nil))
		}
	case isPrompt(ev, text):
		if t := u.turn; t != nil && t.idled {
			// The harness said idle after the running turn, and a new
			// prompt came before its transcript marked that turn's end:
			// the turn is over, as the idle sign would have told.
			add(u.endOnIdle(t))
		}
		if p := u.pending; p != nil && (p.first || promptArrived(p.text, text)) {
			u.pending = nil
			u.log.Info("the typed prompt arrived; its turn runs", "turn", p.kind.String())
		}
		t := u.running()
		if u.escOnArrival && !t.esc {
			u.escOnArrival, t.esc, esc = false, true, true
			u.tr.Interrupting()
		}
	}
	return esc
}

// running is the running turn, begun now if none was: a prompt or a reply
// of the main thread shows that one runs.
func (u *turns) running() *turnRun {
	if u.turn == nil {
		u.turn = &turnRun{busy: working(u.status)}
	}
	return u.turn
}

// switched makes sid the running session (a person's /clear).
func (u *turns) switched(sid string) { u.resumed(sid) }
