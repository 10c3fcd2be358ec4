package relay

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/flowerhq/flower/event"
	"github.com/flowerhq/flower/front"
)

// These tests drive the relay's sessions through the seam as the engine
// does (Next, which says the fact before is handled, Cut, Send of a turn
// kind, Cancel, Stop) against the
// scripted harness of main_test.go; the engine itself drives the relay in
// relay_test.go and integration/sdk.

// guard bounds every wait of these tests; each wait ends on a
// condition, long before it in a passing run.
const guard = time.Minute

// appOut is the application's side of the relay's output: the lines it got.
type appOut struct {
	mu      sync.Mutex
	buf     []byte
	lines   []gjson.Result
	changed chan struct{}
}

func newAppOut() *appOut { return &appOut{changed: make(chan struct{})} }

func (o *appOut) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.buf = append(o.buf, p...)
	for {
		i := strings.IndexByte(string(o.buf), '\n')
		if i < 0 {
			break
		}
		o.lines = append(o.lines, gjson.Parse(string(o.buf[:i])))
		o.buf = o.buf[i+1:]
	}
	close(o.changed)
	o.changed = make(chan struct{})
	return len(p), nil
}

func (o *appOut) snapshot() ([]gjson.Result, chan struct{}) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]gjson.Result(nil), o.lines...), o.changed
}

// wait returns the lines so far once one matches.
func (o *appOut) wait(t *testing.T, what string, match func(gjson.Result) bool) []gjson.Result {
	t.Helper()
	deadline := time.After(guard)
	for {
		lines, changed := o.snapshot()
		for _, l := range lines {
			if match(l) {
				return lines
			}
		}
		select {
		case <-changed:
		case <-deadline:
			t.Fatalf("hang guard: the application got no %s; it got %v", what, lines)
		}
	}
}

func count(lines []gjson.Result, match func(gjson.Result) bool) int {
	n := 0
	for _, l := range lines {
		if match(l) {
			n++
		}
	}
	return n
}

func isResult(l gjson.Result) bool { return l.Get("type").String() == "result" }

// rig is one relay with an application and a directory for its harnesses.
type rig struct {
	t     *testing.T
	rl    *Relay
	appIn *io.PipeWriter
	out   *appOut
	dir   string
	n     int
}

func newRig(t *testing.T, extraArgs ...string) *rig {
	inR, inW := io.Pipe()
	g := &rig{t: t, appIn: inW, out: newAppOut(), dir: t.TempDir()}
	args := append([]string{"--output-format", "stream-json", "--verbose", "--input-format", "stream-json"}, extraArgs...)
	g.rl = New(Config{In: inR, Out: g.out, Args: args})
	g.rl.Start()
	t.Cleanup(func() { inW.Close() })
	return g
}

func (g *rig) send(line string) {
	g.t.Helper()
	if _, err := io.WriteString(g.appIn, line+"\n"); err != nil {
		g.t.Fatal(err)
	}
}

// scriptedHarness is one scripted harness the relay launched.
type scriptedHarness struct {
	*session
	stdin string // the file of what it read
}

// launch starts the harness of one attempt, playing sc.
func (g *rig) launch(gen int, prompt string, sc script) *scriptedHarness {
	g.t.Helper()
	g.n++
	path := filepath.Join(g.dir, fmt.Sprintf("script-%d.json", g.n))
	b, _ := json.Marshal(sc)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		g.t.Fatal(err)
	}
	stdin := filepath.Join(g.dir, fmt.Sprintf("stdin-%d", g.n))
	s, err := g.rl.Launch(context.Background(), front.Spec{Step: "main", Generation: gen, Path: os.Args[0], Prompt: prompt,
		Dir: g.dir, Env: append(os.Environ(), envScript+"="+path, envStdin+"="+stdin), Grace: 5 * time.Second})
	if err != nil {
		g.t.Fatal(err)
	}
	h := &scriptedHarness{session: s.(*session), stdin: stdin}
	g.t.Cleanup(h.Stop)
	return h
}

// read is what the harness read so far: its arguments, then its stdin
// lines.
func (h *scriptedHarness) read() []gjson.Result {
	b, _ := os.ReadFile(h.stdin)
	var out []gjson.Result
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		out = append(out, gjson.Parse(l))
	}
	return out
}

