// Package harnesstest provides a fake harness for tests of the faults the
// real one cannot be made to show: garbage output, a crash in the middle of a
// line, a process that ignores SIGINT, a turn that never ends. A test binary
// becomes the fake by calling Main from TestMain; the test then starts its
// own executable (os.Args[0]) with the environment from Env.
//
// Like the real harness, the fake keeps the session id it is asked to
// resume (--resume ID), refuses an unknown one when it keeps a session
// directory (EnvSessions), and answers flower's handoff-writing prompt with
// a complete handoff.
package harnesstest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/tidwall/gjson"

	"github.com/flowerhq/flower/child"
	"github.com/flowerhq/flower/handoffwriter"
	"github.com/flowerhq/flower/levers"
)

// The fake's environment. EnvMode selects its behaviour; EnvContext sets
// the main-thread context it reports per turn ("150000" or a comma list,
// one per turn, the last repeating).
const (
	EnvMode    = "FLOWER_FAKE_HARNESS"
	EnvContext = "FLOWER_FAKE_CONTEXT"
	// EnvLog names a file the fake appends one JSON line to per start
	// ({"pid","event":"start","args"}) and per user turn ({"pid",
	// "event":"user","session","text"}), for tests to see what it was given.
	EnvLog = "FLOWER_FAKE_LOG"
	// EnvSessions names a directory where the fake records the sessions it
	// created; with it set, --resume of an id not recorded there is refused
	// the way the real harness refuses it.
	EnvSessions = "FLOWER_FAKE_SESSIONS"
	// EnvFaultyStarts limits the mode's fault to the starts it lists
	// ("1" or "1,2,3": the first three), counted in the file EnvState;
	// other starts behave as ModeStream. Unset, every start is faulty.
	EnvFaultyStarts = "FLOWER_FAKE_FAULTY_STARTS"
	EnvState        = "FLOWER_FAKE_STATE"
	// EnvSuccessorContext is the context a session reports when its first
	// prompt is a handoff (a successor starts small): 1000 when unset.
	EnvSuccessorContext = "FLOWER_FAKE_SUCCESSOR_CONTEXT"
	// EnvFloor=1 makes a session look like a real one at its start:
	// get_context_usage before the first turn reports a start-up floor of
	// 1000, and the first turn's first round sits there, before the round
	// at the configured context (flower's futile-handoff guard looks at a
	// fresh session's first round).
	EnvFloor = "FLOWER_FAKE_FLOOR"
	// EnvGrandchild=1 makes the fake start a child that ignores SIGINT and
	// SIGTERM, holds stdout, and lives until killed; =session puts it in a
	// session of its own, as the real harness does with its Bash commands;
	// =escape also clears its environment (setsid env -i), as a tool may.
	// Its pid is logged (event "grandchild").
	EnvGrandchild = "FLOWER_FAKE_GRANDCHILD"
	// EnvExtraLine is a raw stdout line the fake prints before the first
	// assistant message of a session that is not a successor: a record the
	// real harness can be made to print only in ways flower never uses,
	// such as a compact_boundary line.
	EnvExtraLine = "FLOWER_FAKE_EXTRA_LINE"
	// EnvStreamBytes makes each working turn write about this many bytes
	// of tool-result lines (64 KiB each, as a tool's output) before its
	// result: a long stream of ordinary lines for measuring what reading
	// it costs.
	EnvStreamBytes = "FLOWER_FAKE_STREAM_BYTES"
	// EnvVersion, when set, is the claude_code_version of the fake's init
	// lines.
	EnvVersion = "FLOWER_FAKE_VERSION"
	// EnvReal is the real harness ModeProxy runs.
	EnvReal = "FLOWER_FAKE_REAL"
	// EnvPreCompact lists the compactions ("auto,auto") the fake tries in
	// the first turn of a session that is not a successor, after its first
	// round: for each it runs the PreCompact hooks of its --settings, as
	// the real harness does, with the hook input on stdin.
	EnvPreCompact = "FLOWER_FAKE_PRECOMPACT"
	// EnvAutoCompactOn, when "1", makes the fake report auto-compact on
	// whatever its environment says: a harness something beat flower's
	// levers in (DESIGN.md «Compaction backstop»).
	EnvAutoCompactOn = "FLOWER_FAKE_AUTOCOMPACT_ON"
)

