package interactive

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/tidwall/gjson"

	"github.com/flowerhq/flower/front"
	"github.com/flowerhq/flower/harness"
	"github.com/flowerhq/flower/transcript"
)

// The pace of typing and the harness's screen protocol (package doc). These
// are the only waits of the front, each on the session's clock (the
// engine's, Options.Clock); none of them decides anything for the engine.
const (
	// clearWait outlasts the harness's Ctrl-C double-press window (about
	// 0.8 s) after the Ctrl-C that empties its input, so that no later key
	// reads as the second press, which exits.
	clearWait = 1200 * time.Millisecond
	// pasteGap parts two pieces of a prompt, so that the harness reads two
	// small pastes rather than one long one, which it collapses; settle
	// lets it take the last piece in before Enter submits.
	pasteGap = 40 * time.Millisecond
	settle   = 300 * time.Millisecond
	// burstSettle is settle for a prompt typed in one burst (Typist with
	// no Gap) into a screen that has read no key yet: the harness reads
	// the pieces in order, and Enter after them.
	burstSettle = 30 * time.Millisecond
	// exitGap parts the two Ctrl-C that end the harness: two presses, well
	// inside its double-press window, not one burst.
	exitGap = 150 * time.Millisecond
	// keysAfter: a harness whose screen never says it reads keys (it
	// turns bracketed paste on as it does) gets the person's keys, or a
	// first prompt too long for the command line, this long after it
	// started.
	keysAfter = 3 * time.Second
	// keysAfterPrompt: a harness given its first prompt (at start, or
	// typed for being too long for the command line) gets the person's
	// keys once that prompt's request is out and answered (a reply, or the
	// turn's end, is in the transcript), or this long after it started.
	// Its state file comes earlier in its start-up than its input box
	// does: keys released on the state file alone were lost on a loaded
	// machine; and keys released when the transcript appears (the prompt
	// is in, its request not yet out) could end the turn before its
	// request left (a held /exit).
	keysAfterPrompt = 20 * time.Second
)

type sessionConfig struct {
	configDir string
	cwd       string
	typed     string // a first prompt too long for the command line
	argPrompt bool   // the harness got its first prompt as an argument
	resumed   string
	// early holds what a harness started early draws until its first
	// prompt is typed (Front.launchEarly); nil for one started on the
	// screen. inbox is the step's, the front's once it has the screen.
	early *heldScreen
	inbox string
	// step and gen name the session's generation; runDir is its run's
	// (front.Spec.RunDir).
	step   string
	gen    int
	runDir string
	loc    locator
	probe  harness.Config // the same harness in stream-json mode (Probe)
}

// session is one harness on the person's terminal as a front.Session. One
// goroutine (follow) reads the transcript file, the harness's state file and
// its exit and queues them; Next translates them into facts (turns), one at
// a time, as the engine asks; the engine's commands become keys.
//
// What it keeps is translation, not the engine's phase: the turn the
// transcript shows running (so that each ends with one TurnEnded, and how),
// and the commands it carried out whose effect has not shown yet (a prompt
// it typed that is not in the transcript yet; an Esc it pressed whose turn
// has not ended).
type session struct {
	f   *Front
	p   *proc
	log *slog.Logger
	cfg sessionConfig
	ctx context.Context

	// Translation is Next's: what follow read, and its translation
	// (turns), on the engine's clock (Options.Clock); every wait below
	// runs on that clock. Its mu guards the session's state below too.
	*Translation
	wake chan struct{} // a command changed what follow waits for
	done chan struct{} // follow has returned

	// follow's own state
	fol       *transcript.Follower
	folCancel context.CancelFunc
	following string // the session whose transcript fol reads
	drained   bool
	screenUp  bool // the harness's screen reads keys (proc.pasteOn)
	named     bool // the session its state file names is queued
	released  bool // the person's keys go to this harness
	status    string

	held bool // an engine's command holds the person's keys
	// busy is open while the state file says the harness is at work
	// (working): closed then, and nil. A prompt is not typed into it
	// meanwhile (see Send).
	busy     chan struct{}
	typed    string // the long first prompt, until typed
	endAfter bool   // EndAfterTurn waits for the turn to end
	// given is when a harness started early got its first prompt; zero
	// until then, while the screen and the keys are another harness's.
	given time.Time

	stopOnce sync.Once
}

