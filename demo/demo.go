// Package demo owns the scripted model behind `flower demo`: a short,
// believable job (a tiny word-frequency tool written in POSIX sh) that the
// real harness carries out against a local scripted Messages API. Its tool
// calls really create the files in the workspace, and the usage it reports
// climbs past the near notice and the handoff threshold of a 200K window in
// each of the first two generations, so a person watching sees two handoffs
// end to end. It also owns the harness environment of the demo, which must
// never carry a real credential.
package demo

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/flowerhq/flower/handoffwriter"
	"github.com/flowerhq/flower/scriptedapi"
	"github.com/flowerhq/flower/scriptedgen"
	"github.com/flowerhq/flower/scriptedresp"
)

// Window is the context window the demo's usage is scripted against: the
// near notice comes at 130K and the handoff at 150K (policy defaults).
const Window = 200_000

// ModelName is the model the harness is told to run: one whose window the
// harness also takes to be 200K, so it agrees with Window.
const ModelName = "claude-haiku-4-5"

// Step names the demo's step, and so its handoff file (交接-demo.md).
const Step = "demo"

// Task is what the person asks the demo's agent to do.
const Task = "Write wordfreq: a small POSIX sh tool that prints the words of a text, most frequent first, " +
	"ties in a fixed order, with an option -n N for the top N only, and a test script. Work in the current directory."

// HarnessArgs are the harness flags the demo needs: the tools its model
// calls, allowed without a prompt.
var HarnessArgs = []string{"--allowedTools", "Bash", "Write", "Read"}

// Files lists, relative to the workspace, the files the job leaves behind.
var Files = []string{"README.md", "wordfreq.sh", "sample.txt", "test.sh", "expected.txt"}

// Generations is how many sessions the story takes: two handoffs.
const Generations = 3

// Model is the scripted model: one story, told to Claude Code through a
// scripted Messages API (Script), to the Codex CLI through a scripted
// Responses API (ResponsesScript) and to the Gemini CLI through a scripted
// Gemini API (GeminiScript). It is safe for concurrent use.
type Model struct {
	workspace string
	pace      time.Duration
	plans     [][]move
	handoffs  []handoffwriter.Handoff

	mu  sync.Mutex
	gen int // 0-based generation the model believes it is in
	i   int // working requests answered in this generation
}

// act is one working reply of the story: the context it reports, its
// text, and the tools it calls, in words any harness's tools can say.
type act struct {
	ctx   int
	text  string
	tools []tool
}

// tool is one tool call: a file written or read (name relative to the
// workspace), or a command run.
type tool struct {
	write, read          string
	content              string
	command, description string
}

// move answers one working request; prev is what the tools of the move
// before printed, so that a reply can quote it.
type move func(prev string) act

// DefaultPace is the model's pause before each working reply: slow enough
// for a person to follow, so the demo takes about fifteen seconds.
const DefaultPace = 600 * time.Millisecond

// NewModel scripts the story for a workspace (tool calls need its absolute
// path). The model waits pace before each working reply and four times as
// long before the handoff, as a real model takes a while to write one; zero
// answers at once.
func NewModel(workspace string, pace time.Duration) *Model {
	m := &Model{workspace: workspace, pace: pace}
	m.plans = [][]move{m.generation1(), m.generation2(), m.generation3()}
	m.handoffs = m.handoffDocs()
	return m
}

// answer is the story's reply to a main-thread request: in the writing
// turn the generation's handoff (doc), else the plan's next act, the last
// one repeating if the harness asks again. takingOver: the request is a
// successor's first.
func (m *Model) answer(writing, takingOver bool, prev string) (a act, doc string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if writing {
		h := m.handoffs[min(m.gen, len(m.handoffs)-1)]
		a = act{ctx: m.cutAt() + 1_400}
		m.gen = min(m.gen+1, len(m.plans)-1)
		m.i = 0
		return a, h.Markdown()
	}
	// A successor whose predecessor wrote no handoff (the writing turn
	// failed) starts without the writing turn having moved the story on.
	if m.i > 0 && takingOver {
		m.gen = min(m.gen+1, len(m.plans)-1)
		m.i = 0
	}
	plan := m.plans[m.gen]
	a = plan[min(m.i, len(plan)-1)](prev)
	m.i++
	return a, ""
}

// takeoverMark is how a successor's first prompt begins (package handoff).
const takeoverMark = "You are taking over"