// engine plays the engine's side of one session: it reads the facts and
// says when it has handled them, by asking for the next (front.Session.Next).
type engine struct {
	t   *testing.T
	s   front.Session
	got []front.Fact
	// asked is the Next under way, asked by handled.
	asked chan nextFact
}

type nextFact struct {
	f   front.Fact
	err error
}

// handled says that the engine has handled the fact it took last: it asks
// for the next one.
func (e *engine) handled() {
	if e.asked != nil {
		return
	}
	ch := make(chan nextFact, 1)
	e.asked = ch
	go func() {
		f, err := e.s.Next(context.Background())
		ch <- nextFact{f, err}
	}()
}

// next is the next fact, not handled yet; false when the facts ended.
func (e *engine) next() (front.Fact, bool) {
	e.t.Helper()
	e.handled()
	select {
	case x := <-e.asked:
		e.asked = nil
		if x.err != nil {
			return nil, false
		}
		e.got = append(e.got, x.f)
		return x.f, true
	case <-time.After(guard):
		e.t.Fatalf("hang guard: no fact; got %s", describe(e.got))
		return nil, false
	}
}

// upTo reads facts, handling each, up to the first that matches, which it
// returns unhandled.
func (e *engine) upTo(what string, match func(front.Fact) bool) front.Fact {
	e.t.Helper()
	for {
		f, ok := e.next()
		if !ok {
			e.t.Fatalf("the facts ended before %s; got %s", what, describe(e.got))
		}
		if match(f) {
			return f
		}
		e.handled()
	}
}

// rest reads the facts to their end without handling any.
func (e *engine) rest() {
	e.t.Helper()
	for {
		if _, ok := e.next(); !ok {
			return
		}
	}
}

// describe is facts as a person reads them, an Output by its line.
func describe(facts []front.Fact) string {
	var b strings.Builder
	for _, f := range facts {
		if o, ok := f.(front.Output); ok {
			fmt.Fprintf(&b, "\n  Output %s", o.Raw)
			continue
		}
		fmt.Fprintf(&b, "\n  %T %+v", f, f)
	}
	return b.String()
}

func turnEnded(f front.Fact) bool { _, ok := f.(front.TurnEnded); return ok }

func roundOf(ctx int) func(front.Fact) bool {
	return func(f front.Fact) bool { r, ok := f.(front.Round); return ok && r.Context == ctx }
}

// Lines of the scripted harness.
func initLine(sid string) string {
	return `{"type":"system","subtype":"init","session_id":"` + sid + `","model":"m","tools":[]}`
}

func assistantLine(sid, id, text string, ctx int) string {
	return fmt.Sprintf(`{"type":"assistant","session_id":%q,"parent_tool_use_id":null,"message":{"id":%q,"model":"m","role":"assistant","content":[{"type":"text","text":%q}],"stop_reason":"end_turn","usage":{"input_tokens":0,"cache_creation_input_tokens":0,"cache_read_input_tokens":%d,"output_tokens":5}}}`, sid, id, text, ctx)
}

func userLine(sid, text string) string {
	return fmt.Sprintf(`{"type":"user","session_id":%q,"parent_tool_use_id":null,"message":{"role":"user","content":[{"type":"text","text":%q}]}}`, sid, text)
}

// resultLine ends a turn; stop is the stop_reason ("" for none: an
// interrupted turn's).
func resultLine(sid, subtype string, cost float64, turns int, stop string) string {
	sr := `null`
	if stop != "" {
		sr = `"` + stop + `"`
	}
	return fmt.Sprintf(`{"type":"result","subtype":%q,"is_error":false,"result":"done %s","session_id":%q,"total_cost_usd":%v,"num_turns":%d,"stop_reason":%s,"usage":{"input_tokens":1}}`, subtype, sid, sid, cost, turns, sr)
}

func callback(id, subtype string) string {
	return `{"type":"control_request","request_id":"` + id + `","request":{"subtype":"` + subtype + `","tool_name":"Bash","input":{}}}`
}

const appTask = `{"type":"user","session_id":"","parent_tool_use_id":null,"message":{"role":"user","content":"the task"}}`