// The modes.
const (
	ModeStream       = "stream"         // well-behaved: one assistant message and a result per user turn
	ModeGarbage      = "garbage"        // like stream, with non-JSON lines and stderr noise between records
	ModeCrashMidLine = "crash-mid-line" // first turn: half a JSON line, then exit 3
	ModeExitEarly    = "exit-early"     // exit 1 before any output
	ModeIgnoreSIGINT = "ignore-sigint"  // ignores SIGINT/SIGTERM and stdin EOF; runs until SIGKILL
	ModeHangTurn     = "hang-turn"      // starts a turn and never finishes it, ignoring interrupts
	ModeGrandchild   = "grandchild"     // like stream, but leaves a child holding stdout open on exit
	ModeHugeLine     = "huge-line"      // like stream, with a 50 MB line before each result
	ModeCrashWriting = "crash-writing"  // like stream, but the handoff-writing turn crashes mid-line (exit 3)
	ModeHangWriting  = "hang-writing"   // like stream, but the handoff-writing turn never ends, ignoring interrupts
	ModeHangAfter    = "hang-after"     // each turn sends its assistant message, then hangs ignoring interrupts
	// ModeProxy runs the real harness (EnvReal) in its place, with one
	// fact broken: in stream-json mode (-p) the usage of every assistant
	// line loses its cache_read_input_tokens. Anything else (--version,
	// the harness's own screen) is the real harness untouched.
	ModeProxy = "proxy"
)

// fakeVersion is what the fake's --version says without EnvVersion.
const fakeVersion = "2.1.328"

// HandoffMark appears in the doing section of every handoff the fake
// writes, followed by the session id.
const HandoffMark = "FAKE-HANDOFF-OF"

// GroupAlive reports whether any process of the group is still running.
// Zombies do not count: whether someone reaps them is up to the machine's
// init, not to the code under test.
func GroupAlive(pgid int) bool {
	return len(GroupMembers(pgid)) > 0
}

// GroupMembers returns the pids of the group's running (not zombie)
// processes.
func GroupMembers(pgid int) []int {
	var pids []int
	for _, p := range child.Procs() {
		if p.Pgrp == pgid && p.State != "Z" {
			pids = append(pids, p.PID)
		}
	}
	return pids
}

// Alive returns those of pids that are still running (not zombies).
func Alive(pids []int) []int {
	var out []int
	for _, p := range child.Procs() {
		if p.State != "Z" && slices.Contains(pids, p.PID) {
			out = append(out, p.PID)
		}
	}
	return out
}

// Descendants returns the pids of pid's running descendants.
func Descendants(pid int) []int {
	all := child.Procs()
	var out []int
	parents := []int{pid}
	for len(parents) > 0 {
		var next []int
		for _, p := range all {
			if p.State != "Z" && slices.Contains(parents, p.PPID) {
				out = append(out, p.PID)
				next = append(next, p.PID)
			}
		}
		parents = next
	}
	return out
}

// Env returns the environment that makes a re-executed test binary run the
// fake in the given mode.
func Env(mode string, extra ...string) []string {
	return append(append(os.Environ(), EnvMode+"="+mode), extra...)
}

// LogEntry is one line of the fake's log (EnvLog).
type LogEntry struct {
	PID     int      `json:"pid"`
	Event   string   `json:"event"` // start | user | grandchild
	Child   int      `json:"child,omitempty"`
	Args    []string `json:"args,omitempty"`
	Session string   `json:"session,omitempty"`
	Text    string   `json:"text,omitempty"`
}

// ReadLog returns the entries of the fake's log file (none if it is
// missing).
func ReadLog(path string) []LogEntry {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	var out []LogEntry
	for _, line := range strings.Split(string(b), "\n") {
		var e LogEntry
		if json.Unmarshal([]byte(line), &e) == nil {
			out = append(out, e)
		}
	}
	return out
}