var (
	_ front.Session = (*session)(nil)
	_ front.Prober  = (*session)(nil)
)

func newSession(ctx context.Context, f *Front, p *proc, log *slog.Logger, cfg sessionConfig) *session {
	s := &session{f: f, p: p, log: log, cfg: cfg, ctx: ctx, typed: cfg.typed, wake: make(chan struct{}, 1), done: make(chan struct{})}
	s.translate(cfg.resumed)
	if cfg.argPrompt && cfg.resumed == "" {
		s.Given()
	}
	go f.guard(s.follow)
	return s
}

// translate gives s its translation, on the engine's clock: resumed, when
// set, is the session running until a line says otherwise.
func (s *session) translate(resumed string) {
	s.Translation = NewTranslation(s.f.opts.Clock, s.log, s.f.opts.SubmitTimeout, resumed, s.pressEsc)
	s.taken = s.nudge // follow's key release and exit keys look at the translation
}

// pressEsc ends the turn whose prompt showed up after the engine asked to
// end it.
func (s *session) pressEsc() {
	s.log.Info("ending the turn: Esc, now that its prompt showed up")
	if err := s.f.gate.Type([]byte(keyEsc)); err != nil {
		s.log.Debug("esc", "err", err)
	}
}

// Begin implements front.Session: the first prompt went to the harness at
// start (or is typed once its screen is up).
func (s *session) Begin() error { return nil }

// Probe implements front.Prober. The harness's screen cannot be asked what
// it knows of its context, but the same harness can: started with the same
// executable, flags, model, directory and environment in stream-json mode,
// it answers the context-usage request before any turn, without calling the
// API (DESIGN.md «Context usage request»), and is stopped again. Its window
// and auto-compact are this session's; its start-up floor is a fresh
// session's with the same tools, which is what the futile guard weighs.
func (s *session) Probe(ctx context.Context) (transcript.ContextUsage, error) {
	p, err := harness.Start(ctx, s.cfg.probe)
	if err != nil {
		return transcript.ContextUsage{}, fmt.Errorf("start the probe: %w", err)
	}
	defer p.Stop()
	resp, err := p.Control(ctx, "get_context_usage")
	if err != nil {
		return transcript.ContextUsage{}, err
	}
	return transcript.ContextUsageOf(resp), nil
}

// Cut, StopTool and Cancel implement front.Session. The harness's screen
// has one way to end a turn at a message boundary, Esc, so all three are
// carried out the same way (see interrupt).
func (s *session) Cut() error      { return s.interrupt("cut") }
func (s *session) StopTool() error { return s.interrupt("stop the tool") }
func (s *session) Cancel() error   { return s.interrupt("cancel") }

// interrupt ends the running turn as a person would: Esc, once. From here
// on the person's keys wait, so that nothing they type lands in flower's
// prompt. No Esc is pressed when none is needed, since Esc twice on the
// harness's screen goes up the conversation (its own "press esc twice"):
// when no turn runs (its TurnEnded went out before this call), when the
// turn's last reply already ended it (its end follows on its own), or when
// Esc was pressed for this turn already. A turn whose prompt is still on
// its way gets its Esc when the prompt shows up. A turn that does not stop
// is the engine's to judge (its cut timeout).
func (s *session) interrupt(purpose string) error {
	s.f.gate.Hold()
	s.mu.Lock()
	s.held = true
	s.mu.Unlock()
	skip := s.Interrupt()
	if skip != "" {
		s.log.Info("ending the turn: no key needed", "for", purpose, "why", skip)
		return nil
	}
	s.log.Info("ending the turn: Esc", "for", purpose)
	return s.f.gate.Type([]byte(keyEsc))
}

