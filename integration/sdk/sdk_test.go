package sdk_test

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/flowerhq/flower/handoffwriter"
	"github.com/flowerhq/flower/manifest"
	"github.com/flowerhq/flower/scriptedapi"
)

// The Agent SDK relay (DESIGN.md «Agent SDK relay») on the real SDK: an app
// (app.mjs, beside this file) calls query() with pathToClaudeCodeExecutable
// set to flower, the pinned harness beneath it, and the scripted API
// behind both. Each test asserts on what the app received and on what the
// API received.

// agentSDKVersion is the SDK release the Makefile installed
// ($FLOWER_AGENT_SDK_VERSION: the pinned one, or the one make compat asks
// for), else the pinned one.
var agentSDKVersion = cmp.Or(os.Getenv("FLOWER_AGENT_SDK_VERSION"), "0.3.328")

// sdkModules is the node_modules that holds the pinned SDK: $FLOWER_AGENT_SDK
// (make test sets it), else the cache the install script fills.
func sdkModules(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("needs the real harness, node and the Agent SDK: make test runs this, make unit does not")
	}
	dir := os.Getenv("FLOWER_AGENT_SDK")
	if dir == "" {
		cache := os.Getenv("XDG_CACHE_HOME")
		if cache == "" {
			home, _ := os.UserHomeDir()
			cache = filepath.Join(home, ".cache")
		}
		dir = filepath.Join(cache, "flower", "agent-sdk", agentSDKVersion, "node_modules")
	}
	if _, err := os.Stat(filepath.Join(dir, "@anthropic-ai", "claude-agent-sdk", "sdk.mjs")); err != nil {
		t.Fatalf("no Agent SDK %s in %s: run `make test` (it installs it) or scripts/install-agent-sdk.sh", agentSDKVersion, dir)
	}
	if _, err := exec.LookPath("node"); err != nil {
		t.Fatalf("node is required for the Agent SDK tests: %v", err)
	}
	return dir
}

// sdkLimit is the hang guard of one app run: several harness starts, a
// writing turn, and a loaded machine.
const sdkLimit = 5 * time.Minute

// appRun is what one run of the app printed, and how it ended.
type appRun struct {
	t     *testing.T
	lines []gjson.Result
	err   error
	cwd   string
}

// runApp runs the app on case which in cwd (a fresh one when ""), against
// srv, with env added to its environment. start, if set, is called with the
// running app's process once it started (the kill case).
func runApp(t *testing.T, which string, srv *scriptedapi.Server, cwd string, env []string, start func(*exec.Cmd)) *appRun {
	t.Helper()
	nm := sdkModules(t)
	bin := flowerBinary(t)
	harnessBin := harnessPath(t)
	if cwd == "" {
		cwd = t.TempDir()
	}
	home := filepath.Join(cwd, ".home")
	if err := os.MkdirAll(home, 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), sdkLimit)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "app.mjs")
	cmd.Env = append([]string{"HOME=" + home, "PATH=" + os.Getenv("PATH"), "TMPDIR=" + os.TempDir(),
		"SDK_NODE_MODULES=" + nm, "FLOWER_BIN=" + bin, "SDK_CASE=" + which, "SDK_CWD=" + cwd,
		"FLOWER_HARNESS=" + harnessBin, "FLOWER_WINDOW=200000"}, srv.Env()...)
	cmd.Env = append(cmd.Env, env...)
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("start node: %v", err)
	}
	if start != nil {
		start(cmd)
	}
	err := cmd.Wait()
	if ctx.Err() != nil {
		t.Fatalf("the app did not finish within %v (hang guard)\nstdout:\n%s\nstderr:\n%s\nflower.log:\n%s", sdkLimit, out.String(), stderr.String(), flowerLog(cwd))
	}
	run := &appRun{t: t, err: err, cwd: cwd}
	sc := bufio.NewScanner(bytes.NewReader(out.Bytes()))
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		if gjson.ValidBytes(sc.Bytes()) {
			run.lines = append(run.lines, gjson.ParseBytes(append([]byte(nil), sc.Bytes()...)))
		}
	}
	outText, errText := out.String(), stderr.String()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("app output:\n%s\nnode stderr:\n%s\nflower.log:\n%s", outText, errText, flowerLog(cwd))
		}
	})
	return run
}

// flowerLog is the newest run's log, for a failing test's report.
func flowerLog(cwd string) string {
	logs, _ := filepath.Glob(filepath.Join(cwd, ".flower", "runs", "*", "flower.log"))
	var b strings.Builder
	for _, l := range logs {
		data, _ := os.ReadFile(l)
		b.WriteString("== " + l + "\n")
		b.Write(data)
	}
	return b.String()
}

// events are the lines with ev == kind.
func (a *appRun) events(kind string) []gjson.Result {
	var out []gjson.Result
	for _, l := range a.lines {
		if l.Get("ev").String() == kind {
			out = append(out, l)
		}
	}
	return out
}

// messages are the SDK messages the app got of type typ (and subtype, when
// given).
func (a *appRun) messages(typ, subtype string) []gjson.Result {
	var out []gjson.Result
	for _, l := range a.events("message") {
		m := l.Get("m")
		if m.Get("type").String() == typ && (subtype == "" || m.Get("subtype").String() == subtype) {
			out = append(out, m)
		}
	}
	return out
}

