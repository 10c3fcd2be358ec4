// Package interactive is flower's interactive front: the harness's own
// terminal UI runs inside a pty, the person sees and types into it as if
// flower were not there, and flower watches underneath. It owns the person's
// terminal while a harness runs (raw mode, restored on every way out: normal
// exit, error, signal, panic), the copying of keys in and screen out, the
// key gate that keeps the person's keys out of what flower types, and
// window-size changes. Everything else is translation, both ways (see "What
// this front translates" below): the transcript file, the harness's state
// file and its exit become facts (package front), and the engine's commands
// become keys. The front decides nothing: every rule of a handoff (the
// thresholds, the cut, the writing turn, parsing the document, degrading,
// freezing, launching the successor) is the engine's (package supervisor,
// DESIGN.md «Fronts»), the same as in a headless run.
//
// # The harness's interactive mode, as observed (Claude Code 2.1.328)
//
// Measured under tmux against the scripted API server (scriptedapi)
// with HOME a fresh temp dir and ANTHROPIC_BASE_URL, ANTHROPIC_API_KEY,
// CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1, DISABLE_TELEMETRY=1 and
// DISABLE_AUTO_COMPACT=1 set.
//
// First-run screens. With an empty HOME the harness first checks that it can
// reach api.anthropic.com and, offline, stops on "Unable to connect to
// Anthropic services" for good. With "hasCompletedOnboarding": true in
// $HOME/.claude.json that check is skipped (no theme picker showed either);
// then comes
// "Accessing workspace: … Is this a project you … trust?" (the cursor starts
// on "No, exit"), skipped by projects[<absolute cwd>].hasTrustDialogAccepted;
// then "Detected a custom API key in your environment · Do you want to use
// this API key?" (cursor on "No (recommended)"), skipped by listing the key's
// last 20 characters in customApiKeyResponses.approved (that is exactly what
// answering "Yes" writes). With all three the harness opens straight on its
// prompt. flower itself never answers these screens: they belong to the
// person, who sees them on the real screen, and they appear only before the
// first prompt, when flower is not typing. Unattended tests seed
// $HOME/.claude.json with those three keys (seedHarnessHome in
// integration/interactive_test.go); nothing else is needed. The "Auto mode is
// now the default" notice does not block.
//
// Permissions. This version's default permission mode, auto, stops every
// tool call on a dialog when its server-side safety check cannot be reached
// (it cannot through a scripted server), and it sets allow rules such as
// Bash(*) aside. Tests that run tools pass "--permission-mode dontAsk
// --allowedTools Bash" to the harness (after flower's "--").
//
// Typing. Enter is "\r" and submits; "\n" (Ctrl-J) inserts a newline. A
// bracketed paste ("\x1b[200~…\x1b[201~") is inserted as typed when it has at
// most 2 newlines and at most 800 characters; a longer one, or a burst of
// unbracketed input that long, is collapsed to "[Pasted text #1 +N lines]"
// and sent to the model wrapped in <pasted_content id="…">. So flower types a
// multi-line prompt as a series of small bracketed pastes (Typist), which
// reaches the model verbatim, and submits it with "\r"; the pastes may go
// in one write, each still read as its own. Keys written before the
// harness turned bracketed paste on ("\x1b[?2004h", early in its start-up)
// are lost. A first prompt can also be given on the command line ("claude
// [flags] -- PROMPT"): it is submitted at start, verbatim, with no typing
// at all. A successor started early, before its prompt is known, has it
// typed in one burst once its screen reads keys (DESIGN.md «Warm
// successor»).
//
// File mentions. A prompt line with @"path" (or @path) gets the file's
// text attached by the harness itself: an "attachment" record in the
// transcript, the text in the request as its Read tool renders it, and
// "⎿ Read path (N lines)" on the screen; no tool call of the model's. It
// works typed or on the command line, for files in the workspace (one
// its repository ignores included) and outside it; a 98 KB file came whole,
// 123 KB and more not at all, with no word. Where the message begins with
// an interrupted tool's result, the file's text goes inside that result. With the cursor right after a mention the harness offers to
// complete it, and Enter takes the offer rather than submitting. flower's
// long prompts go this way (quiet.go, DESIGN.md «Quiet screen»).
//
// Keys. Esc interrupts a running turn. Ctrl-C on a
// non-empty input clears it; a second Ctrl-C within about 0.8 s ("Press
// Ctrl-C again to exit") exits, as does "/exit" + Enter. Ctrl-U clears only
// the current line of a multi-line input. After an interrupt before any
// reply the harness puts the interrupted prompt back into the input. So
// before typing, flower clears the input with a Ctrl-C (two before a
// writing turn's prompt) and waits out the double-press window after
// each; the "Press Ctrl-C again to exit" it shows meanwhile has no key
// without a hint of its own to replace it (DESIGN.md «Screen turns»).
//
// Files. $HOME/.claude/sessions/<pid>.json appears as the harness starts
// (before any prompt) with "sessionId", "cwd" and "status" ("busy" while a
// turn runs, "idle" otherwise; its code also knows "shell" and "waiting",
// the latter for a dialog waiting on an answer) and is removed when it
// exits. It says "busy" while a slash command runs too (a /compact and its
// PreCompact hook), with no transcript line until the command is done. The transcript
// $HOME/.claude/projects/<cwd slug>/<sessionId>.jsonl appears with the first
// prompt ($CLAUDE_CONFIG_DIR replaces $HOME/.claude when set; the slug turns
// every character but ASCII letters and digits into "-"), some 0.15–0.45 s
// after the prompt line's own timestamp: 2.1.328 sends the prompt's request
// about 0.7 s after that line, so the file is there before the request;
// 2.1.332 sends it after about 0.15 s, and the file shows up only as the
// request leaves. The state file names the same session a second or so
// earlier, before any prompt. In the transcript a turn that
// ends on its own closes with {"type":"system","subtype":"turn_duration"}; an
// interrupt during a tool leaves a user line "[Request interrupted by user
// for tool use]" and no turn_duration; an API overflow leaves a synthetic
// assistant line ("model":"<synthetic>", "isApiErrorMessage":true, text
// "Prompt is too long") and no turn_duration; a subagent's lines go to
// <sessionId>/subagents/agent-*.jsonl with "isSidechain": true; on exit the
// harness appends {"type":"cost-state","totalCostUSD":…}, leaves its
// alternate screen and prints "Resume this session with: claude [its flags]
// --resume <id>" (kept off the screen: GoodbyeFilter). /clear starts a new session in
// the same process: a new sessionId in the state file and a new transcript
// (flower follows it; the engine counts the old session as burned). The harness sets
// the terminal title once at start ("✳ Claude Code") and left it alone
// afterwards in these runs, so the title is where flower shows the near
// notice while a harness owns the screen; the same lines are printed on the
// screen between generations and at the end. The harness's own status line
// (settings' statusLine, run every second with refreshInterval 1, its
// output shown under the input box) carries flower's meter and each
// handoff's announcement (DESIGN.md «Status line in the harness's screen»).
//
// # What this front translates
//
// (DESIGN.md «Screen turns».)
// Each line of the session's transcript goes through a front.Translator,
// which makes the facts a line says on its own: Output (the line, for
// programs following the run), Init (the session and the harness's version,
// which every line carries; for a harness flower gave its first prompt,
// the session comes first from the state file, which names it before any
// line is written), Round (a reply; the main thread's moves the
// meter), UserMessage, Compacted, Retrying. The file has no result lines,
// so the end of each turn is this front's to report, once, as a
// front.TurnEnded that says what the transcript showed:
//
//   - a turn_duration line: EndedOnOwn, with the last reply's text;
//   - the note "[Request interrupted by user…]": EndedInterrupted (flower's
//     Esc, or a person's; the log says whose);
//   - a synthetic reply ("model":"<synthetic>", the harness's API error):
//     what front.EndingOf makes of it: EndedOverflow ("Prompt is too
//     long"), EndedLimited (a usage limit), EndedInterrupted after flower's
//     Esc, else EndedError;
//   - no end marked, but the state file says "idle" after the turn ran (it
//     writes no turn_duration when a turn ended otherwise than completed,
//     or while background work runs) and nothing more is written for
//     idleSettle, or a new prompt comes: EndedOnOwn when the last reply
//     ended the turn, else EndedInterrupted after Esc, else EndedError;
//   - the harness's exit during a turn: EndedOnOwn when the last reply
//     ended the turn, else EndedInterrupted after Esc, else EndedError.
//
// A prompt this front typed that does not show up within
// Options.SubmitTimeout is logged and no longer awaited; the engine hears
// nothing of it, and its own deadline for the turn judges it. Every wait
// and timing rule of the front runs on Options.Clock, the engine's; the
// translation (turns.go) reads no clock at all, and is tested with
// scripted lines on a fake one.
//
// A turn starts with a main-thread prompt line or a reply. A slash command
// the person types is no turn: the harness runs it itself, with no reply
// (its output is a local_command line), and its lines pass as they are.
// CostUSD is the latest cost-state line's; the harness writes that line
// only as it exits, so a turn's end carries the cost only when the exit
// ends the turn; otherwise the cost comes with the exit, in
// front.Exit.CostUSD. The state file naming a new session (a person's /clear) is a
// front.SessionSwitched once the new transcript exists.
//
// The commands become keys. Cut, StopTool and Cancel are one Esc for the
// running turn, pressed once: none when no turn runs (its TurnEnded went
// out before the command) or the turn's last reply already ended it, and
// never a second one (Esc twice goes up the conversation); a turn that
// does not stop is the engine's cut timeout to judge. A turn whose prompt
// is on its way (typed, or given on the command line and not yet in the
// transcript) gets its Esc when the prompt shows up. From a Cut on, the
// person's keys are held (not dropped) until the next harness has its
// first request answered. Send waits until the state file no longer says
// the harness is at work (keys typed into a busy harness are lost, and a
// /compact the hook blocked puts itself back into the input as it ends),
// empties the input with one Ctrl-C, waits out the double-press window
// and types the prompt as small bracketed pastes. A writing turn gets two
// Ctrl-C, each followed by that window: it often follows a /compact the
// hook blocked, whose text can come back after the first one on a loaded
// machine. Otherwise the turn's kind changes nothing in how it is typed.
// EndAfterTurn is
// Ctrl-C twice once no turn runs and the state file does not say the
// harness is at work; Stop is the same, then signals.
//
// The front keeps no phase of the engine's; what it keeps is the turn the
// transcript shows running, and the commands it carried out whose effect
// has not shown yet (a typed prompt not yet in the transcript, an Esc
// whose turn has not ended). It watches the state file's and transcript's
// folders with fsnotify on a goroutine of its own (with a slow look beside
// it only until every folder is watched, or where a file system may send no
// notifications: logfollow.Notified), which queues what it
// reads; Next translates it (pull.go), once the engine has decided on the
// fact before (DESIGN.md «Screen turns» says why the reading cannot wait
// for Next). The only waits are the typing pace and the screen's
// protocol, each named with its reason in session.go.
package interactive
