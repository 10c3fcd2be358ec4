// Package front owns the seam between the generation engine (package
// supervisor) and the kinds of harness child it drives: a stream-json
// process, the harness's own screen in a pty, and whatever comes next. The
// engine decides every rule of a handoff (thresholds, the cut, the writing
// turn, degrading, freezing, launching, retries); a front only starts a
// harness, translates what it shows into facts (fact.go), and carries out
// the engine's few commands, each of which says its purpose. A front that
// reads stream-json records (stdout, or a session's transcript file)
// translates them with a Translator. See docs/DESIGN.md, «Fronts».
package front

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/flowerhq/flower/policy"
	"github.com/flowerhq/flower/transcript"
)

// Spec says how to start the harness of one generation (or one retry of it).
type Spec struct {
	// Step and Generation name what the harness runs, for logs.
	Step       string
	Generation int
	// Path is the harness executable; Args are its flags as the front's
	// Capabilities.Prepare made them for this start (flower's own mode
	// flags are the front's business): the person's own, with what the
	// front holds for Hold merged in (DESIGN.md «Compaction levers»).
	Path string
	Args []string
	// Hold, when set, asks that the harness's own compaction stay off
	// (handoff on, the compact mode not auto): the harness's context is
	// flower's to hand off. nil leaves it as the harness's settings say.
	Hold  *Hold
	Model string
	// Resume is the session to resume; "" starts a fresh session.
	Resume string
	// Prompt is the generation's first prompt: the task, a handoff's
	// prompt block, or a continuation message. Session.Begin sends it, or
	// the front gives it to the harness at start. It is empty for a
	// harness started early (Capabilities.StartEarly): the engine then sends the
	// first prompt with Session.Send once it is known.
	Prompt string
	// Ours: Prompt is flower's own words (a handoff's prompt block, a
	// note after a crash), not the task as the person gave it. A front
	// with a screen may show flower's prompts briefly (DESIGN.md «Quiet
	// screen»); the person's own words it shows as they are.
	Ours bool
	// Early: the harness is started before its first prompt is known
	// (Capabilities.StartEarly), as a successor beside the writing turn;
	// its first turn is the first Send, of kind TurnFirst. A front whose
	// harness can also start with no prompt for a person to type into (its
	// own screen) tells the two apart by it.
	Early bool
	Dir   string
	Env   []string
	// Inbox is the step's inbox directory (package inbox), where a front
	// that takes a person's keys posts a handoff asked for; "" for none.
	Inbox string
	// RunDir is the run's directory, where a front may keep files of its
	// own for the harness to read (the screen's prompt files); "" for
	// none.
	RunDir string
	// Grace bounds each stage of stopping the harness.
	Grace  time.Duration
	Logger *slog.Logger
	// Now is the engine's clock: what the harness says as a clock time (a
	// limit's reset, "resets 12:04pm") is placed on its calendar. nil is
	// time.Now.
	Now func() time.Time
}

// Hold is how the engine wants the harness's own compaction held off.
type Hold struct {
	// Hook is flower's command (argv) that reports an attempt the harness
	// makes to compact anyway to the step's inbox (flower hook
	// precompact), for a front whose harness runs a hook before it
	// compacts; nil when nothing can record it: the hook then only blocks.
	Hook []string
}

// Launcher starts harness sessions. The engine calls Launch once per attempt
// of a generation and never reuses a Session.
type Launcher interface {
	Launch(ctx context.Context, s Spec) (Session, error)
	// Capabilities says what the front can do and who starts its turns.
	// The engine asks once, when it is built; the answer never changes.
	Capabilities() Capabilities
}