// Send implements front.Session: it types the prompt as the person would.
// One Ctrl-C first empties whatever sits in the input (a prompt the harness
// put back after the interrupt, keys typed before the gate closed); then
// the double-press window is waited out so no later key reads as the
// second press. The turn starts when the prompt shows up in the transcript.
// One that does not within Options.SubmitTimeout is logged and no longer
// awaited, and the engine hears nothing of it: the harness stated nothing,
// and the engine's own deadline for the turn judges it (DESIGN.md «Screen
// turns»). A prompt that shows up after that starts a turn as a person's
// would, which ends with its own TurnEnded.
func (s *session) Send(t front.Turn) error {
	// The handoff request and a successor's first prompt are flower's
	// own words: through a file (quiet.go). A work turn's may be the
	// person's (a continue's message), typed as it is.
	t.Prompt = s.f.prompts.quiet(s.cfg.runDir, s.cfg.step, s.cfg.gen, t.Kind, t.Prompt, t.Kind != front.TurnWork, s.log)
	if s.cfg.early != nil && t.Kind == front.TurnFirst {
		return s.sendFirst(t.Prompt)
	}
	s.f.gate.Hold()
	typed := s.Typing(t.Kind, t.Prompt)
	s.mu.Lock()
	s.held = true
	s.mu.Unlock()
	err := s.whenIdle()
	clears := 1
	if t.Kind == front.TurnWriting {
		// A writing turn often follows a command of the screen that
		// flower's hook blocked (a person's /compact): the harness puts
		// the command's text back into its input as it ends, which can
		// come after the first Ctrl-C on a loaded machine. A second one,
		// past the double-press window, empties that too.
		clears = 2
	}
	for i := 0; i < clears && err == nil; i++ {
		if err = s.f.gate.Type([]byte(keyCtrlC)); err == nil {
			err = front.Sleep(s.ctx, s.clock, clearWait)
		}
	}
	if err == nil {
		err = s.submit(typed, t.Prompt)
	} else {
		typed(err)
	}
	s.nudge()
	if err != nil {
		return fmt.Errorf("type the prompt: %w", err)
	}
	s.log.Info("prompt typed", "turn", t.Kind.String())
	return nil
}

// sendFirst gives a harness started early its first prompt, then the
// screen (DESIGN.md «Warm successor»). Its input is empty: no key has
// reached it, so nothing is cleared and no double-press window is waited
// out. The prompt is typed once its screen reads keys (it turned bracketed
// paste on; keys sent before that are lost), straight into its own pty, in
// one burst of small pastes; then it takes the screen and the gate from
// the burned generation's harness, which is stopped beside it.
func (s *session) sendFirst(prompt string) error {
	if err := s.whenPasteOn(); err != nil {
		return fmt.Errorf("type the first prompt: %w", err)
	}
	typed := s.Typing(front.TurnFirst, prompt)
	err := Typist{Type: s.p.write, Settle: burstSettle, Clock: s.clock}.Submit(s.ctx, prompt)
	typed(err)
	if err != nil {
		return fmt.Errorf("type the first prompt: %w", err)
	}
	s.mu.Lock()
	s.given = s.clock.Now()
	s.mu.Unlock()
	if err := s.f.takeOver(s.p, s.cfg.early, s.log, s.cfg.inbox); err != nil {
		s.p.Kill()
		return fmt.Errorf("give the successor the screen: %w", err)
	}
	s.nudge()
	s.log.Info("prompt typed", "turn", front.TurnFirst.String())
	return nil
}

// whenPasteOn waits until the harness's screen reads keys: it turned
// bracketed paste on, early in its start-up. One that never says so is
// typed into Options.SubmitTimeout after it started; one that exits first
// fails.
func (s *session) whenPasteOn() error {
	if s.p.readsKeys(s.ctx, s.f.opts.SubmitTimeout) {
		return nil
	}
	select {
	case <-s.p.Exited():
		return errors.New("the harness exited before its screen was up")
	default:
	}
	if err := context.Cause(s.ctx); err != nil {
		return err
	}
	s.log.Warn("the harness's screen never turned bracketed paste on; typing its first prompt anyway", "after", s.f.opts.SubmitTimeout)
	return nil
}