// initSessions are the distinct session ids of the init lines, in order.
func (a *appRun) initSessions() []string {
	var ids []string
	for _, m := range a.messages("system", "init") {
		if id := m.Get("session_id").String(); !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	return ids
}

// manifestOf loads the manifest of the app's newest run.
func manifestOf(t *testing.T, cwd string) *manifest.Manifest {
	t.Helper()
	runs, _ := filepath.Glob(filepath.Join(cwd, ".flower", "runs", "*", "manifest.json"))
	if len(runs) == 0 {
		t.Fatalf("no manifest under %s", cwd)
	}
	m, err := manifest.Load(runs[len(runs)-1])
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// generations tells the sessions that ask the API apart by the order they
// first asked in: 1 for the first, 2 for its successor.
type generations struct {
	mu  sync.Mutex
	ids []string
}

func (g *generations) of(r *scriptedapi.Request) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	for i, id := range g.ids {
		if id == r.SessionID {
			return i + 1
		}
	}
	g.ids = append(g.ids, r.SessionID)
	return len(g.ids)
}

// docMark is in every handoff the scripted writing turn writes.
const docMark = "DOC-MARK-51d2"

func handoffDoc() scriptedapi.Reply {
	h := handoffwriter.Handoff{Doing: "ran touch a1.txt for the task " + docMark, Decided: "nothing yet",
		Deadends: "none", Next: "run touch b1.txt, then say B-DONE", Scene: "the task is FIRST-MSG"}
	return scriptedapi.Reply{Text: h.Markdown(), Usage: usage(153_000)}
}

func isWriting(r *scriptedapi.Request) bool {
	return strings.Contains(r.LastUserText, handoffwriter.PromptTag)
}

// handoffScript is the common story: generation 1 runs a tool, then its
// context crosses the threshold (150k of the 200k window); it writes its
// handoff when asked; generation 2 runs tool2 and finishes with B-DONE.
// gen1Second replaces generation 1's second reply (an overflow, say).
func handoffScript(g *generations, tool2 scriptedapi.Reply, gen1Second *scriptedapi.Reply) scriptedapi.Script {
	return func(r *scriptedapi.Request) scriptedapi.Reply {
		if r.Kind != scriptedapi.KindMain {
			return scriptedapi.Harmless(r)
		}
		if isWriting(r) {
			return handoffDoc()
		}
		switch n := g.of(r); {
		case n == 1 && len(r.LastToolResults) == 0:
			return bash(20_000, "touch a1.txt")
		case n == 1:
			if gen1Second != nil {
				return *gen1Second
			}
			return scriptedapi.Reply{Text: "A-PROGRESS", Usage: usage(152_000)}
		case len(r.LastToolResults) == 0:
			return tool2
		default:
			return scriptedapi.Reply{Text: "B-DONE", Usage: usage(30_000)}
		}
	}
}

// mainRequests are the API's main-thread requests, by session, in order.
func mainRequests(srv *scriptedapi.Server) (all []scriptedapi.Request, bySession map[string][]scriptedapi.Request) {
	bySession = map[string][]scriptedapi.Request{}
	for _, r := range srv.Requests() {
		if r.Kind == scriptedapi.KindMain {
			all = append(all, r)
			bySession[r.SessionID] = append(bySession[r.SessionID], r)
		}
	}
	return all, bySession
}

// mustOneResult checks the app got exactly one result and returns it.
func (a *appRun) mustOneResult() gjson.Result {
	a.t.Helper()
	rs := a.messages("result", "")
	if len(rs) != 1 {
		a.t.Fatalf("the app got %d results, want 1: %v", len(rs), stringsOf(rs))
	}
	return rs[0]
}

func TestSDKHandoffMidQuery(t *testing.T) {
	g := &generations{}
	srv := startServer(t, handoffScript(g, bash(25_000, "touch b1.txt"), nil))
	app := runApp(t, "handoff", srv, "", nil, nil)
	if app.err != nil || len(app.events("end")) != 1 {
		t.Fatalf("the query did not end cleanly: %v, errors %v", app.err, stringsOf(app.events("error")))
	}
	ids := app.initSessions()
	if len(ids) != 2 {
		t.Fatalf("init session ids %v, want two (A, then B)", ids)
	}
	a, b := ids[0], ids[1]
	res := app.mustOneResult()
	if res.Get("subtype").String() != "success" || res.Get("is_error").Bool() || res.Get("session_id").String() != b {
		t.Errorf("result %s: want success of session B %s", res.Raw, b)
	}
	if got := stringsOf(res.Get("flower.retired").Array()); len(got) != 1 || got[0] != a {
		t.Errorf("result's flower.retired %v, want [%s]", got, a)
	}
	var done, writing []gjson.Result
	for _, m := range app.messages("system", "flower_handoff") {
		switch m.Get("phase").String() {
		case "done":
			done = append(done, m)
		case "writing":
			writing = append(writing, m)
		}
	}
	if len(writing) != 1 || writing[0].Get("old_session_id").String() != a || writing[0].Get("context").Int() != 152_000 {
		t.Errorf("flower_handoff writing lines %v: want one, of A, at 152000", stringsOf(writing))
	}
	if len(done) != 1 || done[0].Get("old_session_id").String() != a || done[0].Get("new_session_id").String() != b ||
		done[0].Get("degraded").Bool() || done[0].Get("path").String() == "" {
		t.Errorf("flower_handoff done lines %v: want one, A → B, not degraded, with the path", stringsOf(done))
	}
	// Nothing of the writing turn reaches the app.
	for _, l := range app.events("message") {
		if strings.Contains(l.Raw, docMark) || strings.Contains(l.Raw, handoffwriter.PromptTag) {
			t.Errorf("the app saw the writing turn: %s", clip(l.Raw, 300))
		}
	}
	// canUseTool and PreToolUse fired in both generations, for their own
	// tools only; no callback saw the writing prompt.
	var asked []string
	for _, e := range app.events("canUseTool") {
		asked = append(asked, e.Get("input.command").String())
	}
	if strings.Join(asked, ",") != "touch a1.txt,touch b1.txt" {
		t.Errorf("canUseTool was asked for %v, want [touch a1.txt touch b1.txt]", asked)
	}
	hookSessions := map[string]bool{}
	for _, e := range app.events("hook") {
		if e.Get("event").String() == "PreToolUse" {
			hookSessions[e.Get("session_id").String()] = true
		}
		if strings.Contains(e.Get("prompt").String(), handoffwriter.PromptTag) {
			t.Errorf("a hook of the app saw the writing prompt: %s", clip(e.Raw, 200))
		}
	}
	if !hookSessions[a] || !hookSessions[b] || len(hookSessions) != 2 {
		t.Errorf("PreToolUse fired in sessions %v, want A %s and B %s", hookSessions, a, b)
	}
	// The appended system prompt is in every main request of both
	// generations, the writing turn's included.
	all, by := mainRequests(srv)
	for _, r := range all {
		if !strings.Contains(r.System, "APPEND-MARK-7f3c") {
			t.Errorf("main request %d of session %s lacks the appended system prompt", r.Seq, r.SessionID)
		}
	}
	if len(by[b]) == 0 || !strings.Contains(by[b][0].AllText, docMark) {
		t.Errorf("B's first request does not carry the handoff file")
	}
	m := manifestOf(t, app.cwd)
	st := m.Steps[0]
	if len(st.Retired) != 1 || st.Retired[0] != a || st.SessionID != b || st.Status != manifest.StatusSucceeded {
		t.Errorf("manifest: retired %v session %s status %s; want [%s] %s succeeded", st.Retired, st.SessionID, st.Status, a, b)
	}
}

// handedOff checks the common frame: the query ended cleanly and saw two
// sessions, A then B; it returns them.
func (a *appRun) handedOff() (string, string) {
	a.t.Helper()
	if a.err != nil || len(a.events("end")) != 1 {
		a.t.Fatalf("the query did not end cleanly: %v, errors %v", a.err, stringsOf(a.events("error")))
	}
	ids := a.initSessions()
	if len(ids) != 2 {
		a.t.Fatalf("init session ids %v, want two (A, then B)", ids)
	}
	return ids[0], ids[1]
}

func TestSDKMCPToolInSecondGeneration(t *testing.T) {
	g := &generations{}
	ping := scriptedapi.Reply{Text: "asking the probe", Usage: usage(25_000),
		ToolUses: []scriptedapi.ToolUse{{Name: "mcp__probe__ping", Input: map[string]any{"word": "x42"}}}}
	srv := startServer(t, handoffScript(g, ping, nil))
	app := runApp(t, "mcp", srv, "", nil, nil)
	_, b := app.handedOff()
	if calls := app.events("mcp"); len(calls) != 1 || calls[0].Get("args.word").String() != "x42" {
		t.Errorf("the app's MCP tool was called %v, want once with x42", stringsOf(calls))
	}
	_, by := mainRequests(srv)
	got := false
	for _, r := range by[b] {
		for _, tr := range r.LastToolResults {
			got = got || strings.Contains(tr.Content, "pong-x42")
		}
	}
	if !got {
		t.Errorf("no request of B carried the MCP tool's answer pong-x42")
	}
	if res := app.mustOneResult(); res.Get("is_error").Bool() || res.Get("session_id").String() != b {
		t.Errorf("result %s: want success of B", res.Raw)
	}
}

func TestSDKStreamedMessageDuringHandoff(t *testing.T) {
	g := &generations{}
	srv := startServer(t, func(r *scriptedapi.Request) scriptedapi.Reply {
		if r.Kind == scriptedapi.KindMain && g.of(r) == 1 && len(r.LastToolResults) > 0 && !isWriting(r) {
			// Slow enough that the app's second message arrives while
			// the session is being cut.
			rep := scriptedapi.Reply{Text: "A-PROGRESS", Usage: usage(152_000)}
			return rep
		}
		return handoffScript(g, bash(25_000, "touch b1.txt"), nil)(r)
	})
	app := runApp(t, "stream", srv, "", nil, nil)
	a, b := app.handedOff()
	// The permission mode the app set in A holds in B: its settings were
	// replayed to the successor.
	if len(app.events("permissionModeSet")) != 1 {
		t.Errorf("setPermissionMode did not succeed: %v", stringsOf(app.events("permissionModeError")))
	}
	for _, m := range app.messages("system", "init") {
		if m.Get("session_id").String() == b && m.Get("permissionMode").String() != "acceptEdits" {
			t.Errorf("B's init has permissionMode %q, want acceptEdits", m.Get("permissionMode").String())
		}
	}
	if rs := app.messages("result", ""); len(rs) != 2 || rs[0].Get("session_id").String() != b || rs[1].Get("session_id").String() != b {
		t.Errorf("results %v: want two, both of B", stringsOf(rs))
	}
	_, by := mainRequests(srv)
	for _, r := range by[a] {
		if strings.Contains(r.AllText, "SECOND-MSG") {
			t.Errorf("the second message reached A (request %d)", r.Seq)
		}
	}
	// B's first request is the handoff prompt; the second message comes
	// in a later request, after it.
	if len(by[b]) == 0 || !strings.Contains(by[b][0].AllText, docMark) || strings.Contains(by[b][0].AllText, "SECOND-MSG") {
		t.Fatalf("B's first request should carry the handoff and not yet the second message")
	}
	last := by[b][len(by[b])-1]
	hand, second := strings.Index(last.AllText, docMark), strings.Index(last.AllText, "SECOND-MSG")
	if second < 0 || hand < 0 || second < hand {
		t.Errorf("B's last request: handoff at %d, second message at %d; want the message after the handoff", hand, second)
	}
}

func TestSDKInterruptInSecondGeneration(t *testing.T) {
	g := &generations{}
	srv := startServer(t, handoffScript(g, bash(25_000, "tail -f /dev/null"), nil))
	start := time.Now()
	app := runApp(t, "interrupt", srv, "", nil, nil)
	_, b := app.handedOff()
	if len(app.events("interrupted")) != 1 {
		t.Fatalf("q.interrupt() did not succeed: %v", stringsOf(app.events("interruptError")))
	}
	res := app.mustOneResult()
	if res.Get("session_id").String() != b || res.Get("subtype").String() != "error_during_execution" {
		t.Errorf("result %s: want B's interrupted turn", res.Raw)
	}
	// The sleep was stopped, not waited out: no API request after it asked
	// B's tool result.
	_, by := mainRequests(srv)
	for _, r := range by[b] {
		for _, tr := range r.LastToolResults {
			if !tr.IsError && !strings.Contains(tr.Content, "interrupt") {
				t.Errorf("B's tool ran to its end (%q) although interrupted", tr.Content)
			}
		}
	}
	t.Logf("query with interrupt took %v", time.Since(start).Round(time.Second))
}

// An interrupt the app sends while the handoff is written is the
// successor's: the writing turn is not disturbed, and the app's turn ends
// in the successor, interrupted.
func TestSDKInterruptDuringHandoff(t *testing.T) {
	g := &generations{}
	srv := startServer(t, handoffScript(g, bash(25_000, "tail -f /dev/null"), nil))
	app := runApp(t, "interruptHandoff", srv, "", nil, nil)
	a, b := app.handedOff()
	if len(app.events("interrupted")) != 1 {
		t.Fatalf("q.interrupt() did not succeed: %v", stringsOf(app.events("interruptError")))
	}
	res := app.mustOneResult()
	if res.Get("session_id").String() != b || res.Get("subtype").String() != "error_during_execution" {
		t.Errorf("result %s: want B's interrupted turn", clip(res.Raw, 300))
	}
	// B read its handoff before the interrupt reached it.
	if _, by := mainRequests(srv); len(by[b]) == 0 || !strings.Contains(by[b][0].AllText, docMark) {
		t.Errorf("B never asked the API with its handoff: the interrupt came before the handoff prompt ran")
	}
	st := manifestOf(t, app.cwd).Steps[0]
	if len(st.Generations) == 0 || st.Generations[0].Handoff == nil || st.Generations[0].Handoff.Degraded ||
		st.Generations[0].SessionID != a {
		t.Errorf("A's handoff: %+v; want one written in full", st.Generations[0].Handoff)
	}
}

func TestSDKResumeRetiredSession(t *testing.T) {
	g := &generations{}
	handoff := handoffScript(g, bash(25_000, "touch b1.txt"), nil)
	srv := startServer(t, func(r *scriptedapi.Request) scriptedapi.Reply {
		if r.Kind == scriptedapi.KindMain && strings.Contains(r.LastUserText, "AGAIN-MSG") {
			return scriptedapi.Reply{Text: "C-DONE", Usage: usage(35_000)}
		}
		return handoff(r)
	})
	first := runApp(t, "handoff", srv, "", nil, nil)
	a, b := first.handedOff()
	// The app stored the first id it saw, A, and resumes it.
	again := runApp(t, "handoff", srv, first.cwd, []string{"SDK_RESUME=" + a, "SDK_PROMPT=AGAIN-MSG: one more thing"}, nil)
	if again.err != nil || len(again.events("end")) != 1 {
		t.Fatalf("the resumed query did not end cleanly: %v %v", again.err, stringsOf(again.events("error")))
	}
	res := again.mustOneResult()
	if res.Get("is_error").Bool() || res.Get("result").String() != "C-DONE" {
		t.Errorf("resumed query's result %s: want C-DONE", clip(res.Raw, 300))
	}
	var asked []scriptedapi.Request
	for _, r := range srv.Requests() {
		if r.Kind == scriptedapi.KindMain && strings.Contains(r.LastUserText, "AGAIN-MSG") {
			asked = append(asked, r)
		}
	}
	if len(asked) != 1 {
		t.Fatalf("the API saw the resumed message %d times, want once", len(asked))
	}
	// B's conversation, not A's and not a fresh one, carries the message.
	if asked[0].SessionID != b || !strings.Contains(asked[0].AllText, "B-DONE") || strings.Contains(asked[0].AllText, "A-PROGRESS") {
		t.Errorf("the resumed message went to session %s (A %s, B %s) with B's history %v", asked[0].SessionID, a, b,
			strings.Contains(asked[0].AllText, "B-DONE"))
	}
}

func TestSDKJSONSchema(t *testing.T) {
	g := &generations{}
	answer := scriptedapi.Reply{Text: "", Usage: usage(25_000),
		ToolUses: []scriptedapi.ToolUse{{Name: "StructuredOutput", Input: map[string]any{"answer": "42"}}}}
	handoff := handoffScript(g, answer, nil)
	var enforced atomic.Int32 // requests the harness made to force StructuredOutput
	srv := startServer(t, func(r *scriptedapi.Request) scriptedapi.Reply {
		if r.Kind == scriptedapi.KindMain && strings.Contains(r.LastUserText, "structured-output-enforce") {
			enforced.Add(1)
		}
		if r.Kind == scriptedapi.KindMain && !isWriting(r) && strings.Contains(r.LastUserText, "structured-output-enforce") {
			// A model does as it is told: it calls the tool.
			return scriptedapi.Reply{Usage: usage(153_500),
				ToolUses: []scriptedapi.ToolUse{{Name: "StructuredOutput", Input: map[string]any{"answer": "from the writing turn"}}}}
		}
		return handoff(r)
	})
	app := runApp(t, "schema", srv, "", nil, nil)
	// The harness says it will force StructuredOutput on the handoff (its
	// enforce line), and the relay ends the writing turn there; the
	// request itself goes out only when it outruns the relay's interrupt.
	if enforced.Load() == 0 && !strings.Contains(flowerLog(app.cwd), "the harness would force a StructuredOutput call") {
		t.Errorf("the harness never asked for StructuredOutput: the test does not test the writing turn under --json-schema")
	}
	_, b := app.handedOff()
	res := app.mustOneResult()
	if res.Get("is_error").Bool() || res.Get("session_id").String() != b || res.Get("structured_output.answer").String() != "42" {
		t.Errorf("result %s: want B's structured answer 42", clip(res.Raw, 600))
	}
	st := manifestOf(t, app.cwd).Steps[0]
	if len(st.Generations) < 1 || st.Generations[0].Handoff == nil {
		t.Fatalf("no handoff recorded: %+v", st)
	}
	if h := st.Generations[0].Handoff; h.Degraded || h.Outcome != manifest.OutcomeWritten {
		t.Errorf("handoff outcome %q degraded %v (%s): want written, complete", h.Outcome, h.Degraded, h.Why)
	}
}

func TestSDKGenerationLimit(t *testing.T) {
	g := &generations{}
	srv := startServer(t, handoffScript(g, bash(25_000, "touch b1.txt"), nil))
	app := runApp(t, "handoff", srv, "", []string{"FLOWER_MAX_GENERATIONS=1"}, nil)
	rs := app.messages("result", "")
	if len(rs) != 1 || !rs[0].Get("is_error").Bool() || !strings.Contains(rs[0].Get("result").String(), "generation limit") {
		t.Fatalf("results %v: want one error result naming the generation limit", stringsOf(rs))
	}
	if ids := app.initSessions(); len(ids) != 1 {
		t.Errorf("init sessions %v: no successor may start", ids)
	}
	// The SDK turns the error result into an error the app catches.
	if errs := app.events("error"); len(errs) != 1 || !strings.Contains(errs[0].Get("message").String(), "generation limit") {
		t.Errorf("the app caught %v, want the generation limit", stringsOf(errs))
	}
	st := manifestOf(t, app.cwd).Steps[0]
	if st.Status != manifest.StatusGenerationLimit {
		t.Errorf("step status %s, want %s", st.Status, manifest.StatusGenerationLimit)
	}
}

func TestSDKOverflowDegrades(t *testing.T) {
	g := &generations{}
	overflow := scriptedapi.Overflow(250_000, 200_000)
	srv := startServer(t, handoffScript(g, bash(25_000, "touch b1.txt"), &overflow))
	app := runApp(t, "handoff", srv, "", nil, nil)
	a, b := app.handedOff()
	res := app.mustOneResult()
	if res.Get("is_error").Bool() || res.Get("session_id").String() != b || res.Get("result").String() != "B-DONE" {
		t.Errorf("result %s: want B-DONE from B", clip(res.Raw, 300))
	}
	var done []gjson.Result
	for _, m := range app.messages("system", "flower_handoff") {
		if m.Get("phase").String() == "done" {
			done = append(done, m)
		}
	}
	if len(done) != 1 || !done[0].Get("degraded").Bool() || done[0].Get("old_session_id").String() != a {
		t.Errorf("flower_handoff done %v: want one, degraded, from A", stringsOf(done))
	}
	for _, m := range app.messages("assistant", "") {
		if strings.Contains(m.Raw, "Prompt is too long") {
			t.Errorf("the app saw A's overflow: %s", clip(m.Raw, 200))
		}
	}
}

// marked lists the processes whose environment holds mark, with their
// executables.
func marked(mark string) map[int]string {
	out := map[int]string{}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil || !bytes.Contains(env, []byte(mark)) {
			continue
		}
		exe, _ := os.Readlink(filepath.Join("/proc", e.Name(), "exe"))
		out[pid] = exe
	}
	return out
}