// Script answers one request of Claude Code. Subagent and side requests
// get a harmless reply.
func (m *Model) Script(r *scriptedapi.Request) scriptedapi.Reply {
	if r.Kind != scriptedapi.KindMain {
		return scriptedapi.Harmless(r)
	}
	a, doc := m.answer(strings.Contains(r.LastUserText, handoffwriter.PromptTag),
		r.Replies == 0 && strings.Contains(r.LastUserText, takeoverMark), toolOutput(r))
	if doc != "" {
		return scriptedapi.Reply{Text: doc, Usage: usage(a.ctx), ChunkText: 80, Delay: 4 * m.pace}
	}
	reply := scriptedapi.Reply{Text: a.text, Usage: usage(a.ctx), ChunkText: 40, Delay: m.pace}
	for _, t := range a.tools {
		reply.ToolUses = append(reply.ToolUses, m.claudeTool(t))
	}
	return reply
}

// ResponsesScript answers one request of the Codex CLI: each tool is a
// shell command (Codex's exec_command), run in the workspace.
func (m *Model) ResponsesScript(r *scriptedresp.Request) scriptedresp.Reply {
	prev := "(no output)"
	if n := len(r.Outputs); n > 0 {
		prev = commandOutput(r.Outputs[n-1].Output)
	}
	a, doc := m.answer(strings.Contains(r.LastUserText, handoffwriter.PromptTag),
		len(r.Outputs) == 0 && strings.Contains(r.LastUserText, takeoverMark), prev)
	u := scriptedresp.Usage{InputTokens: a.ctx, CachedInputTokens: max(a.ctx-2_040, 0), OutputTokens: 420}
	if doc != "" {
		return scriptedresp.Reply{Text: doc, Usage: u, Delay: 4 * m.pace}
	}
	reply := scriptedresp.Reply{Text: a.text, Usage: u, Delay: m.pace}
	for _, t := range a.tools {
		reply.Calls = append(reply.Calls, scriptedresp.Call{Cmd: shellOf(t)})
	}
	return reply
}

// GeminiScript answers one request of the Gemini CLI: a file is written
// with its write_file (its shell tool refuses a command with a backtick or
// $(…) anywhere, a heredoc's body included), every other tool is a shell
// command (run_shell_command), run in the workspace; the CLI's side
// requests get the server's own answer.
func (m *Model) GeminiScript(r *scriptedgen.Request) scriptedgen.Reply {
	if r.Side {
		return scriptedgen.SideReply
	}
	prev := "(no output)"
	if n := len(r.Responses); n > 0 {
		if out := scriptedgen.ShellOutput(r.Responses[n-1].Response); out != "" && out != "(empty)" {
			prev = out
		}
	}
	a, doc := m.answer(strings.Contains(r.LastUserText, handoffwriter.PromptTag),
		len(r.Responses) == 0 && strings.Contains(r.LastUserText, takeoverMark), prev)
	u := scriptedgen.Usage{PromptTokens: a.ctx, CachedTokens: max(a.ctx-2_040, 0), OutputTokens: 420}
	if doc != "" {
		return scriptedgen.Reply{Text: doc, Usage: u, Delay: 4 * m.pace}
	}
	reply := scriptedgen.Reply{Text: a.text, Usage: u, Delay: m.pace}
	for _, t := range a.tools {
		if t.write != "" {
			reply.Calls = append(reply.Calls, scriptedgen.Call{Name: "write_file", Args: map[string]any{"file_path": m.path(t.write), "content": t.content}})
			continue
		}
		reply.Calls = append(reply.Calls, scriptedgen.Shell(shellOf(t)))
	}
	return reply
}

// Generation is the 1-based generation the model is in.
func (m *Model) Generation() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.gen + 1
}

// cutAt is the context the cutting reply of a generation reports.
func (m *Model) cutAt() int { return cutContext[min(m.gen, len(cutContext)-1)] }

// cutContext is the context at which each working generation is cut; both
// are past the 150K threshold of the 200K window.
var cutContext = []int{152_000, 156_000}

func (m *Model) path(name string) string { return filepath.Join(m.workspace, name) }

// usage reports ctx tokens of context, mostly cache reads as a long session
// on the real API would.
func usage(ctx int) scriptedapi.Usage {
	return scriptedapi.Usage{InputTokens: 240, CacheCreationInputTokens: 1_800, CacheReadInputTokens: ctx - 2_040, OutputTokens: 420}
}

func say(ctx int, text string, tools ...tool) move {
	return func(string) act { return act{ctx: ctx, text: text, tools: tools} }
}

func write(name, content string) tool { return tool{write: name, content: content} }

func read(name string) tool { return tool{read: name} }

func bash(command, description string) tool { return tool{command: command, description: description} }

// claudeTool is t as Claude Code's Write, Read or Bash tool.
func (m *Model) claudeTool(t tool) scriptedapi.ToolUse {
	switch {
	case t.write != "":
		return scriptedapi.ToolUse{Name: "Write", Input: map[string]any{"file_path": m.path(t.write), "content": t.content}}
	case t.read != "":
		return scriptedapi.ToolUse{Name: "Read", Input: map[string]any{"file_path": m.path(t.read)}}
	}
	return scriptedapi.ToolUse{Name: "Bash", Input: map[string]any{"command": t.command, "description": t.description}}
}