// One turn of the application: the engine hears the prompt the harness was
// given and the harness's records as facts, the turn's result reaches the
// application only once the engine has handled its TurnEnded, and the
// context-usage request is the harness's answer, read.
func TestTurnFactsWaitForTheEngine(t *testing.T) {
	g := newRig(t)
	g.send(`{"type":"control_request","request_id":"app-init","request":{"subtype":"initialize","hooks":{}}}`)
	g.send(appTask)
	h := g.launch(1, "", script{Turns: [][]string{{
		initLine("s-1"), assistantLine("s-1", "m1", "working", 1200), resultLine("s-1", "success", 0.02, 1, "end_turn"),
	}}})
	if err := h.Begin(); err != nil {
		t.Fatal(err)
	}
	e := &engine{t: t, s: h}
	end := e.upTo("the turn's end", turnEnded).(front.TurnEnded)
	if end.How != front.EndedOnOwn || end.CostUSD != 0.02 || end.Turns != 1 || end.SessionID != "s-1" {
		t.Errorf("TurnEnded %+v: want the harness's own end, its cost and turns", end)
	}
	var kinds []string
	for _, f := range e.got {
		kinds = append(kinds, fmt.Sprintf("%T", f))
	}
	want := "front.UserMessage front.Output front.Init front.Output front.Round front.Output front.TurnEnded"
	if strings.Join(kinds, " ") != want {
		t.Errorf("facts %s, want %s", strings.Join(kinds, " "), want)
	}
	if um, ok := e.got[0].(front.UserMessage); !ok || um.Text != "the task" || !um.MainThread {
		t.Errorf("first fact %#v: want the application's prompt", e.got[0])
	}
	if r := e.got[4].(front.Round); r.Context != 1200 || !r.MainThread || r.Text != "working" {
		t.Errorf("round %+v", r)
	}
	// The engine has not decided on the turn's end (asked past it): its result waits.
	g.out.wait(t, "assistant line", func(l gjson.Result) bool { return l.Get("type").String() == "assistant" })
	if lines, _ := g.out.snapshot(); count(lines, isResult) != 0 {
		t.Fatalf("the result reached the application before the engine handled the turn's end: %v", lines)
	}
	e.handled()
	lines := g.out.wait(t, "result", isResult)
	res := lines[len(lines)-1]
	if res.Get("total_cost_usd").Float() != 0.02 || res.Get("flower.generations").Int() != 1 || res.Get("session_id").String() != "s-1" {
		t.Errorf("result %s: want the harness's, with the step's cost and flower's summary", res.Raw)
	}
	if n := count(lines, func(l gjson.Result) bool { return l.Get("response.request_id").String() == "app-init" }); n != 1 {
		t.Errorf("the application's initialize was answered %d times, want once", n)
	}

	u, err := h.Probe(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if u.Window != 200000 || u.Floor != 3000 || u.AutoCompact == nil || *u.AutoCompact {
		t.Errorf("context usage %+v: want window 200000, floor 3000, auto-compact off", u)
	}

	// The application is done: the harness's input is closed, it exits,
	// and that is the application's doing.
	g.appIn.Close()
	e.rest()
	if x := h.Exit(); !x.ByPerson {
		t.Errorf("exit %+v: want ended by the application", x)
	}
}

// What the harness wrote before it ran a hook is the engine's once the
// session is synced, however far behind the harness's reader is (more
// lines than its queue holds, nobody taking them): a Next with a done
// context then returns the round before the hook (DESIGN.md «Inbox»).
func TestSyncTakesWhatWasWritten(t *testing.T) {
	g := newRig(t)
	g.send(appTask)
	mark := filepath.Join(g.dir, "hook-ran")
	steps := []string{initLine("s-1")}
	for range 60 {
		steps = append(steps, `{"type":"system","subtype":"status","status":null,"session_id":"s-1"}`)
	}
	steps = append(steps, assistantLine("s-1", "m1", "working", 1200), markWritten+mark)
	h := g.launch(1, "", script{Turns: [][]string{steps}})
	if err := h.Begin(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(guard); ; time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(mark); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("hang guard: the harness never got to its hook")
		}
	}
	if err := h.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	done, cancel := context.WithCancel(context.Background())
	cancel()
	var facts []front.Fact
	for {
		f, err := h.Next(done)
		if err != nil {
			break
		}
		facts = append(facts, f)
	}
	if !slices.ContainsFunc(facts, roundOf(1200)) {
		t.Errorf("after the sync the facts are %s: want the round the harness wrote before its hook", describe(facts))
	}
}