func TestSDKAppKilledLeavesNoHarness(t *testing.T) {
	mark := fmt.Sprintf("SDK_KILL_MARK=%d", time.Now().UnixNano())
	asked := make(chan struct{}, 1)
	srv := startServer(t, func(r *scriptedapi.Request) scriptedapi.Reply {
		if r.Kind != scriptedapi.KindMain {
			return scriptedapi.Harmless(r)
		}
		select {
		case asked <- struct{}{}:
		default:
		}
		return scriptedapi.Reply{Text: "slow", Usage: usage(20_000), Delay: 2 * time.Minute}
	})
	harnessBin := harnessPath(t)
	runApp(t, "handoff", srv, "", []string{mark}, func(cmd *exec.Cmd) {
		select {
		case <-asked:
		case <-time.After(sdkLimit):
			t.Fatal("hang guard: the harness never asked the API")
		}
		before := marked(mark)
		var harnesses int
		for _, exe := range before {
			if exe == harnessBin {
				harnesses++
			}
		}
		if harnesses == 0 {
			t.Errorf("no harness among the app's processes %v before the kill", before)
		}
		if err := cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
	})
	// Nothing the app started may live on: not flower, not the harness.
	deadline := time.Now().Add(waitLimit)
	for {
		left := marked(mark)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%v after the app was killed, still running: %v", waitLimit, left)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func TestSDKHarnessCrashRetried(t *testing.T) {
	mark := fmt.Sprintf("SDK_CRASH_MARK=%d", time.Now().UnixNano())
	first := make(chan struct{}, 1)
	var n atomic.Int32
	srv := startServer(t, func(r *scriptedapi.Request) scriptedapi.Reply {
		if r.Kind != scriptedapi.KindMain {
			return scriptedapi.Harmless(r)
		}
		switch n.Add(1) {
		case 1:
			// A first round the harness records, so that the session
			// can be resumed.
			return bash(20_000, "touch a1.txt")
		case 2:
			first <- struct{}{}
			return scriptedapi.Reply{Text: "never seen", Usage: usage(21_000), Delay: 2 * time.Minute}
		}
		return scriptedapi.Reply{Text: "RETRY-DONE", Usage: usage(22_000)}
	})
	harnessBin := harnessPath(t)
	app := runApp(t, "handoff", srv, "", []string{mark}, func(*exec.Cmd) {
		go func() {
			select {
			case <-first:
			case <-time.After(sdkLimit):
				return // the app's own hang guard reports it
			}
			for pid, exe := range marked(mark) {
				if exe == harnessBin {
					_ = syscall.Kill(pid, syscall.SIGKILL)
				}
			}
		}()
	})
	if app.err != nil || len(app.events("end")) != 1 {
		t.Fatalf("the query did not end cleanly: %v, errors %v", app.err, stringsOf(app.events("error")))
	}
	retries := app.messages("system", "flower_retry")
	if len(retries) != 1 || retries[0].Get("reason").String() == "" {
		t.Errorf("flower_retry lines %v: want one, with the reason", stringsOf(retries))
	}
	res := app.mustOneResult()
	if res.Get("is_error").Bool() || res.Get("result").String() != "RETRY-DONE" {
		t.Errorf("result %s: want RETRY-DONE", clip(res.Raw, 300))
	}
	all, _ := mainRequests(srv)
	if len(all) != 3 || all[2].SessionID != all[0].SessionID || !strings.Contains(all[2].LastUserText, "stopped unexpectedly") {
		t.Errorf("the API saw %d main requests; want the third to resume the same session with the retry's note", len(all))
	}
	if ids := app.initSessions(); len(ids) != 1 || retries[0].Get("session_id").String() != ids[0] {
		t.Errorf("init sessions %v, retry line %s: want one session throughout, named by the retry line", ids, retries[0].Raw)
	}
	if st := manifestOf(t, app.cwd).Steps[0]; st.Attempts != 1 || st.Status != manifest.StatusSucceeded {
		t.Errorf("manifest: attempts %d status %s, want 1, succeeded", st.Attempts, st.Status)
	}
}

// byHand runs flower the way the SDK starts it, with the SDK's first lines
// written by hand and its input closed after them; it returns flower's
// stdout lines, its stderr and how it exited.
func byHand(t *testing.T, srv *scriptedapi.Server, env ...string) (lines []string, stderr string, cwd string, err error) {
	t.Helper()
	harnessBin := harnessPath(t)
	cwd = t.TempDir()
	home := filepath.Join(cwd, ".home")
	if err := os.MkdirAll(home, 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), sdkLimit)
	defer cancel()
	cmd := exec.CommandContext(ctx, flowerBinary(t), "--output-format", "stream-json", "--verbose", "--input-format", "stream-json",
		"--allowedTools=Bash")
	cmd.Dir = cwd
	cmd.Env = append([]string{"HOME=" + home, "PATH=" + os.Getenv("PATH"), "TMPDIR=" + os.TempDir(),
		"FLOWER_HARNESS=" + harnessBin, "FLOWER_WINDOW=200000"}, srv.Env()...)
	cmd.Env = append(cmd.Env, env...)
	cmd.Stdin = strings.NewReader(`{"type":"control_request","request_id":"init-1","request":{"subtype":"initialize"}}
not JSON at all
{"type":"user","session_id":"","parent_tool_use_id":null,"message":{"role":"user","content":"FIRST-MSG: do the task"}}
`)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("hang guard: flower did not end within %v\nstderr:\n%s\nflower.log:\n%s", sdkLimit, errOut.String(), flowerLog(cwd))
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("stdout:\n%s\nstderr:\n%s\nflower.log:\n%s", out.String(), errOut.String(), flowerLog(cwd))
		}
	})
	return strings.Split(strings.TrimSpace(out.String()), "\n"), errOut.String(), cwd, err
}

