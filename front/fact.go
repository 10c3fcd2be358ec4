package front

import (
	"time"

	"github.com/flowerhq/flower/handoffwriter"
	"github.com/flowerhq/flower/transcript"
)

// Fact is one thing a front saw its harness do, said in the engine's terms
// rather than in the harness's vocabulary. The engine decides everything
// from facts; a front decides nothing (DESIGN.md «Fronts»). Each fact is
// one of the types below.
type Fact interface{ isFact() }

// Init: the harness named its session, model or version (a stream-json
// init line, or the first lines of a session's transcript file). It comes
// before the session's first Round, and again when any of them changes.
type Init struct {
	SessionID string
	Model     string
	// Version is the harness's version; "" when it did not say.
	Version string
}

// Round is one API response of the harness: a reply of the main thread or
// of a subagent. A response the harness writes as several lines (one per
// content block) is one Round per line, all but the first with Repeat.
type Round struct {
	SessionID string
	// MainThread: the main thread's reply, not a subagent's.
	MainThread bool
	// Repeat: another line of the response the previous Round reported;
	// its Context was reported already.
	Repeat bool
	// Context is the prompt size that produced the response (input +
	// cache creation + cache read tokens; DESIGN.md «Context meter»).
	Context int
	// Synthetic: the harness made the reply up (an API error turned into
	// a message); it carries no usage and never moves the meter.
	Synthetic  bool
	Model      string
	Text       string
	ToolUses   []transcript.ToolUse
	StopReason string
	// MessageID is the response's id (every line of one response has
	// it), and Usage its token counts as the line says them: what an
	// estimate of the running turn's cost prices (DESIGN.md «Unattended:
	// limits, budget, deadline»). Zero for a synthetic reply.
	MessageID string
	Usage     transcript.Usage
}

// UserMessage is a user line of the session: a prompt (whoever gave it), a
// tool's result, or the harness's note that a turn was interrupted.
type UserMessage struct {
	MainThread  bool
	Text        string
	Interrupted bool
}

// PromptTaken: the harness took a prompt the engine sent, and said so as
// it took it (the stream-json harness's replay of the user line; DESIGN.md
// «Queued cut»). A front whose harness says this has
// Capabilities.Queues.
type PromptTaken struct {
	// MidTurn: the prompt was sent while a turn ran, and the harness took
	// it into that turn: its next request carries the prompt beside the
	// last tool's result, and the turn ends once, for both. Otherwise
	// the prompt starts a turn of its own.
	MidTurn bool
	Text    string
}

// Compacted: the harness compacted its context (a compact_boundary line),
// or said that its compaction keeps failing ("Autocompact is thrashing").
type Compacted struct {
	// Sign is what showed it, in the harness's words ("a compact_boundary
	// line"), for the step's errors and the notice.
	Sign string
	// Boundary: a compaction happened; Trigger, PreTokens and PostTokens
	// say which. Otherwise the harness only said it is thrashing.
	Boundary   bool
	Trigger    string
	PreTokens  int
	PostTokens int
}

// Retrying: the harness waits and asks the API again (a rate limit, an
// overload).
type Retrying struct {
	transcript.Retry
	// Blind: the front sees only that the same request went out again,
	// not why nor when the next one goes (the interactive front's
	// transcript file); Status, Delay and MaxRetries are then zero.
	Blind bool
	// Endpoint is where the request goes, when the front knows it better
	// than the edge does (the Codex front reads its provider's base_url);
	// "" otherwise.
	Endpoint string
}

// TurnEnded: the running turn is over, and how.
type TurnEnded struct {
	SessionID string
	How       Ending
	// Text is the turn's final text; for an error, the harness's message.
	Text string
	// Detail names the harness's own reason where it gave one (a
	// terminal reason, a result subtype), for messages.
	Detail string
	// CostUSD is what the harness process has cost so far, this turn
	// included (cumulative, as the harness reports it); Turns counts the
	// API round trips of this turn.
	CostUSD float64
	Turns   int
	// Windows is the context window the harness reports per model
	// (empty when it reports none).
	Windows map[string]int
	// Limit is what the harness said of the limit that ended the turn
	// (How is EndedLimited): what the turn's records said of it, merged
	// (a rate_limit_event's exact reset before the result's text), and
	// the wait the harness last announced for a 429 (RetryAfter).
	Limit *transcript.Limit
	// APIErrorStatus is the HTTP status of the API error that ended the
	// turn (a 403 the harness does not retry, say); 0 for none.
	APIErrorStatus int
	// NoCredentials: the turn ended because the harness holds no
	// credentials the API takes (none at all: no key, no login; or, where
	// the front sees no HTTP status, ones the API refused), which no
	// retry mends.
	NoCredentials bool
}

// Ending says how a turn ended.
type Ending int

const (
	// EndedOnOwn: the turn ended on its own, the model done with it.
	EndedOnOwn Ending = iota
	// EndedInterrupted: the front ended it (Cut, StopTool, Cancel).
	EndedInterrupted
	// EndedError: the turn failed (an API error, a refused session).
	EndedError
	// EndedOverflow: the prompt no longer fits the window; the session
	// cannot run another turn.
	EndedOverflow
	// EndedLimited: a usage or rate limit ended it (DESIGN.md «Limits»);
	// the session is intact.
	EndedLimited
)