// A handoff: the cut is the harness's interrupt and its turn's end the
// harness's own result, interrupted; from the cut on nothing of the session
// reaches the application, and flower answers the writing turn's callbacks.
// The successor's result answers the application's turn, with the cost of
// both harnesses; the successor's budgets are what the cut turn left (the
// writing turn exempt); a message the application sent during the handoff
// goes to the successor after its first turn.
func TestCutRetiresAndTheSuccessorAnswers(t *testing.T) {
	g := newRig(t, "--max-turns=10", "--max-budget-usd=1")
	g.send(appTask)
	h1 := g.launch(1, "", script{Turns: [][]string{
		{initLine("s-1"), assistantLine("s-1", "m1", "big", 150000), waitInterrupt,
			userLine("s-1", "[Request interrupted by user for tool use]"), resultLine("s-1", "error_during_execution", 0.05, 3, "")},
		{initLine("s-1"), callback("cb-1", "can_use_tool"), assistantLine("s-1", "m2", "THE HANDOFF", 151000),
			callback("cb-2", "hook_callback"), resultLine("s-1", "success", 0.08, 1, "end_turn")},
	}})
	if err := h1.Begin(); err != nil {
		t.Fatal(err)
	}
	e := &engine{t: t, s: h1}
	e.upTo("the big round", roundOf(150000))
	if err := h1.Cut(); err != nil {
		t.Fatal(err)
	}
	e.handled()
	end := e.upTo("the cut turn's end", turnEnded).(front.TurnEnded)
	if end.How != front.EndedInterrupted || end.Turns != 3 || end.CostUSD != 0.05 || end.Detail != "error_during_execution" {
		t.Errorf("cut turn's end %+v: want the harness's result, interrupted", end)
	}
	if o := e.got[len(e.got)-2].(front.Output); gjson.GetBytes(o.Raw, "type").String() != "result" {
		t.Errorf("the cut turn's end is not the harness's result line: %s", o.Raw)
	}
	e.handled()
	g.rl.Event(event.Event{Kind: event.KindHandoff, Phase: event.PhaseWriting, SessionID: "s-1", Generation: 1})
	g.send(`{"type":"user","session_id":"","parent_tool_use_id":null,"message":{"role":"user","content":"and more"}}`)
	if err := h1.Send(front.Turn{Kind: front.TurnWriting, Prompt: "write the handoff"}); err != nil {
		t.Fatal(err)
	}
	wend := e.upTo("the writing turn's end", turnEnded).(front.TurnEnded)
	if wend.How != front.EndedOnOwn || wend.CostUSD != 0.08 {
		t.Errorf("writing turn's end %+v", wend)
	}
	e.handled()
	h1.Stop()
	e.rest()
	ends := 0
	for _, f := range e.got {
		if turnEnded(f) {
			ends++
		}
	}
	if ends != 2 {
		t.Errorf("%d TurnEnded for two turns", ends)
	}
	answers := map[string]string{}
	for _, l := range h1.read() {
		if id := l.Get("response.request_id").String(); l.Get("type").String() == "control_response" {
			answers[id] = l.Get("response.response").Raw
		}
		if txt := l.Get("message.content").String(); txt == "and more" {
			t.Errorf("the retiring harness got the application's message")
		}
	}
	if !strings.Contains(answers["cb-1"], `"deny"`) || answers["cb-2"] != "{}" {
		t.Errorf("flower's answers to the writing turn's callbacks: %v", answers)
	}
	for _, l := range func() []gjson.Result { l, _ := g.out.snapshot(); return l }() {
		if isResult(l) || l.Get("type").String() == "control_request" || strings.Contains(l.Raw, "THE HANDOFF") ||
			strings.Contains(l.Raw, "interrupted by user") {
			t.Errorf("the application saw a line of the retired session: %s", l.Raw)
		}
	}

	g.rl.Event(event.Event{Kind: event.KindHandoff, Phase: event.PhaseDone, SessionID: "s-1", Generation: 1, Path: "h.md"})
	h2 := g.launch(2, "You are taking over", script{Turns: [][]string{
		{initLine("s-2"), assistantLine("s-2", "n1", "continuing", 2000), resultLine("s-2", "success", 0.01, 1, "end_turn")},
		{initLine("s-2"), assistantLine("s-2", "n2", "more done", 2500), resultLine("s-2", "success", 0.02, 1, "end_turn")},
	}})
	if err := h2.Begin(); err != nil {
		t.Fatal(err)
	}
	e2 := &engine{t: t, s: h2}
	e2.upTo("the successor's first turn's end", turnEnded)
	e2.handled()
	lines := g.out.wait(t, "the successor's result", isResult)
	res := lines[len(lines)-1]
	if res.Get("session_id").String() != "s-2" || res.Get("total_cost_usd").Float() != 0.09 ||
		res.Get("flower.retired.0").String() != "s-1" || res.Get("flower.handoff_path").String() != "h.md" {
		t.Errorf("result %s: want the successor's, costing both harnesses (0.08 + 0.01)", res.Raw)
	}
	if n := count(lines, func(l gjson.Result) bool {
		return l.Get("subtype").String() == SubtypeHandoff && l.Get("phase").String() == "done" && l.Get("new_session_id").String() == "s-2"
	}); n != 1 {
		t.Errorf("%d done lines naming the successor, want 1", n)
	}
	um := e2.upTo("the application's second message", func(f front.Fact) bool { _, ok := f.(front.UserMessage); return ok })
	if um.(front.UserMessage).Text != "and more" {
		t.Errorf("second prompt %+v", um)
	}
	e2.handled()
	e2.upTo("the second turn's end", turnEnded)
	e2.handled()
	lines = g.out.wait(t, "the second result", func(l gjson.Result) bool { return isResult(l) && l.Get("total_cost_usd").Float() == 0.1 })
	if n := count(lines, isResult); n != 2 {
		t.Errorf("%d results for the application's two turns", n)
	}
	read := h2.read()
	args := read[0].Get("args").Array()
	var got []string
	for _, a := range args {
		got = append(got, a.String())
	}
	joined := strings.Join(got, " ")
	if !strings.Contains(joined, "--max-turns=7") || !strings.Contains(joined, "--max-budget-usd=0.95") {
		t.Errorf("successor's arguments %q: want what the cut turn left, --max-turns=7 and --max-budget-usd=0.95", joined)
	}
	var prompts []string
	for _, l := range read[1:] {
		if l.Get("type").String() == "user" {
			prompts = append(prompts, l.Get("message.content").String())
		}
	}
	if strings.Join(prompts, "|") != "You are taking over|and more" {
		t.Errorf("the successor's prompts %q: want the handoff, then the application's message", prompts)
	}
}