// Main runs the fake if this process was started as one, and then exits.
// Call it first thing in TestMain; it returns at once otherwise.
func Main() {
	if len(os.Args) > 2 && os.Args[1] == "hook" && os.Args[2] == "precompact" {
		// Run by the fake (or the real Codex CLI) as flower's PreCompact
		// hook: the test's HookBinary is the test binary.
		os.Exit(hook(os.Args[3:]))
	}
	mode := os.Getenv(EnvMode)
	if mode == "" {
		return
	}
	os.Exit(run(mode))
}

// hook is `flower hook precompact [--inbox DIR] [--codex]`.
func hook(args []string) int {
	dir, answer := "", levers.BlockDecision()
	for i := 0; i < len(args); i++ {
		switch args[i] {
		case "--inbox":
			if i+1 < len(args) {
				dir = args[i+1]
				i++
			}
		case "--codex":
			answer = levers.StopDecision()
		}
	}
	if err := levers.RunHookAnswering(os.Stdin, os.Stdout, dir, answer); err != nil {
		return 1
	}
	return 0
}

// PrivateState points XDG_STATE_HOME at a new temporary directory, so that
// every flower a test binary runs keeps its trust store there, never in
// the person's ~/.local/state (DESIGN.md «Trust store»); the returned
// function removes it. A test that needs a store of its own sets
// XDG_STATE_HOME itself.
func PrivateState() (remove func()) {
	state, err := os.MkdirTemp("", "flower-state-")
	if err != nil {
		panic(err)
	}
	os.Setenv("XDG_STATE_HOME", state)
	return func() { os.RemoveAll(state) }
}

type fake struct {
	mode      string
	out       *bufio.Writer
	session   string
	turn      int
	ctx       []int
	cost      float64
	successor bool // the first prompt was a handoff, in a fresh session
	resumed   bool // started with --resume: the session keeps its context
}

func run(mode string) int {
	if mode == ModeProxy {
		return proxy()
	}
	if len(os.Args) == 2 && os.Args[1] == "--version" {
		// As the real harness answers it; no session, so no start.
		v := os.Getenv(EnvVersion)
		if v == "" {
			v = fakeVersion
		}
		fmt.Println(v + " (Claude Code)")
		return 0
	}
	logf(LogEntry{Event: "start", Args: os.Args[1:]})
	if faultFree() {
		mode = ModeStream
	}
	f, refused := newFake(mode, argAfter("--resume"))
	if refused {
		return 1
	}
	if gc := os.Getenv(EnvGrandchild); mode == ModeGrandchild || gc != "" {
		startGrandchild(gc)
	}
	switch mode {
	case ModeExitEarly:
		fmt.Fprintln(os.Stderr, "fake harness: refusing to start")
		return 1
	case ModeIgnoreSIGINT:
		signal.Ignore(syscall.SIGINT, syscall.SIGTERM)
		fmt.Println(`{"type":"system","subtype":"init","session_id":"` + f.session + `","model":"fake"}`)
		for {
			time.Sleep(time.Hour)
		}
	}
	return f.serve(bufio.NewReaderSize(os.Stdin, 1<<20))
}

// newFake is the fake harness of mode, resuming session resume when it is
// not "": its contexts from EnvContext, its session known in EnvSessions.
// refused: the session to resume is unknown there, which the fake has
// said as the real harness does.
func newFake(mode, resume string) (f *fake, refused bool) {
	f = &fake{mode: mode, out: bufio.NewWriterSize(os.Stdout, 1<<16), session: "fake-" + strconv.Itoa(os.Getpid()), resumed: resume != ""}
	for _, s := range strings.Split(os.Getenv(EnvContext), ",") {
		if n, err := strconv.Atoi(strings.TrimSpace(s)); err == nil {
			f.ctx = append(f.ctx, n)
		}
	}
	if dir := os.Getenv(EnvSessions); dir != "" {
		if resume != "" {
			if _, err := os.Stat(filepath.Join(dir, resume)); err != nil {
				// As the real harness refuses it.
				fmt.Fprintln(os.Stderr, "No conversation found with session ID: "+resume)
				f.emit(map[string]any{"type": "result", "subtype": "error_during_execution", "is_error": true,
					"num_turns": 0, "session_id": resume, "total_cost_usd": 0})
				return f, true
			}
		} else {
			_ = os.WriteFile(filepath.Join(dir, f.session), nil, 0o644)
		}
	}
	if resume != "" {
		f.session = resume
	}
	return f, false
}