func (e Ending) String() string {
	return [...]string{"on its own", "interrupted", "error", "overflow", "limit"}[e]
}

// SessionSwitched: the harness moved to a new session inside one process (a
// person's /clear): the old session is burned and the meter starts over.
type SessionSwitched struct{ From, To string }

// Output is one line the harness wrote, for programs that follow the run;
// the engine passes it on and never reads it. Echo: the line is the
// harness's echo of a prompt the engine sent (PromptTaken), flower's own
// words rather than the harness's, and is not passed on.
type Output struct {
	Raw  []byte
	Echo bool
}

func (Init) isFact()            {}
func (Round) isFact()           {}
func (UserMessage) isFact()     {}
func (PromptTaken) isFact()     {}
func (Compacted) isFact()       {}
func (Retrying) isFact()        {}
func (TurnEnded) isFact()       {}
func (SessionSwitched) isFact() {}
func (Output) isFact()          {}

// Turn is a turn the engine asks a session to run.
type Turn struct {
	Kind   TurnKind
	Prompt string
}

// TurnKind says what a turn is for, so that no front has to tell it from
// the prompt.
type TurnKind int

const (
	// TurnWork is a turn of the job: a continuation, a handoff's prompt
	// block, the task.
	TurnWork TurnKind = iota
	// TurnFirst is the first prompt of a successor started early
	// (Capabilities.StartEarly): its first turn, a work turn.
	TurnFirst
	// TurnWriting is the handoff-writing turn (asked again included): its
	// reply is the handoff document (DESIGN.md «Writing turn»).
	TurnWriting
)

func (k TurnKind) String() string { return [...]string{"work", "first", "writing"}[k] }

// Translator turns the records of a harness's stream-json output (or the
// lines of a session's transcript file, which speak the same vocabulary
// without result records) into facts. It keeps the little state that takes:
// the session, model and version named so far, the last response's id, and
// whether the front interrupted the running turn. Not safe for concurrent
// use: one goroutine feeds it.
type Translator struct {
	sessionID, model, version string
	lastMsg                   string
	interrupting              bool
	// replied: a main-thread reply came since the running turn began
	// (its init line); a prompt taken then is taken mid-turn.
	replied bool
	// limit is what the running turn's records said of a limit so far
	// (sawLimit), and retryAfter the wait the harness last announced for
	// a 429 in it: a limited TurnEnded carries them.
	limit      transcript.Limit
	sawLimit   bool
	retryAfter time.Duration
	// noCredentials: the running turn's main thread was told, in a reply
	// of the harness's own, that it has no credentials.
	noCredentials bool
	// Now dates a limit's reset given as a clock time; nil is time.Now.
	Now func() time.Time
}

// Interrupting tells the translator that the front ended the running turn
// itself: the turn's result, unless it ended on its own, is EndedInterrupted.
func (t *Translator) Interrupting() { t.interrupting = true }

// SessionID is the latest session the harness named.
func (t *Translator) SessionID() string { return t.sessionID }

func (t *Translator) now() time.Time {
	if t.Now != nil {
		return t.Now()
	}
	return time.Now()
}

// Facts translates one record, passing each fact it makes to out in order.
// A record with a line (Raw) yields its Output first.
func (t *Translator) Facts(ev *transcript.Event, out func(Fact)) {
	if ev.Raw != nil {
		out(Output{Raw: ev.Raw, Echo: ev.Replay})
	}
	if ev.SessionID != "" && ev.Kind != transcript.KindControlResponse && ev.Kind != transcript.KindInit {
		t.sessionID = ev.SessionID
	}
	if ev.Thrashing {
		out(Compacted{Sign: `"Autocompact is thrashing"`})
	}
	t.limitSeen(ev)
	switch ev.Kind {
	case transcript.KindInit:
		t.replied = false
		t.init(ev.SessionID, ev.Model, ev.Version, out)
	case transcript.KindAssistant:
		if ev.Version != "" { // a transcript file's line
			t.init(ev.SessionID, ev.Model, ev.Version, out)
		}
		r := Round{SessionID: t.sessionID, MainThread: ev.MainThread(), Context: ev.Usage.Context(),
			Synthetic: ev.Synthetic(), Model: ev.Model, Text: ev.Text, ToolUses: ev.ToolUses, StopReason: ev.StopReason,
			MessageID: ev.MessageID, Usage: ev.Usage}
		if r.MainThread && !r.Synthetic {
			r.Repeat = ev.MessageID != "" && ev.MessageID == t.lastMsg
			t.lastMsg = ev.MessageID
			t.replied = true
		}
		if r.Synthetic {
			r.Context, r.Usage = 0, transcript.Usage{}
			// Claude Code's reply when it has neither a key nor a login
			// ("Not logged in · Please run /login"), with no HTTP status.
			t.noCredentials = t.noCredentials || r.MainThread && ev.ErrorCode == "authentication_failed"
		}
		out(r)
	case transcript.KindUser:
		if ev.Version != "" {
			t.init(ev.SessionID, "", ev.Version, out)
		}
		if ev.Replay {
			out(PromptTaken{MidTurn: t.replied, Text: transcript.UserText(ev)})
			return
		}
		out(UserMessage{MainThread: ev.MainThread(), Text: transcript.UserText(ev), Interrupted: ev.Interrupted})
	case transcript.KindSystem:
		switch {
		case ev.Compact != nil:
			out(Compacted{Sign: "a compact_boundary line", Boundary: true, Trigger: ev.Compact.Trigger, PreTokens: ev.Compact.PreTokens, PostTokens: ev.Compact.PostTokens})
		case ev.Retry != nil:
			r := *ev.Retry
			if r.Status == 0 && r.Error == "unknown" {
				r.Error = "" // what the harness says of a request that got no answer: nothing
			}
			out(Retrying{Retry: r})
		}
	case transcript.KindResult:
		how, lim := t.ending(ev)
		if how == EndedLimited {
			lim = t.limitOfTurn(*lim)
		}
		noCreds := t.noCredentials && how == EndedError
		t.interrupting, t.limit, t.sawLimit, t.retryAfter, t.replied, t.noCredentials = false, transcript.Limit{}, false, 0, false, false
		out(TurnEnded{SessionID: t.sessionID, How: how, Text: ev.Result, Detail: firstOf(ev.TerminalReason, ev.Subtype),
			CostUSD: ev.TotalCostUSD, Turns: ev.NumTurns, Windows: ev.Windows, Limit: lim, APIErrorStatus: ev.APIErrorStatus,
			NoCredentials: noCreds})
	}
}