// shellOf is t as one shell command run in the workspace.
func shellOf(t tool) string {
	switch {
	case t.write != "":
		return "cat > " + t.write + " <<'WORDFREQ_EOF'\n" + t.content + "WORDFREQ_EOF"
	case t.read != "":
		return "cat " + t.read
	}
	return t.command
}

// commandOutput is what a command printed, without the lines Codex puts
// before it (its exit code, its time) when it says "Output:".
func commandOutput(s string) string {
	if _, out, ok := strings.Cut(s, "Output:\n"); ok {
		s = out
	}
	if s = strings.TrimSpace(s); s == "" {
		return "(no output)"
	}
	return s
}

// reminder is a note the harness appends to tool results for the model;
// it is no part of what the tool printed.
var reminder = regexp.MustCompile(`(?s)<system-reminder>.*?</system-reminder>`)

// toolOutput is what the tool answered to the previous move, trimmed.
func toolOutput(r *scriptedapi.Request) string {
	var out []string
	for _, tr := range r.LastToolResults {
		if s := strings.TrimSpace(reminder.ReplaceAllString(tr.Content, "")); s != "" {
			out = append(out, s)
		}
	}
	if len(out) == 0 {
		return "(no output)"
	}
	return strings.Join(out, "\n")
}

func indent(s string) string {
	return "    " + strings.ReplaceAll(strings.TrimSpace(s), "\n", "\n    ")
}

// Generation 1: the README, the first script and a sample; it runs out of
// context while checking the script.
func (m *Model) generation1() []move {
	return []move{
		say(24_000, "Plan: a README saying what wordfreq promises, then the script, then a sample text to try it on.",
			write("README.md", readme)),
		say(61_000, "First version of the script. Ties are ordered by word under LC_ALL=C: a bare `sort | uniq -c | sort -rn`\n"+
			"put equal counts in a different order with GNU and BSD sort, so that one is out.",
			write("wordfreq.sh", wordfreqV1)),
		say(97_000, "A sample with known counts (the 4, dog 3, fox 3, ...) to check it against.",
			write("sample.txt", sample)),
		say(138_500, "The README promises -n N; the script does not have it yet. Looking at the script again before the tests.",
			read("README.md")),
		say(cutContext[0], "Re-reading wordfreq.sh to plan the test cases.",
			read("wordfreq.sh")),
	}
}

// Generation 2: takes over, writes the tests, sees the -n case fail, and is
// cut while deciding how to add -n.
func (m *Model) generation2() []move {
	return []move{
		say(27_000, "Taking over from the handoff: the script and the sample exist; next is the test script.",
			write("test.sh", testScript)),
		say(70_000, "expected.txt: the full count of sample.txt, worked out by hand.",
			write("expected.txt", expected)),
		say(118_000, "Running the tests; the -n case should fail, as -n does not exist yet.",
			bash("sh test.sh", "Run the wordfreq tests")),
		func(prev string) act {
			return act{ctx: 141_000, text: "test.sh says:\n" + indent(prev) + "\nAs expected. -n goes in next; reading the script to see where.",
				tools: []tool{read("test.sh")}}
		},
		say(cutContext[1], "Reading wordfreq.sh before changing it.",
			read("wordfreq.sh")),
	}
}

// Generation 3: adds -n, runs the tests and finishes.
func (m *Model) generation3() []move {
	return []move{
		say(29_000, "Taking over: next is -n N in wordfreq.sh. Reading it first.",
			read("wordfreq.sh")),
		say(44_000, "Adding -n N: taken off the arguments before the file names, applied in the final awk.",
			write("wordfreq.sh", wordfreqV2)),
		say(52_000, "Running the tests.",
			bash("sh test.sh", "Run the wordfreq tests")),
		func(prev string) act {
			return act{ctx: 58_000, text: "Done. wordfreq.sh prints every word of its input, most frequent first, ties by word;\n" +
				"-n N keeps the top N. test.sh says:\n" + indent(prev)}
		},
	}
}