// startGrandchild starts a child that inherits stdout and outlives the
// fake unless it is killed, ignoring the signals a polite stop sends; gc
// says how it hides ("session": a session of its own, "escape": that and
// an empty environment).
func startGrandchild(gc string) {
	cmd := exec.Command("sh", "-c", "trap '' INT TERM; exec sleep 300")
	cmd.Stdout = os.Stdout
	switch gc {
	case "session":
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	case "escape":
		cmd.Env = []string{}
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	}
	if cmd.Start() == nil {
		logf(LogEntry{Event: "grandchild", Child: cmd.Process.Pid})
	}
}

// serve handles the stdin lines until one stops the fake or stdin ends.
func (f *fake) serve(in *bufio.Reader) int {
	for {
		line, err := in.ReadBytes('\n')
		if len(line) > 0 {
			if code, stop := f.handle(line); stop {
				return code
			}
		}
		if err != nil {
			return 0
		}
	}
}

func argAfter(flag string) string {
	for i, a := range os.Args {
		if a == flag && i+1 < len(os.Args) {
			return os.Args[i+1]
		}
	}
	return ""
}

func logf(e LogEntry) {
	path := os.Getenv(EnvLog)
	if path == "" {
		return
	}
	e.PID = os.Getpid()
	b, _ := json.Marshal(e)
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return
	}
	defer f.Close()
	f.Write(append(b, '\n'))
}

// faultFree counts this start and reports whether it is not among the
// faulty ones (EnvFaultyStarts).
func faultFree() bool {
	list, state := os.Getenv(EnvFaultyStarts), os.Getenv(EnvState)
	if list == "" || state == "" {
		return false
	}
	b, _ := os.ReadFile(state)
	starts, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	starts++
	_ = os.WriteFile(state, []byte(strconv.Itoa(starts)), 0o644)
	for _, s := range strings.Split(list, ",") {
		if strings.TrimSpace(s) == strconv.Itoa(starts) {
			return false
		}
	}
	return true
}

func (f *fake) emit(v any) {
	b, _ := json.Marshal(v)
	f.out.Write(b)
	f.out.WriteByte('\n')
	if f.mode == ModeGarbage {
		f.out.WriteString("this is not json {\n")
		fmt.Fprintln(os.Stderr, "fake harness: some stderr noise")
	}
	f.out.Flush()
}

func (f *fake) context() int {
	if f.successor {
		if n, err := strconv.Atoi(os.Getenv(EnvSuccessorContext)); err == nil {
			return n
		}
		return 1000
	}
	if len(f.ctx) == 0 {
		return 1000
	}
	i := max(f.turn-1, 0)
	if i >= len(f.ctx) {
		i = len(f.ctx) - 1
	}
	return f.ctx[i]
}

func (f *fake) handle(line []byte) (code int, stop bool) {
	var msg struct {
		Type      string `json:"type"`
		RequestID string `json:"request_id"`
		Request   struct {
			Subtype string `json:"subtype"`
		} `json:"request"`
		Message struct {
			Content string `json:"content"`
		} `json:"message"`
	}
	if err := json.Unmarshal(line, &msg); err != nil {
		fmt.Fprintln(os.Stderr, "fake harness: bad input line:", err)
		return 0, false
	}
	switch msg.Type {
	case "control_request":
		f.control(msg.RequestID, msg.Request.Subtype)
	case "user":
		if strings.TrimSpace(msg.Message.Content) == "" {
			f.blank()
			return 0, false
		}
		return f.userTurn(msg.Message.Content)
	}
	return 0, false
}