// limitSeen keeps what a record of the running turn (not its result) says
// of a limit: a rejected rate_limit_event, the synthetic 429 reply, an
// api_retry for a 429 (DESIGN.md «Limits»).
func (t *Translator) limitSeen(ev *transcript.Event) {
	if ev.Kind == transcript.KindResult {
		return
	}
	if d, rate, ok := transcript.RetryAfterOf(ev); ok {
		if rate {
			t.retryAfter = d
		}
		return
	}
	if l, ok := transcript.LimitOf(ev, t.now()); ok {
		t.limit = mergeLimit(t.limit, t.sawLimit, l)
		t.sawLimit = true
	}
}

// limitOfTurn is the limit a result says, merged after what the turn's
// records said of it.
func (t *Translator) limitOfTurn(l transcript.Limit) *transcript.Limit {
	m := mergeLimit(t.limit, t.sawLimit, l)
	m.RetryAfter = t.retryAfter
	return &m
}

// mergeLimit keeps what each record said of a limit: a usage limit's kind,
// the first exact reset (a rate_limit_event's epoch seconds come before
// the text's minute), the first window and message.
func mergeLimit(seen transcript.Limit, saw bool, l transcript.Limit) transcript.Limit {
	if !saw {
		return l
	}
	if l.Kind == transcript.LimitUsage {
		seen.Kind = l.Kind
	}
	if seen.ResetAt.IsZero() {
		seen.ResetAt = l.ResetAt
	}
	seen.Window = firstOf(seen.Window, l.Window)
	seen.Message = firstOf(seen.Message, l.Message)
	return seen
}

func (t *Translator) init(sid, model, version string, out func(Fact)) {
	changed := false
	if sid != "" && sid != t.sessionID {
		t.sessionID, changed = sid, true
	}
	if model != "" && model != "<synthetic>" && model != t.model {
		t.model, changed = model, true
	}
	if version != "" && version != t.version {
		t.version, changed = version, true
	}
	if changed {
		out(Init{SessionID: t.sessionID, Model: t.model, Version: t.version})
	}
}

// ending says how the turn a result (or, in a transcript file, a synthetic
// error reply) ends came to its end.
func (t *Translator) ending(ev *transcript.Event) (Ending, *transcript.Limit) {
	return EndingOf(ev, t.interrupting, t.now())
}

// EndingOf says how a turn ended, from its result record, or from the
// synthetic reply that carries its error in a transcript file: an overflow
// (DESIGN.md «Overflow path»), a limit (DESIGN.md «Limits»), another error,
// or its own end; interrupted, when the front ended it and it did not end
// on its own first.
func EndingOf(ev *transcript.Event, interrupted bool, now time.Time) (Ending, *transcript.Limit) {
	text := ev.Result
	if ev.Kind == transcript.KindAssistant {
		text = ev.Text
	}
	isError := ev.IsError || ev.Kind == transcript.KindAssistant
	switch {
	case ev.TerminalReason == "prompt_too_long" || ev.TerminalReason == "blocking_limit" ||
		(isError && handoffwriter.IsOverflow(text)):
		return EndedOverflow, nil
	}
	if lim, ok := transcript.LimitOf(ev, now); ok {
		return EndedLimited, &lim
	}
	if interrupted && !(!isError && ev.StopReason == "end_turn") {
		return EndedInterrupted, nil
	}
	if isError {
		return EndedError, nil
	}
	return EndedOnOwn, nil
}

func firstOf(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}