// Without the SDK: flower given the SDK's arguments and lines by hand. Its
// stdout carries the protocol only, even with the status lines on stderr;
// a line that is not JSON is skipped; the generation limit ends in an error
// result and exit status 1.
func TestRelayProtocolOnlyAndExitStatus(t *testing.T) {
	g := &generations{}
	srv := startServer(t, handoffScript(g, bash(25_000, "touch b1.txt"), nil))
	lines, stderr, cwd, err := byHand(t, srv, "FLOWER_MAX_GENERATIONS=1", "FLOWER_STATUS=stderr")
	if code := exitCode(err); code != 1 {
		t.Errorf("exit status %d, want 1 (the generation limit)", code)
	}
	var results []gjson.Result
	for _, l := range lines {
		if !gjson.Valid(l) {
			t.Errorf("stdout carries something other than the protocol: %q", clip(l, 200))
			continue
		}
		if r := gjson.Parse(l); r.Get("type").String() == "result" {
			results = append(results, r)
		}
	}
	if len(results) != 1 || !results[0].Get("is_error").Bool() || results[0].Get("flower.generations").Int() != 1 {
		t.Errorf("results %v: want one error result of generation 1", stringsOf(results))
	}
	// The status lines (English) went to stderr, and to the log: the
	// writing line at least.
	if !strings.Contains(stderr, "152.0K") {
		t.Errorf("stderr has no status line of the handoff:\n%s", stderr)
	}
	if log := flowerLog(cwd); !strings.Contains(log, `"msg":"status"`) || !strings.Contains(log, "152.0K") {
		t.Errorf("flower.log has no status line of the handoff")
	}
}