// control answers a control request: get_context_usage with the context,
// anything else with an empty success.
func (f *fake) control(id, subtype string) {
	resp := map[string]any{}
	if subtype == "get_context_usage" {
		used := f.context()
		if f.turn == 0 && os.Getenv(EnvFloor) == "1" {
			used = 1000 // a fresh session's start-up floor
		}
		// Like the real harness, the count is broken down: the
		// system prompt (the floor) and the messages.
		floor := min(used, 1000)
		resp = map[string]any{"totalTokens": used, "maxTokens": 200000, "isAutoCompactEnabled": os.Getenv("DISABLE_AUTO_COMPACT") != "1" || os.Getenv(EnvAutoCompactOn) == "1",
			"categories": []any{
				map[string]any{"id": "system_prompt", "kind": "used", "tokens": floor},
				map[string]any{"id": "messages", "kind": "used", "tokens": used - floor},
			}}
	}
	f.emit(map[string]any{"type": "control_response", "response": map[string]any{"subtype": "success", "request_id": id, "response": resp}})
}

// blank turns a blank prompt down, like harness 2.1.328: without a turn
// or a request.
func (f *fake) blank() {
	f.emit(map[string]any{"type": "system", "subtype": "init", "session_id": f.session, "model": "fake"})
	f.emit(map[string]any{"type": "system", "subtype": "informational", "session_id": f.session,
		"content": "Blank prompt — the message was only whitespace, so nothing was sent to the model.", "level": "warning"})
	f.emit(map[string]any{"type": "result", "subtype": "success", "is_error": false, "result": "", "num_turns": 0,
		"session_id": f.session, "total_cost_usd": 0, "stop_reason": nil})
}

// userTurn plays one turn for the prompt text, with the faults of the
// fake's mode and environment.
func (f *fake) userTurn(text string) (code int, stop bool) {
	f.turn++
	logf(LogEntry{Event: "user", Session: f.session, Text: text})
	writing := strings.Contains(text, handoffwriter.PromptTag)
	if f.turn == 1 && !f.resumed && strings.Contains(text, "You are taking over") {
		f.successor = true
	}
	f.init()
	switch {
	case f.mode == ModeCrashMidLine, f.mode == ModeCrashWriting && writing:
		f.out.WriteString(`{"type":"assistant","message":{"id":"msg_`)
		f.out.Flush()
		return 3, true
	case f.mode == ModeHangTurn, f.mode == ModeHangWriting && writing:
		hang()
	case f.mode == ModeHugeLine:
		f.out.WriteString(`{"type":"user","message":{"role":"user","content":"` + strings.Repeat("x", 50<<20) + `"},"parent_tool_use_id":null}` + "\n")
	}
	first := f.turn == 1 && !f.successor && !writing
	if extra := os.Getenv(EnvExtraLine); extra != "" && first {
		f.out.WriteString(extra + "\n")
	}
	ctx := f.context()
	reply := "echo: " + text
	if writing {
		reply = f.handoff()
	}
	if f.turn == 1 && os.Getenv(EnvFloor) == "1" {
		f.assistant("reading the task", 1000, "_0")
	}
	if tries := os.Getenv(EnvPreCompact); tries != "" && first {
		f.out.Flush()
		for _, trigger := range strings.Split(tries, ",") {
			f.preCompact(trigger)
		}
	}
	f.assistant(reply, ctx, "")
	if f.mode == ModeHangAfter {
		hang()
	}
	if n, _ := strconv.Atoi(os.Getenv(EnvStreamBytes)); n > 0 && !writing {
		f.stream(n)
	}
	f.cost += 0.01
	f.emit(map[string]any{"type": "result", "subtype": "success", "is_error": false, "result": reply,
		"session_id": f.session, "total_cost_usd": f.cost, "num_turns": 1, "terminal_reason": "completed"})
	return 0, false
}

func (f *fake) assistant(text string, ctx int, idSuffix string) {
	f.emit(map[string]any{
		"type": "assistant", "session_id": f.session, "parent_tool_use_id": nil,
		"message": map[string]any{
			"id": "msg_" + strconv.Itoa(f.turn) + idSuffix, "model": "fake",
			"content": []any{map[string]any{"type": "text", "text": text}},
			"usage":   map[string]any{"input_tokens": 0, "cache_creation_input_tokens": 0, "cache_read_input_tokens": ctx, "output_tokens": 5},
		},
	})
}