// Capabilities is everything the engine asks a front about, in one value.
type Capabilities struct {
	// StartEarly: the harness can be started before its first prompt is
	// known. Launch with an empty Spec.Prompt starts it idle, and the
	// engine's first Send is its first turn. The engine starts a successor
	// this way as soon as a handoff is certain, so that the harness's
	// start-up overlaps the writing turn (DESIGN.md «Warm successor»).
	StartEarly bool
	// Overlap: a successor's harness may start while the burned one is
	// still there. When no successor was started early, the engine then
	// launches the successor at once and stops the burned harness only
	// after (its writing turn is over); the front keeps the two apart
	// (the screen: the successor's shows once the burned one is gone).
	// Without it, the burned harness is stopped before the successor
	// starts (DESIGN.md «Warm successor»).
	Overlap bool
	// OutsideTurns: someone other than the engine starts the work turns
	// (a person at the harness's own screen, an application through the
	// relay). A turn's end is then not the step's end; the harness's
	// orderly exit is.
	OutsideTurns bool
	// PersonTypes: a person types into the harness's own screen: the
	// task may be what they typed (a UserMessage), and their keys wait
	// while flower types.
	PersonTypes bool
	// Queues: a turn sent while one runs waits in the harness and is taken
	// at the running turn's next message boundary: into that turn,
	// beside the next tool's result, or as the next turn once it has
	// ended (an interrupt ends it and leaves the queued turn to run). The
	// harness says when it takes each prompt (PromptTaken). The engine
	// then cuts a turn whose reply calls a tool by sending the writing
	// prompt at once rather than interrupting (DESIGN.md «Queued cut»).
	Queues bool
	// Resumes: a session the front ran can be started again by its id
	// (Spec.Resume), its context whole: a crashed attempt, a continue and
	// a wait go on in the same session. A front that cannot is never
	// asked to; the engine starts a fresh session from the step's latest
	// handoff (or its task) instead, and says so (DESIGN.md «Retries»).
	Resumes bool
	// CredentialFix says, in a few words, what the person fixes when the
	// API refuses the harness's credentials or it has none, given the
	// harness's environment (its key variables named, masked); nil for a
	// general word (DESIGN.md «Rejected credentials»).
	CredentialFix func(env []string) string
	// Prepare readies the harness for a run, once, as the engine is built
	// and before anything starts: it checks the person's harness
	// arguments (a bad settings file fails here, as the harness would
	// fail), and gives the environment and the arguments of each start.
	// nil: the person's arguments and the environment as they are
	// (DESIGN.md «Fronts»).
	Prepare func(Run) (Prepared, error)
	// ResumeRefused says whether a failed attempt's error (why) is the
	// harness refusing to resume a session it does not have, which no
	// retry of the resume mends; nil: the front's harness never says so.
	ResumeRefused func(why string) bool
	// Untested is the one line said when the version the harness reports
	// (Init) is newer than any flower was tested on, "" for a tested one;
	// nil: the front checks no version (DESIGN.md «Doctor»).
	Untested func(version string) string
}

// ErrExited is what a Prober's Probe returns, wrapped or not, when its
// harness exited before it answered: a later session asks again.
var ErrExited = errors.New("harness exited")

// Run is what the engine knows of a run as it readies the harness.
type Run struct {
	// Args are the person's own harness arguments.
	Args []string
	// Env is the run's base environment.
	Env []string
	// Workspace is the harness's working directory.
	Workspace string
	// Model is the model asked for (Spec.Model), "" for the harness's own.
	Model string
	// Compact is the run's compact mode as asked; Handoff: handoff is on.
	// The harness's own compaction is held off (a Spec's Hold) where
	// Compact.Effective(Handoff) is policy.CompactNoSummary.
	Compact policy.CompactMode
	Handoff bool
}

// Prepared is a run's harness, readied by Capabilities.Prepare.
type Prepared struct {
	// Env is the environment every harness of the run starts with.
	Env []string
	// Notice, when not empty, is said once before the run: the compact
	// setting works otherwise than handoff implies.
	Notice string
	// Window is the front's guess of the context window for the run's
	// model, until the harness says its own; 0: no guess
	// (policy.FallbackWindow). A --window given wins over it.
	Window int
	// Args gives one start's arguments (Spec.Args) for its Hold.
	Args func(hold *Hold) []string
}

// Prepared is c.Prepare of r, or r's arguments and environment as they are
// where c has none.
// A Prepared with no Env or Args takes r's for them.
func (c Capabilities) Prepared(r Run) (Prepared, error) {
	p := Prepared{Env: r.Env}
	if c.Prepare != nil {
		var err error
		if p, err = c.Prepare(r); err != nil {
			return Prepared{}, err
		}
	}
	if p.Env == nil {
		p.Env = r.Env
	}
	if p.Args == nil {
		args := r.Args
		p.Args = func(*Hold) []string { return args }
	}
	return p, nil
}