// handoffDocs are what each working generation writes when it is cut.
func (m *Model) handoffDocs() []handoffwriter.Handoff {
	tieDeadEnd := "- `sort | uniq -c | sort -rn` on its own: equal counts came out in a different order with GNU and BSD sort. " +
		"Replaced by `sort -k1,1nr -k2,2` under LC_ALL=C; do not go back to it."
	decided := "- Plain POSIX sh with tr, sort, uniq and awk, no bash-isms: the task asks for a tool that runs anywhere.\n" +
		"- Ties are ordered by word under LC_ALL=C, so the output is the same on every machine (expected.txt relies on it)."
	return []handoffwriter.Handoff{
		{
			Doing: fmt.Sprintf("Building wordfreq in %s: README.md, wordfreq.sh (no -n yet) and sample.txt are written; "+
				"I was about to write the tests when the context ran out.", m.workspace),
			Decided:  decided,
			Deadends: tieDeadEnd,
			Next: "Write test.sh: compare `sh wordfreq.sh sample.txt` with expected.txt (the 4, dog 3, fox 3, a 2, ...), " +
				"and `sh wordfreq.sh -n 3 sample.txt` with its first 3 lines; then run `sh test.sh`.",
			Scene: fmt.Sprintf("- %s: what the tool promises\n- %s: the script\n- %s: the test input",
				m.path("README.md"), m.path("wordfreq.sh"), m.path("sample.txt")),
		},
		{
			Doing: "test.sh and expected.txt are written; `sh test.sh` passes \"all words\" and fails \"top 3 (-n 3)\", " +
				"because wordfreq.sh has no -n option yet (cat takes -n as its own flag).",
			Decided: decided + "\n- Without -n every word is printed; -n N keeps the first N lines.",
			Deadends: tieDeadEnd + "\n- Making expected.txt with `sh wordfreq.sh sample.txt > expected.txt`: a test that compares " +
				"the script with its own output catches nothing. The counts in expected.txt were worked out by hand.",
			Next: "Add -n N to wordfreq.sh: take it off the arguments before `cat \"$@\"`, pass it to the final awk " +
				"(`awk -v top=N 'top == 0 || NR <= top'`); then `sh test.sh` must print PASS.",
			Scene: fmt.Sprintf("- %s: the script to change\n- %s, %s, %s: the tests\n- %s",
				m.path("wordfreq.sh"), m.path("test.sh"), m.path("expected.txt"), m.path("sample.txt"), m.path("README.md")),
		},
	}
}

const readme = `# wordfreq

Prints the words of a text, most frequent first. Ties are ordered by word,
so the output is the same on every machine.

    sh wordfreq.sh [-n N] [FILE...]

Reads standard input when no FILE is given. -n N prints the top N only.
Run the tests with ` + "`sh test.sh`" + `.
`

const wordfreqV1 = `#!/bin/sh
# wordfreq: print the words of a text, most frequent first.
# Usage: sh wordfreq.sh [FILE...]   (reads stdin without FILE)
set -eu
export LC_ALL=C # the same order on every machine
cat "$@" |
  tr '[:upper:]' '[:lower:]' |
  tr -cs '[:alpha:]' '\n' |
  grep -v '^$' |
  sort | uniq -c |
  sort -k1,1nr -k2,2 |
  awk '{ printf "%7d %s\n", $1, $2 }'
`

const wordfreqV2 = `#!/bin/sh
# wordfreq: print the words of a text, most frequent first.
# Usage: sh wordfreq.sh [-n N] [FILE...]   (reads stdin without FILE)
set -eu
export LC_ALL=C # the same order on every machine
top=0 # 0: every word
if [ "${1:-}" = "-n" ]; then
  top=$2
  shift 2
fi
cat "$@" |
  tr '[:upper:]' '[:lower:]' |
  tr -cs '[:alpha:]' '\n' |
  grep -v '^$' |
  sort | uniq -c |
  sort -k1,1nr -k2,2 |
  awk -v top="$top" 'top == 0 || NR <= top { printf "%7d %s\n", $1, $2 }'
`

const sample = `The quick brown fox jumps over the lazy dog.
The dog sleeps; the fox runs.
A fox is quick, a dog is lazy.
`

const testScript = `#!/bin/sh
# Checks wordfreq.sh on sample.txt against expected.txt.
cd "$(dirname "$0")"
fail=0
check() { # NAME WANT COMMAND...
  name=$1 want=$2
  shift 2
  got=$("$@" 2>&1)
  if [ "$got" = "$want" ]; then
    echo "ok   $name"
  else
    echo "FAIL $name: got $(echo "$got" | head -n 1 | tr -s ' ')..."
    fail=1
  fi
}
check "all words" "$(cat expected.txt)" sh wordfreq.sh sample.txt
check "top 3 (-n 3)" "$(head -n 3 expected.txt)" sh wordfreq.sh -n 3 sample.txt
if [ "$fail" = 0 ]; then echo PASS; else echo FAIL; exit 1; fi
`

const expected = `      4 the
      3 dog
      3 fox
      2 a
      2 is
      2 lazy
      2 quick
      1 brown
      1 jumps
      1 over
      1 runs
      1 sleeps
`