// whenIdle waits until the harness's state file no longer says it is at
// work (see working). Keys typed while it is are not cleared by the Ctrl-C: a /compact
// the hook blocked puts itself back into the input as it ends, and a
// prompt typed before would be appended to it (and run as the command's
// arguments). A state file that never says idle holds the prompt for
// Options.SubmitTimeout at most.
func (s *session) whenIdle() error {
	s.mu.Lock()
	ch := s.busy
	s.mu.Unlock()
	if ch != nil {
		s.log.Info("the harness is busy; the prompt waits until it is idle")
		t := s.clock.NewTimer(s.f.opts.SubmitTimeout)
		defer t.Stop()
		select {
		case <-ch:
		case <-t.C():
			s.log.Warn("the harness still says it is busy; typing the prompt anyway", "after", s.f.opts.SubmitTimeout)
			return nil
		case <-s.ctx.Done():
			return context.Cause(s.ctx)
		}
	}
	return nil
}

// EndAfterTurn ends the harness as a person would, once its turn is over:
// Ctrl-C twice. Pressed while a turn runs, the first Ctrl-C would only end
// the turn and the harness would stay; so follow types them once no turn
// runs, no typed prompt is on its way, and the state file does not say
// the harness is at work.
func (s *session) EndAfterTurn() error {
	s.mu.Lock()
	s.endAfter = true
	s.mu.Unlock()
	s.nudge()
	return nil
}

func (s *session) exitKeys() error {
	if !s.f.holds(s.p) {
		return s.p.typeExit() // a successor's harness has the gate
	}
	s.p.readsKeys(context.Background(), keysAfter)
	if err := s.f.gate.Type([]byte(keyCtrlC)); err != nil {
		return err
	}
	_ = front.Sleep(context.Background(), s.clock, exitGap)
	return s.f.gate.Type([]byte(keyCtrlC))
}

// Stop ends the harness (Ctrl-C twice, then signals) and gives the terminal
// back. follow then reads the transcript to its end; Next then returns
// io.EOF.
func (s *session) Stop() {
	s.stopOnce.Do(func() {
		if !s.f.holds(s.p) {
			// Stopped by its successor's launch, or going: the gate and
			// the screen are the successor's now.
			s.p.Stop(s.p.typeExit)
			return
		}
		s.f.gate.Hold()
		s.p.Stop(s.exitKeys)
		s.f.detach(s.p)
	})
}

// Exit implements front.Session. A harness a person ended (status 0, or the
// interrupt or hangup that reached it while it exited) ended in order.
func (s *session) Exit() front.Exit {
	<-s.p.Exited()
	why := "the harness exited"
	err := s.p.Err()
	if err != nil {
		why += " (" + err.Error() + ")"
	}
	s.mu.Lock()
	cost := s.u.cost
	s.mu.Unlock()
	return front.Exit{Why: why, ByPerson: err == nil || endedByPerson(err), CostUSD: cost}
}

// nudge wakes follow after a command changed what it waits for.
func (s *session) nudge() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// follow watches the harness and its files until the harness is gone, then
// reads the transcript to its end; Next then returns io.EOF.
func (s *session) follow() {
	defer close(s.done)
	defer s.in.close()
	w := newWatch(s.cfg.configDir, s.cfg.cwd)
	defer w.close()
	s.look()
	var timer front.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	pasteOn := s.p.pasteOn // nil once seen
	for {
		var events <-chan transcript.Event
		if s.fol != nil {
			events = s.fol.Events()
		}
		if timer != nil {
			timer.Stop()
		}
		timer = s.clock.NewTimer(s.nextDue().Sub(s.clock.Now()))
		select {
		case <-s.p.Exited():
			s.drain()
			s.exited()
			return
		case ev, ok := <-events:
			if !ok {
				// A read error; the next look starts over from the top.
				s.log.Warn("transcript follower stopped", "err", s.fol.Err())
				s.folCancel()
				s.fol, s.following = nil, ""
				continue
			}
			s.read(&ev)
		case ev := <-w.events():
			if w.saw(ev) {
				s.look()
			}
		case err := <-w.errors():
			// An overflow lost events: look now for what they said.
			s.log.Debug("watch", "err", err)
			s.look()
		case <-w.looks:
			w.ensure()
			s.look()
		case <-pasteOn:
			pasteOn, s.screenUp = nil, true
		case <-s.wake:
		case <-timer.C():
		}
		s.due(s.clock.Now())
	}
}