// Under --json-schema the harness follows a reply without a StructuredOutput
// call with "[structured-output-enforce] …" and goes on. In the writing turn
// the relay ends the turn there with an interrupt, and the turn's end is the
// harness's own result of it; in a work turn, the line is the
// application's business.
func TestWritingTurnEndsAtTheEnforcedCall(t *testing.T) {
	g := newRig(t, "--json-schema={}")
	g.send(appTask)
	enforce := userLine("s-1", "[structured-output-enforce] You MUST call the StructuredOutput tool")
	h := g.launch(1, "", script{Turns: [][]string{
		{initLine("s-1"), assistantLine("s-1", "m1", "work", 1000), enforce, assistantLine("s-1", "m2", "called", 1100),
			resultLine("s-1", "success", 0.01, 2, "end_turn")},
		{initLine("s-1"), assistantLine("s-1", "m3", "THE HANDOFF", 1200), enforce, waitInterrupt,
			resultLine("s-1", "error_during_execution", 0.02, 1, "")},
	}})
	if err := h.Begin(); err != nil {
		t.Fatal(err)
	}
	e := &engine{t: t, s: h}
	if end := e.upTo("the work turn's end", turnEnded).(front.TurnEnded); end.How != front.EndedOnOwn {
		t.Errorf("work turn's end %+v", end)
	}
	e.handled()
	lines := g.out.wait(t, "the work turn's result", isResult)
	if count(lines, func(l gjson.Result) bool { return strings.Contains(l.Raw, "structured-output-enforce") }) != 1 {
		t.Errorf("the application did not get the work turn's enforce line: %v", lines)
	}
	// A handoff asked for between turns: the writing turn at once.
	if err := h.Send(front.Turn{Kind: front.TurnWriting, Prompt: "write the handoff"}); err != nil {
		t.Fatal(err)
	}
	end := e.upTo("the writing turn's end", turnEnded).(front.TurnEnded)
	if end.How != front.EndedInterrupted || end.CostUSD != 0.02 || end.Detail != "error_during_execution" {
		t.Errorf("writing turn's end %+v: want the harness's result, interrupted", end)
	}
	e.handled()
	h.Stop()
	e.rest()
	interrupts := count(h.read(), func(l gjson.Result) bool { return l.Get("request.subtype").String() == "interrupt" })
	if interrupts != 1 {
		t.Errorf("%d interrupts, want one: the writing turn's, none for the work turn", interrupts)
	}
	if lines, _ := g.out.snapshot(); count(lines, isResult) != 1 || count(lines, func(l gjson.Result) bool { return strings.Contains(l.Raw, "THE HANDOFF") }) != 0 {
		t.Errorf("the application saw the writing turn: %v", lines)
	}
}