// Session is one running harness, as the engine sees it. Its methods are
// called from the engine's goroutine only, Next from one goroutine at a
// time.
type Session interface {
	// Next returns what the harness did next, as a fact (fact.go); every
	// turn, once started, ends with one TurnEnded. By calling Next the
	// engine says it has decided on the fact before: a front translates
	// its harness's next record only then (Records), so whatever the engine
	// did on the way (a cut's interrupt) is known to the translator before
	// the record is read (DESIGN.md «Fronts»). Next waits until ctx is
	// done; with a done ctx it returns a fact that is there already, or
	// ctx's error, and loses nothing. Once the harness is gone and all it
	// said was returned, Next returns io.EOF, and Exit says how it ended.
	Next(ctx context.Context) (Fact, error)
	// Begin starts the first turn with the Spec's prompt (a no-op for a
	// front that gave the prompt to the harness at start). A session
	// started early, with no prompt, is never begun: its first turn is
	// the first Send, of kind TurnFirst.
	Begin() error
	// Send runs a new turn of the same session: its kind says what it is
	// for, so that no front tells it from the prompt.
	Send(t Turn) error
	// The engine ends a running turn early for one of three purposes, each
	// its own command, so that no front has to guess which it is. Each
	// ends the running turn at the next message boundary, and the turn's
	// TurnEnded follows; a front may carry several out the same way.
	//
	// Cut ends a work turn because a handoff is due: the session is
	// retiring, and its next turn is the writing turn (DESIGN.md «The cut»).
	Cut() error
	// StopTool ends the writing turn because it called a tool: the engine
	// asks for the handoff again once (DESIGN.md «Writing turn»).
	StopTool() error
	// Cancel ends the running turn because the attempt ends without a
	// handoff: the caller cancelled (the first Ctrl-C or SIGTERM), or
	// the session is futile. No writing turn follows; EndAfterTurn or
	// Stop does.
	Cancel() error
	// EndAfterTurn asks the harness to exit on its own once the running
	// turn is over; its last facts, then io.EOF, follow.
	EndAfterTurn() error
	// Stop ends the harness, gracefully then forcefully, and returns once
	// it is gone. The engine decides nothing more on its facts: those
	// still unread stay readable with Next until io.EOF. Safe to call
	// twice.
	Stop()
	// Exit says how the harness ended; valid once Next returned io.EOF.
	Exit() Exit
}

// Exit is how a harness ended.
type Exit struct {
	// Why describes the end for a person ("the harness exited (signal:
	// killed): <last stderr line>").
	Why string
	// ByPerson: a person ended the harness in an orderly way.
	ByPerson bool
	// CostUSD is what the harness process cost in all, for a front that
	// learns it only as the harness exits (the harness's own screen says
	// it then, when no turn is left whose TurnEnded could carry it); 0
	// when every TurnEnded carried the cost so far.
	CostUSD float64
	// Skipped counts output lines that were not records (not JSON, or too
	// long) and were dropped.
	Skipped int
}

// Syncer is a Session whose front reads its harness's output apart from
// Next, and so can be behind it (the headless front's stdout reader): Sync
// returns once every record the harness wrote before the call is the
// session's own, for a Next with a done ctx to return its facts, or with
// ctx's error. It translates nothing: Next still translates each record
// only when the engine asks. The engine syncs before it judges what a
// harness asked of it on another channel while it waited, flower's
// PreCompact hook (DESIGN.md «Inbox»); Next is never running meanwhile.
type Syncer interface {
	Sync(ctx context.Context) error
}

// Prober is a Session that can report the harness's view of its context
// (the get_context_usage control request, read by transcript.ContextUsageOf):
// window, start-up floor, and whether auto-compact is on. Like Next, Probe is
// called from a goroutine of its own while the engine goes on using the
// session: the engine asks beside a running turn, never before the first
// prompt (DESIGN.md «Window from the harness»).
type Prober interface {
	Probe(ctx context.Context) (transcript.ContextUsage, error)
}