// nextDue is the earliest moment follow waits for, on the session's clock:
// the person's keys, the long first prompt; an hour from now when nothing
// does. What the translation waits for (a prompt's arrival, the idle
// sign) is Next's.
func (s *session) nextDue() time.Time {
	next := s.clock.Now().Add(time.Hour)
	earlier := func(t time.Time) {
		if !t.IsZero() && t.Before(next) {
			next = t
		}
	}
	s.mu.Lock()
	typed, held := s.typed != "", s.held
	s.mu.Unlock()
	if typed && !s.screenUp {
		earlier(s.p.start.Add(keysAfter))
	}
	if prompted, from, ok := s.keysRule(); ok && !s.released && !typed && !held {
		if prompted {
			earlier(from.Add(keysAfterPrompt))
		} else {
			earlier(from.Add(keysAfter))
		}
	}
	return next
}

// keysRule says when the person's keys may go to this harness: ok is false
// while it has not the screen (started early, its first prompt not given
// yet); prompted, when flower gave it its first prompt, at from (then the
// keys wait for that prompt's answer); else they go once its screen is up.
func (s *session) keysRule() (prompted bool, from time.Time, ok bool) {
	if s.cfg.early != nil {
		s.mu.Lock()
		given := s.given
		s.mu.Unlock()
		return true, given, !given.IsZero()
	}
	return s.cfg.argPrompt || s.cfg.typed != "", s.p.start, true
}

// due does what waits on time: the person's keys, the long first prompt;
// then the exit keys EndAfterTurn asked for, once nothing runs. What the
// translation waits for on the clock (turns.due) is Next's.
func (s *session) due(now time.Time) {
	s.mu.Lock()
	typed, held, begun := s.typed, s.held, s.u.begun
	exitNow := s.endAfter && s.u.quiet() && !working(s.status)
	if exitNow {
		s.endAfter = false
	}
	s.mu.Unlock()

	if typed != "" && (s.screenUp || !now.Before(s.p.start.Add(keysAfter))) {
		s.typeFirst(typed)
	}
	keysReady, wait := s.screenUp, keysAfter
	prompted, from, ok := s.keysRule()
	if prompted {
		keysReady, wait = begun, keysAfterPrompt
	}
	if ok && !s.released && !held && typed == "" && (keysReady || now.Sub(from) >= wait) {
		// The harness is up: the person's keys go straight to it now.
		s.released = true
		if err := s.f.gate.Release(); err != nil {
			s.log.Debug("deliver held keys", "err", err)
		}
	}
	if exitNow {
		s.log.Info("the turn is over; ending the harness")
		if err := s.exitKeys(); err != nil {
			s.log.Debug("exit keys", "err", err)
		}
	}
}

// exited says the harness is gone: what its exit ended is Next's to
// translate (turns.exited).
func (s *session) exited() { s.Exited() }

// drain stops following and queues the lines still unread.
func (s *session) drain() {
	if s.drained {
		return
	}
	if s.fol == nil {
		s.locate() // a harness that exited at once may still have left a file
	}
	s.drained = true
	if s.fol == nil {
		return
	}
	s.folCancel()
	for ev := range s.fol.Events() {
		s.read(&ev)
	}
	s.fol = nil
}

// look reads the harness's state file and finds its transcript.
func (s *session) look() {
	st, err := readState(s.cfg.configDir, s.p.PID())
	if err == nil {
		s.sawStatus(st.Status)
		if prompted, _, ok := s.keysRule(); st.SessionID != "" && !s.named && prompted && ok {
			// flower gave the harness its first prompt, which it
			// submits at once: its session is the one named here
			// (DESIGN.md «Screen turns»).
			s.named = true
			s.Named(st.SessionID)
		}
		if s.following != "" && st.SessionID != "" && st.SessionID != s.following {
			s.switchSession(st.SessionID)
		}
	}
	if s.fol == nil {
		s.locate()
	}
}