// FLOWER_HANDOFF=off: a plain relay. The context crosses the threshold and
// nothing happens; the turn's result is the app's; flower exits 0.
func TestRelayHandoffOff(t *testing.T) {
	g := &generations{}
	srv := startServer(t, handoffScript(g, bash(25_000, "touch b1.txt"), nil))
	lines, _, _, err := byHand(t, srv, "FLOWER_HANDOFF=off")
	if err != nil {
		t.Errorf("flower: %v, want exit status 0", err)
	}
	var results, handoffs []gjson.Result
	for _, l := range lines {
		switch r := gjson.Parse(l); {
		case r.Get("type").String() == "result":
			results = append(results, r)
		case r.Get("subtype").String() == "flower_handoff":
			handoffs = append(handoffs, r)
		}
	}
	if len(handoffs) != 0 || len(results) != 1 || results[0].Get("result").String() != "A-PROGRESS" || results[0].Get("is_error").Bool() {
		t.Errorf("handoff lines %v, results %v: want none, and A's own result", stringsOf(handoffs), stringsOf(results))
	}
	for _, r := range srv.Requests() {
		if isWriting(&r) {
			t.Errorf("request %d asked for a handoff with handoff off", r.Seq)
		}
	}
}

// An app resumes a long conversation of its own, already past the
// threshold: it is no fresh session whose start-up floor says every
// successor would hand off at once, so it hands off and goes on.
func TestSDKResumeLongConversationHandsOff(t *testing.T) {
	g := &generations{}
	srv := startServer(t, func(r *scriptedapi.Request) scriptedapi.Reply {
		if r.Kind != scriptedapi.KindMain {
			return scriptedapi.Harmless(r)
		}
		switch n := g.of(r); {
		case isWriting(r):
			return handoffDoc()
		case n == 1 && strings.Contains(r.LastUserText, "AGAIN-MSG"):
			return scriptedapi.Reply{Text: "A-AGAIN", Usage: usage(165_000)}
		case n == 1:
			return scriptedapi.Reply{Text: "A-LONG", Usage: usage(160_000)}
		default:
			return scriptedapi.Reply{Text: "B-DONE", Usage: usage(30_000)}
		}
	})
	// Built without handoff, the conversation is past 150k of the window.
	first := runApp(t, "handoff", srv, "", []string{"FLOWER_HANDOFF=off"}, nil)
	if ids := first.initSessions(); first.err != nil || len(ids) != 1 {
		t.Fatalf("first query: %v, sessions %v", first.err, ids)
	}
	a := first.initSessions()[0]
	again := runApp(t, "handoff", srv, first.cwd, []string{"SDK_RESUME=" + a, "SDK_PROMPT=AGAIN-MSG: go on"}, nil)
	a2, b := again.handedOff()
	if a2 != a {
		t.Errorf("the resumed query started in %s, want %s", a2, a)
	}
	res := again.mustOneResult()
	if res.Get("is_error").Bool() || res.Get("session_id").String() != b || res.Get("result").String() != "B-DONE" {
		t.Errorf("result %s: want B-DONE from the successor", clip(res.Raw, 300))
	}
}