// stream writes about n bytes of tool-result lines of 64 KiB each.
func (f *fake) stream(n int) {
	const size = 64 << 10
	content := strings.Repeat("x", size-200)
	for i := 0; i < n; i += size {
		f.emit(map[string]any{"type": "user", "session_id": f.session, "parent_tool_use_id": nil,
			"message": map[string]any{"role": "user", "content": []any{map[string]any{
				"type": "tool_result", "tool_use_id": "toolu_" + strconv.Itoa(i), "content": content}}}})
	}
}

// hang never returns: the turn never ends, whatever interrupt or SIGINT
// comes (control requests on stdin are no longer read).
func hang() {
	signal.Ignore(syscall.SIGINT, syscall.SIGTERM)
	time.Sleep(time.Hour)
}

// handoff is the fake's answer to the writing prompt: a complete document.
func (f *fake) handoff() string {
	return handoffwriter.Handoff{
		Doing: HandoffMark + " " + f.session + ": echoing turns.",
		Next:  "Echo the next turn.",
		Scene: "nothing on disk",
	}.Markdown()
}

// init writes the init line that starts a turn.
func (f *fake) init() {
	line := map[string]any{"type": "system", "subtype": "init", "session_id": f.session, "model": "fake"}
	if v := os.Getenv(EnvVersion); v != "" {
		line["claude_code_version"] = v
	}
	f.emit(line)
}

// proxy is ModeProxy.
func proxy() int {
	real := os.Getenv(EnvReal)
	if real == "" {
		fmt.Fprintln(os.Stderr, "fake harness: proxy mode without "+EnvReal)
		return 1
	}
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, EnvMode+"=") })
	if !slices.Contains(os.Args[1:], "-p") {
		err := syscall.Exec(real, append([]string{real}, os.Args[1:]...), env)
		fmt.Fprintln(os.Stderr, "fake harness: exec the real harness:", err)
		return 1
	}
	cmd := exec.Command(real, os.Args[1:]...)
	cmd.Env, cmd.Stdin, cmd.Stderr = env, os.Stdin, os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return 1
	}
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "fake harness: start the real harness:", err)
		return 1
	}
	signal.Ignore(syscall.SIGINT) // the real harness, in the same group, gets it
	r := bufio.NewReaderSize(out, 1<<20)
	w := bufio.NewWriter(os.Stdout)
	for {
		line, err := r.ReadBytes('\n')
		if len(line) > 0 {
			var m map[string]any
			if json.Unmarshal(line, &m) == nil && m["type"] == "assistant" {
				if msg, ok := m["message"].(map[string]any); ok {
					if u, ok := msg["usage"].(map[string]any); ok {
						delete(u, "cache_read_input_tokens")
						b, _ := json.Marshal(m)
						line = append(b, '\n')
					}
				}
			}
			w.Write(line)
			w.Flush()
		}
		if err != nil {
			break
		}
	}
	if err := cmd.Wait(); err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode()
		}
		return 1
	}
	return 0
}

// preCompact runs the PreCompact hooks of the fake's --settings for one
// compaction, as the real harness does: each command through sh, the hook
// input on its stdin, one after the other.
func (f *fake) preCompact(trigger string) {
	var settings string
	for _, a := range os.Args[1:] {
		if v, ok := strings.CutPrefix(a, "--settings="); ok {
			settings = v
		}
	}
	in, _ := json.Marshal(map[string]any{"hook_event_name": "PreCompact", "trigger": trigger, "session_id": f.session})
	gjson.Get(settings, "hooks.PreCompact.#.hooks.#.command").ForEach(func(_, cmds gjson.Result) bool {
		cmds.ForEach(func(_, c gjson.Result) bool {
			cmd := exec.Command("sh", "-c", c.String())
			cmd.Stdin = bytes.NewReader(in)
			out, err := cmd.Output()
			logf(LogEntry{Event: "precompact", Session: f.session, Text: trigger + ": " + strings.TrimSpace(string(out)) + errText(err)})
			return true
		})
		return true
	})
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return " (" + err.Error() + ")"
}