// working: the state file's status says the harness is at work: "busy"
// (a turn runs), "shell" (a command of its own runs) or "waiting" (a
// dialog waits for an answer, within a turn). Typed keys would land in
// that work, and a turn is not over.
func working(status string) bool {
	return status == "busy" || status == "shell" || status == "waiting"
}

// sawStatus takes what the state file says of the harness: the busy
// channel Send waits on, and the translation's sign of a turn's end
// (turns.sawStatus).
func (s *session) sawStatus(status string) {
	s.status = status
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case working(status) && s.busy == nil:
		s.busy = make(chan struct{})
	case !working(status) && s.busy != nil:
		close(s.busy)
		s.busy = nil
	}
	s.Status(status)
}

// locate starts following the transcript once it can be found.
func (s *session) locate() {
	if s.drained {
		return
	}
	path, sid, ok := s.cfg.loc.find()
	if !ok {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	fol, err := transcript.Follow(ctx, path, transcript.FollowOptions{Logger: s.log})
	if err != nil {
		cancel()
		s.log.Warn("follow transcript", "path", path, "err", err)
		return
	}
	s.fol, s.folCancel, s.following = fol, cancel, sid
	s.cfg.loc.used[path] = true
	s.log.Info("transcript found", "path", path)
}

// switchSession follows the harness to a new session in the same process
// (/clear starts one, with a transcript of its own), and says so.
func (s *session) switchSession(sid string) {
	if !exists(transcript.FilePath(s.cfg.configDir, s.cfg.cwd, sid)) {
		if m, _ := filepath.Glob(filepath.Join(s.cfg.configDir, "projects", "*", sid+".jsonl")); len(m) == 0 {
			return // not written yet; a notification says when it is
		}
	}
	from := s.following
	s.log.Info("the harness switched sessions", "from", from, "to", sid)
	s.folCancel()
	for ev := range s.fol.Events() {
		s.read(&ev)
	}
	s.fol, s.following = nil, ""
	s.in.add(input{at: s.clock.Now(), switched: &front.SessionSwitched{From: from, To: sid}})
	s.locate()
}

// read queues one transcript line for Next to translate.
func (s *session) read(ev *transcript.Event) {
	s.Line(*ev)
}

// isPrompt: a user line that starts a turn, typed by someone: not a tool's
// result, not the harness's own note (a caveat, "[Request
// interrupted…]"), and not a slash command's line: the harness runs a
// command of its screen itself, with no reply and no turn (its output is a
// local_command line), so the engine waits for no end of it.
func isPrompt(ev *transcript.Event, text string) bool {
	t := strings.TrimSpace(text)
	return t != "" && !strings.HasPrefix(t, "<") && !strings.HasPrefix(t, "[Request interrupted") &&
		!gjson.GetBytes(ev.Raw, "isMeta").Bool()
}

// promptText is a prompt with its white space squeezed, to be told again in
// the transcript whatever the harness did to its line ends and margins.
func promptText(s string) string { return strings.Join(strings.Fields(s), " ") }

// promptArrived: the user line text is the prompt typed (typed is
// promptText's).
func promptArrived(typed, text string) bool {
	got := promptText(text)
	return got == typed || (typed != "" && strings.Contains(got, typed))
}

// submit types prompt and submits it, and tells typed how it went; once
// typed, it must show up in the transcript within Options.SubmitTimeout
// (see Send).
func (s *session) submit(typed func(error), prompt string) error {
	err := Typist{Type: s.f.gate.Type, Gap: pasteGap, Settle: settle, Clock: s.clock}.Submit(s.ctx, prompt)
	typed(err)
	return err
}

// typeFirst types a first prompt too long for the command line.
func (s *session) typeFirst(prompt string) {
	s.f.gate.Hold()
	typed := s.Typing(front.TurnWork, prompt)
	s.mu.Lock()
	s.typed = ""
	s.mu.Unlock()
	err := s.submit(typed, prompt)
	// The person's keys follow once its request is answered (due).
	if err != nil {
		s.log.Error("type the first prompt", "err", err)
		s.p.Stop(nil) // the generation cannot start: the engine sees the exit
	}
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