// TestSDKCompactBecomesHandoff: an application's /compact is blocked by
// flower's hook (no summary request reaches the API) and answered with a
// handoff at the message boundary (DESIGN.md «Compaction asked for»).
func TestSDKCompactBecomesHandoff(t *testing.T) {
	g := &generations{}
	early := scriptedapi.Reply{Text: "A-PROGRESS", Usage: usage(60_000)}
	srv := startServer(t, handoffScript(g, bash(25_000, "touch b1.txt"), &early))
	app := runApp(t, "compact", srv, "", []string{"CLAUDE_CODE_AUTO_COMPACT_WINDOW=100000"}, nil)
	a, b := app.handedOff()
	for _, r := range srv.Requests() {
		if strings.Contains(r.LastUserText, "CRITICAL: Respond with TEXT ONLY") {
			t.Errorf("request %d is a summary request: the /compact compacted", r.Seq)
		}
	}
	for _, l := range app.lines {
		if strings.Contains(l.Raw, "compact_boundary") {
			t.Errorf("the app saw a compaction: %s", clip(l.Raw, 300))
		}
	}
	if rs := app.messages("result", ""); len(rs) != 2 || rs[0].Get("session_id").String() != a || rs[1].Get("session_id").String() != b {
		t.Errorf("results %v: want A's first turn, then B's", stringsOf(rs))
	}
	st := manifestOf(t, app.cwd).Steps[0]
	if len(st.Generations) != 2 || st.Generations[0].Handoff == nil || st.Generations[0].Handoff.Reason != manifest.ReasonCompactBlocked {
		t.Fatalf("generations %+v: want a handoff for the /compact", st.Generations)
	}
	if bc := st.Generations[0].BlockedCompactions; len(bc) != 1 || bc[0].Trigger != "manual" || bc[0].Context != 60_000 {
		t.Errorf("blocked compactions %+v: want the /compact at 60K", bc)
	}
	_, by := mainRequests(srv)
	if len(by[b]) == 0 || !strings.Contains(by[b][0].AllText, docMark) {
		t.Errorf("B's first request does not carry the handoff file")
	}
}

