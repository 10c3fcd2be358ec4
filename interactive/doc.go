// Package interactive is flower's interactive front: the harness's own
// terminal UI runs inside a pty, the person sees and types into it as if
// flower were not there, and flower watches underneath. It owns the person's
// terminal while a harness runs (raw mode, restored on every way out: normal
// exit, error, signal, panic), the copying of keys in and screen out, the
// key gate that keeps the person's keys out of what flower types, and
// window-size changes. It translates: the transcript file, the harness's
// state file and its exit become the engine's records, and the engine's
// commands become keys: a cut, a stopped tool and a cancel are each Esc, a
// prompt is typed, the end of the harness is Ctrl-C twice. The
// generation loop is the engine's (package supervisor, DESIGN.md «Fronts»):
// the same policy, thresholds, events, handoff document and manifest as a
// headless run.
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
// reaches the model verbatim, and submits it with "\r". A first prompt can
// also be given on the command line ("claude [flags] -- PROMPT"): it is
// submitted at start, verbatim, with no typing at all; successors start that
// way.
//
// Keys. Esc interrupts a running turn. Ctrl-C on a
// non-empty input clears it; a second Ctrl-C within about 0.8 s ("Press
// Ctrl-C again to exit") exits, as does "/exit" + Enter. Ctrl-U clears only
// the current line of a multi-line input. After an interrupt before any
// reply the harness puts the interrupted prompt back into the input. So
// before typing, flower clears the input with one Ctrl-C and waits out the
// double-press window.
//
// Files. $HOME/.claude/sessions/<pid>.json appears as the harness starts
// (before any prompt) with "sessionId", "cwd" and "status" ("busy" while a
// turn runs, "idle" otherwise) and is removed when it exits. The transcript
// $HOME/.claude/projects/<cwd slug>/<sessionId>.jsonl appears with the first
// prompt ($CLAUDE_CONFIG_DIR replaces $HOME/.claude when set; the slug turns
// every character but ASCII letters and digits into "-"). In it a turn that
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
// (flower follows it, and counts the old session as burned). The harness sets
// the terminal title once at start ("✳ Claude Code") and left it alone
// afterwards in these runs, so the title is where flower shows the near
// notice while a harness owns the screen; the same lines are printed on the
// screen between generations and at the end.
//
// # How a handoff runs here
//
// The engine reads the records this front makes of the transcript and
// decides as in a headless run (DESIGN.md «Threshold path», «Context
// meter», «Near notice»). When it cuts, this front closes the gate (the
// person's keys are held, not dropped) and carries out its commands: Esc
// for a turn still running (a reply that ended the turn needs none), the
// input cleared and the handoff prompt typed and submitted, the reply's
// records passed on from the transcript, and the harness ended (Ctrl-C
// twice, then signals). Parsing the handoff, degrading it, freezing it to
// disk and starting the successor from the prompt block read back from
// disk are the engine's (packages supervisor and handoff); the held keys
// then go to the new harness.
package interactive