// Cancel retires the session without the engine handling what follows (it
// drains the facts as it stops), and the step's end gives the application
// the one result its turn waits for: flower's error when the step failed,
// the turn's own when the engine ended the step on a turn it had cut.
func TestTheApplicationsTurnGetsOneResult(t *testing.T) {
	turn := script{Turns: [][]string{{initLine("s-1"), assistantLine("s-1", "m1", "working", 1000), waitInterrupt,
		resultLine("s-1", "error_during_execution", 0.03, 2, "")}}}
	t.Run("cancel, the step fails", func(t *testing.T) {
		g := newRig(t)
		g.send(appTask)
		h := g.launch(1, "", turn)
		if err := h.Begin(); err != nil {
			t.Fatal(err)
		}
		e := &engine{t: t, s: h}
		e.upTo("the round", roundOf(1000))
		if err := h.Cancel(); err != nil {
			t.Fatal(err)
		}
		if err := h.EndAfterTurn(); err != nil {
			t.Fatal(err)
		}
		e.rest() // nothing more handled: the relay must not wait for it
		if lines, _ := g.out.snapshot(); count(lines, isResult) != 0 {
			t.Fatalf("the cancelled turn's result reached the application: %v", lines)
		}
		h.Stop()
		g.rl.Finish("s-1", errors.New("interrupted"))
		lines, _ := g.out.snapshot()
		if count(lines, isResult) != 1 {
			t.Fatalf("results %v: want flower's one", lines)
		}
		res := lines[len(lines)-1]
		if !res.Get("is_error").Bool() || res.Get("result").String() != "interrupted" || res.Get("total_cost_usd").Float() != 0.03 {
			t.Errorf("result %s", res.Raw)
		}
	})
	t.Run("cut, the step ends", func(t *testing.T) {
		g := newRig(t)
		g.send(appTask)
		h := g.launch(1, "", turn)
		if err := h.Begin(); err != nil {
			t.Fatal(err)
		}
		e := &engine{t: t, s: h}
		e.upTo("the round", roundOf(1000))
		if err := h.Cut(); err != nil {
			t.Fatal(err)
		}
		e.handled()
		e.upTo("the turn's end", turnEnded)
		h.Stop()
		e.rest()
		g.rl.Finish("s-1", nil)
		lines, _ := g.out.snapshot()
		if count(lines, isResult) != 1 {
			t.Fatalf("results %v: want the turn's own", lines)
		}
		res := lines[len(lines)-1]
		if res.Get("subtype").String() != "error_during_execution" || res.Get("total_cost_usd").Float() != 0.03 ||
			res.Get("flower.generations").Int() != 1 || res.Get("usage.input_tokens").Int() != 1 {
			t.Errorf("result %s: want the harness's, patched", res.Raw)
		}
		g.rl.Finish("s-1", nil)
		if lines, _ := g.out.snapshot(); count(lines, isResult) != 1 {
			t.Errorf("a second Finish wrote another result")
		}
	})
}