// TestSDKHandoffNow: flower handoff now reaches a flower an application
// started (its run is the workspace's latest): during a long tool call,
// the session hands off at the boundary, reason requested, and the query
// goes on in the successor.
func TestSDKHandoffNow(t *testing.T) {
	mark := fmt.Sprintf("SDK_NOW_MARK=%d", time.Now().UnixNano())
	g := &generations{}
	// Generation 1's first reply runs a tool that waits.
	first := true
	var mu sync.Mutex
	script := handoffScript(g, bash(25_000, "touch b1.txt"), nil)
	srv := startServer(t, func(r *scriptedapi.Request) scriptedapi.Reply {
		mu.Lock()
		defer mu.Unlock()
		if r.Kind == scriptedapi.KindMain && first && !isWriting(r) {
			first = false
			g.of(r)
			return bash(20_000, "timeout 120 tail -f /dev/null; touch late.txt")
		}
		return script(r)
	})
	cwd := t.TempDir()
	var out []byte
	var err error
	app := runApp(t, "handoff", srv, cwd, []string{mark}, func(*exec.Cmd) {
		deadline := time.Now().Add(sdkLimit)
		for !slices.ContainsFunc(slices.Collect(maps.Values(marked(mark))), func(exe string) bool { return filepath.Base(exe) == "tail" }) {
			if time.Now().After(deadline) {
				t.Error("hang guard: the tool never ran")
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
		out, err = exec.Command(flowerBinary(t), "handoff", "now", "-C", cwd).CombinedOutput()
	})
	if err != nil || !strings.Contains(string(out), "next message boundary") {
		t.Fatalf("flower handoff now: %v\n%s", err, out)
	}
	app.handedOff()
	st := manifestOf(t, app.cwd).Steps[0]
	if len(st.Generations) != 2 || st.Generations[0].Handoff == nil || st.Generations[0].Handoff.Reason != manifest.ReasonRequested {
		t.Fatalf("generations %+v: want a handoff, reason requested", st.Generations)
	}
	if _, err := os.Stat(filepath.Join(cwd, "late.txt")); err == nil {
		t.Errorf("the tool ran to its end: the cut was not at the boundary")
	}
}

// An endpoint that refuses the connection, under the Agent SDK: flower in
// the harness's place stops the step at the harness's first retry and the
// application gets one error result naming the endpoint, not minutes of
// silence; the manifest says unreachable.
func TestSDKRefusedEndpoint(t *testing.T) {
	srv := startServer(t, func(r *scriptedapi.Request) scriptedapi.Reply { return scriptedapi.Harmless(r) })
	closed := srv.URL
	srv.Close()
	app := runApp(t, "handoff", srv, "", []string{"ANTHROPIC_BASE_URL=" + closed}, nil)
	rs := app.messages("result", "")
	if len(rs) == 0 || !rs[0].Get("is_error").Bool() || !strings.Contains(rs[0].Get("result").String(), "the API endpoint "+closed+" refused the connection") {
		t.Fatalf("results %v: want an error result naming the refused endpoint", stringsOf(rs))
	}
	if st := manifestOf(t, app.cwd).Steps[0]; st.Status != manifest.StatusUnreachable {
		t.Errorf("step status %s, want %s", st.Status, manifest.StatusUnreachable)
	}
}
