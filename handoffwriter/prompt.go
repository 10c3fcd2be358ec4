package handoffwriter

import (
	"strconv"
	"strings"
)

// PromptTag appears verbatim in every HandoffPrompt, so that a scripted test
// server (or a log reader) can tell the writing turn from a working turn.
const PromptTag = "<<flower:handoff-request>>"

// PromptTemplate is the handoff prompt: the one extra turn, in the same
// session, that asks it to write the handoff (DESIGN.md «Writing turn»), with
// a paragraph of its own for dead ends («Dead ends»). {used} and {window}
// are replaced by HandoffPrompt. The headings it shows are exactly those
// Markdown writes and Parse reads.
const PromptTemplate = PromptTag + `
Your context window is nearly full: {used} of {window} tokens are in use. Stop working on the task now. This session is about to end, and a fresh session of yourself will take over the work. It starts with an empty context: the only thing it will know about this task is the handoff document you write in this reply. It must not have to ask a person for background.

Do not call any tool. Do not continue the task. Reply with the handoff document only: no preamble, no closing remarks, no code fence around it.

Use exactly these five headings, in this order, each followed by its text:

## 现在在做 (doing)
## 已定的事 (decided)
## 走不通的 (deadends)
## 下一步 (next)
## 现场 (scene)

doing and next are required. If decided, deadends or scene has nothing to say, write (空) under its heading. Write for a reader who has none of your context: full paths, exact commands, exact error messages.

What each section is for:
- doing: where you stand right now: the task, the part of it in hand, and how far that part got.
- decided: matters already settled, each with WHY it was settled that way (including limits the user set), so your successor does not reopen them.
- deadends: every approach that was tried and failed; see below.
- next: the first concrete move your successor should make, specific enough to start on without deliberating.
- scene: pointers to the key files, directories, branches, commands and artifacts: paths and names, not their contents.

Dead ends are the most valuable section and the one most easily left out. Workers have an optimism bias: they record what they did, not what failed. Yet what failed is exactly what a successor pays most to rediscover. Once an hour went into a compile problem, and a successor without that hour's conclusion walked the same loop again. So list every approach you tried that did not work, and why it failed: the error, the symptom, what it broke. If nothing has failed yet, write (空); do not invent dead ends.
`

// HandoffPrompt fills PromptTemplate with the context used and the window,
// both in tokens, written as plain grouped integers ("152,000").
func HandoffPrompt(used, window int) string {
	// Two ReplaceAll, not a Replacer: the template is long and the
	// Replacer's byte-by-byte scan cost more than the rest of a cut (the
	// figures never hold a brace, so the order does not matter).
	return strings.ReplaceAll(strings.ReplaceAll(PromptTemplate, "{used}", groupDigits(used)), "{window}", groupDigits(window))
}

// groupDigits writes n with comma thousands separators: exact, and easy for
// a model to read.
func groupDigits(n int) string {
	s := strconv.Itoa(n)
	sign := ""
	if strings.HasPrefix(s, "-") {
		sign, s = "-", s[1:]
	}
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return sign + b.String()
}

// PromptBlock is the successor's first prompt (DESIGN.md «Prompt block»): a
// plain statement that it is taking over, so it does not go back to a person
// for background; the document; and where to start. A degraded handoff also
// says plainly that it is incomplete and that the workspace is the source of
// truth. Callers build it from the file as it is on disk at launch
// («Launch from disk»).
func (h Handoff) PromptBlock() string {
	var b strings.Builder
	b.WriteString("You are taking over an ongoing task from a previous session of yourself whose context window ran out. " +
		"Everything you need is in the handoff document below, which that session wrote for you before it stopped. " +
		"Do not go back to ask a person for background; continue the work from this document and the workspace.\n\n")
	if h.IsDegraded() {
		b.WriteString("This handoff is incomplete: the previous session could not write it, so it was assembled mechanically " +
			"and says little about where the work stands. Inspect the workspace yourself (files, git status and log, " +
			"build and test output) to find out what was done before you act.\n\n")
	}
	b.WriteString(h.Markdown())
	b.WriteString("\nStart with the `next` section (下一步).\n")
	return b.String()
}
