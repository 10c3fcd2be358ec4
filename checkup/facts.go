package checkup

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/tidwall/gjson"

	"github.com/flowerhq/flower/front"
	"github.com/flowerhq/flower/harness"
	"github.com/flowerhq/flower/scriptedapi"
	"github.com/flowerhq/flower/transcript"
)

// Names of the facts, for callers that look one up.
const (
	FactVersion      = "version"
	FactInit         = "init line"
	FactAssistant    = "assistant line and usage"
	FactResult       = "result line"
	FactInterrupt    = "interrupt"
	FactQueued       = "a prompt sent while a turn runs"
	FactContextUsage = "get_context_usage"
	FactHostileEnv   = "compaction held off despite the workspace's settings"
	FactPreCompact   = "PreCompact hook blocks /compact"
	FactTranscript   = "transcript file"
	FactExitHint     = "interactive exit hint"
)

// Facts is every fact flower relies on the harness for, in the order
// flower doctor prints them.
func Facts() []Fact {
	return []Fact{
		{FactVersion, "Harness facts", checkVersion},
		{FactInit, "Stream-json", checkInit},
		{FactAssistant, "Context meter", checkAssistant},
		{FactResult, "Result lines", checkResult},
		{FactInterrupt, "Interrupt", checkInterrupt},
		{FactQueued, "Queued cut", checkQueued},
		{FactContextUsage, "Context usage request", checkContextUsage},
		{FactHostileEnv, "Compaction levers", checkHostileEnv},
		{FactPreCompact, "Compaction levers", checkPreCompact},
		{FactTranscript, "Transcript file", checkTranscript},
		{FactExitHint, "Closing line", checkExitHint},
	}
}

// The basic session's two turns and what the scripted model reports for
// them.
var (
	firstUsage  = scriptedapi.Usage{InputTokens: 12, CacheCreationInputTokens: 345, CacheReadInputTokens: 15000, OutputTokens: 7}
	secondUsage = scriptedapi.Usage{InputTokens: 3, CacheReadInputTokens: 16000, OutputTokens: 9}
)

const (
	firstAnswer  = "first answer"
	secondAnswer = "second answer"
)

// basicRun is an ordinary session of two turns, shared by the checks of
// the line shapes, the version and the transcript file.
type basicRun struct {
	turns     [2][]transcript.Event
	session   string // from the first init line
	workspace string
	env       []string
	requests  []scriptedapi.Request
	err       error
	// transcript is the session's transcript file, read before the
	// session's place was removed.
	transcriptPath string
	transcript     []byte
	transcriptErr  error
}

// basicSession runs the shared session once.
func (c *Checkup) basicSession(ctx context.Context) *basicRun {
	c.basicOnce.Do(func() {
		c.basic = &basicRun{}
		c.basic.err = c.runBasic(ctx, c.basic)
		if c.basic.err != nil {
			c.basic.err = fmt.Errorf("an ordinary session of two turns failed: %w", c.basic.err)
		}
	})
	return c.basic
}

func (c *Checkup) runBasic(ctx context.Context, b *basicRun) error {
	p, err := c.newPlace(scriptedapi.Sequence(
		scriptedapi.Reply{Text: firstAnswer, Usage: firstUsage},
		scriptedapi.Reply{Text: secondAnswer, Usage: secondUsage, ChunkText: 3},
	))
	if err != nil {
		return err
	}
	defer p.close()
	s, err := c.start(ctx, p)
	if err != nil {
		return err
	}
	defer s.stop()
	b.workspace, b.env = s.dir, s.env
	for i, q := range []string{"first question", "second question"} {
		if b.turns[i], err = s.turn(ctx, q); err != nil {
			return err
		}
	}
	b.requests = p.srv.Requests()
	for _, ev := range b.turns[0] {
		if ev.Kind == transcript.KindInit {
			b.session = ev.SessionID
			break
		}
	}
	if b.session != "" {
		b.transcriptPath = transcript.FilePath(transcript.ConfigDir(b.env), b.workspace, b.session)
		b.transcript, b.transcriptErr = os.ReadFile(b.transcriptPath)
	}
	return nil
}

func kinds(evs []transcript.Event, k transcript.Kind) []transcript.Event {
	var out []transcript.Event
	for _, ev := range evs {
		if ev.Kind == k {
			out = append(out, ev)
		}
	}
	return out
}

func field(ev transcript.Event, path string) gjson.Result { return gjson.GetBytes(ev.Raw, path) }

// versionTimeout bounds claude --version.
const versionTimeout = 30 * time.Second

func checkVersion(ctx context.Context, c *Checkup) (string, error) {
	vctx, cancel := context.WithTimeout(ctx, versionTimeout)
	defer cancel()
	cmd := exec.CommandContext(vctx, c.cfg.Harness, "--version")
	cmd.Env = c.cfg.Env
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("%s --version: %v", c.cfg.Harness, err)
	}
	said := strings.TrimSpace(string(out))
	if _, ok := front.ParseVersion(said); !ok || !strings.HasSuffix(said, "(Claude Code)") {
		return "", fmt.Errorf("--version said %q, not \"X.Y.Z (Claude Code)\"", said)
	}
	version, _, _ := strings.Cut(said, " ")
	b := c.basicSession(ctx)
	if b.err != nil {
		return "", b.err
	}
	inits := kinds(b.turns[0], transcript.KindInit)
	if len(inits) == 0 {
		return "", errors.New("no init line")
	}
	if got := field(inits[0], "claude_code_version").String(); got != version {
		return "", fmt.Errorf("the init line says claude_code_version %q, --version says %q", got, version)
	}
	switch {
	case harness.TestedVersions.Has(version):
		return version + ", tested", nil
	case harness.TestedVersions.Newer(version):
		return fmt.Sprintf("%s, newer than the newest tested (%s): the other lines decide", version, harness.TestedVersions.Newest()), nil
	}
	return fmt.Sprintf("%s, not among the tested (%s): the other lines decide", version, strings.Join(harness.TestedVersions, ", ")), nil
}

func checkInit(ctx context.Context, c *Checkup) (string, error) {
	b := c.basicSession(ctx)
	if b.err != nil {
		return "", b.err
	}
	var problems []string
	for i, turn := range b.turns {
		inits := kinds(turn, transcript.KindInit)
		if len(inits) != 1 {
			problems = append(problems, fmt.Sprintf("turn %d has %d init lines, want 1", i+1, len(inits)))
			continue
		}
		in := inits[0]
		if in.SessionID == "" || in.Model == "" {
			problems = append(problems, fmt.Sprintf("turn %d's init line lacks session_id or model", i+1))
		}
		if in.SessionID != b.session {
			problems = append(problems, fmt.Sprintf("turn %d is session %q, turn 1 was %q", i+1, in.SessionID, b.session))
		}
		if cwd := field(in, "cwd").String(); cwd != b.workspace {
			problems = append(problems, fmt.Sprintf("init cwd %q, want %q", cwd, b.workspace))
		}
		if !field(in, "tools").IsArray() {
			problems = append(problems, "init line without tools")
		}
	}
	return verdict(problems, fmt.Sprintf("one per turn, session %s kept across turns", b.session))
}

func checkAssistant(ctx context.Context, c *Checkup) (string, error) {
	b := c.basicSession(ctx)
	if b.err != nil {
		return "", b.err
	}
	var problems []string
	for i, want := range []struct {
		text  string
		usage scriptedapi.Usage
	}{{firstAnswer, firstUsage}, {secondAnswer, secondUsage}} {
		as := kinds(b.turns[i], transcript.KindAssistant)
		if len(as) != 1 {
			problems = append(problems, fmt.Sprintf("turn %d has %d assistant lines, want 1", i+1, len(as)))
			continue
		}
		a := as[0]
		if p := field(a, "parent_tool_use_id"); !p.Exists() || p.Type != gjson.Null {
			problems = append(problems, fmt.Sprintf("main-thread parent_tool_use_id is %s, want null", p.Raw))
		}
		if a.MessageID == "" {
			problems = append(problems, "assistant line without message.id")
		}
		if a.Text != want.text {
			problems = append(problems, fmt.Sprintf("text %q, want %q", a.Text, want.text))
		}
		if got := (scriptedapi.Usage{InputTokens: a.Usage.InputTokens, CacheCreationInputTokens: a.Usage.CacheCreationInputTokens,
			CacheReadInputTokens: a.Usage.CacheReadInputTokens, OutputTokens: a.Usage.OutputTokens}); got != want.usage {
			problems = append(problems, fmt.Sprintf("turn %d's usage %+v, the model reported %+v", i+1, got, want.usage))
		}
	}
	return verdict(problems, "message.usage carries what the model reported")
}

func checkResult(ctx context.Context, c *Checkup) (string, error) {
	b := c.basicSession(ctx)
	if b.err != nil {
		return "", b.err
	}
	var problems []string
	var costs []float64
	for i, text := range []string{firstAnswer, secondAnswer} {
		rs := kinds(b.turns[i], transcript.KindResult)
		if len(rs) != 1 {
			problems = append(problems, fmt.Sprintf("turn %d has %d result lines, want 1", i+1, len(rs)))
			continue
		}
		r := rs[0]
		for _, f := range []struct {
			name      string
			got, want any
		}{
			{"subtype", r.Subtype, "success"},
			{"is_error", r.IsError, false},
			{"session_id", r.SessionID, b.session},
			{"result", r.Result, text},
			{"num_turns", r.NumTurns, 1},
			{"terminal_reason", r.TerminalReason, "completed"},
		} {
			if f.got != f.want {
				problems = append(problems, fmt.Sprintf("turn %d's result %s = %v, want %v", i+1, f.name, f.got, f.want))
			}
		}
		if r.ContextWindow <= 0 {
			problems = append(problems, "no modelUsage[…].contextWindow")
		}
		costs = append(costs, r.TotalCostUSD)
	}
	if len(costs) == 2 && (costs[0] <= 0 || costs[1] <= costs[0]) {
		problems = append(problems, fmt.Sprintf("total_cost_usd %v then %v: want positive and cumulative", costs[0], costs[1]))
	}
	return verdict(problems, "one per turn, cost cumulative for the process")
}

func checkTranscript(ctx context.Context, c *Checkup) (string, error) {
	b := c.basicSession(ctx)
	if b.err != nil {
		return "", b.err
	}
	if b.transcriptErr != nil {
		return "", fmt.Errorf("no transcript where flower looks: %v", b.transcriptErr)
	}
	var users, assistants int
	var usage transcript.Usage
	for _, raw := range strings.Split(string(b.transcript), "\n") {
		ev, err := transcript.Decode([]byte(raw))
		if err != nil || ev.SessionID != b.session {
			continue
		}
		switch ev.Kind {
		case transcript.KindUser:
			users++
		case transcript.KindAssistant:
			if assistants == 0 {
				usage = ev.Usage
			}
			assistants++
		}
	}
	want := transcript.Usage{InputTokens: firstUsage.InputTokens, CacheCreationInputTokens: firstUsage.CacheCreationInputTokens,
		CacheReadInputTokens: firstUsage.CacheReadInputTokens, OutputTokens: firstUsage.OutputTokens}
	switch {
	case users == 0 || assistants == 0:
		return "", fmt.Errorf("%s holds %d user and %d assistant lines of session %s", b.transcriptPath, users, assistants, b.session)
	case usage != want:
		return "", fmt.Errorf("the first assistant line's usage is %+v, the model reported %+v", usage, want)
	}
	return fmt.Sprintf("<config dir>/projects/<slug>/<session>.jsonl, %d user and %d assistant lines with usage", users, assistants), nil
}

func checkInterrupt(ctx context.Context, c *Checkup) (string, error) {
	p, s, end, err := c.begin(ctx, scriptedapi.Route(func(r *scriptedapi.Request) scriptedapi.Reply {
		if strings.Contains(r.LastUserText, "answer slowly") && !strings.Contains(r.LastUserText, "[Request interrupted") {
			return scriptedapi.Reply{Text: "too late", Usage: firstUsage, Delay: time.Minute}
		}
		return scriptedapi.Reply{Text: "carrying on", Usage: secondUsage}
	}, nil, nil), "answer slowly")
	if err != nil {
		return "", err
	}
	defer end()
	for len(p.srv.Requests()) == 0 {
		select {
		case <-ctx.Done():
			return "", errors.New("the turn's request never reached the model")
		case <-time.After(20 * time.Millisecond):
		}
	}
	t0 := time.Now()
	if err := s.s.Cut(); err != nil {
		return "", err
	}
	evs, err := s.until(ctx, "a result after the interrupt", func(ev *transcript.Event) bool { return ev.Kind == transcript.KindResult })
	if err != nil {
		return "", err
	}
	took := time.Since(t0)
	res := evs[len(evs)-1]
	if !res.IsError || !strings.HasPrefix(res.TerminalReason, "aborted_") {
		return "", fmt.Errorf("the interrupted turn's result: is_error %v, terminal_reason %q (want an error, aborted_…)", res.IsError, res.TerminalReason)
	}
	session := res.SessionID
	evs, err = s.turn(ctx, "go on")
	if err != nil {
		return "", fmt.Errorf("after the interrupt: %w", err)
	}
	next := evs[len(evs)-1]
	if next.SessionID != session || next.IsError || next.Result != "carrying on" {
		return "", fmt.Errorf("the turn after the interrupt: session %q (was %q), is_error %v, result %q", next.SessionID, session, next.IsError, next.Result)
	}
	reqs := p.srv.Requests()
	if last := reqs[len(reqs)-1].LastUserText; !strings.Contains(last, "[Request interrupted") || !strings.Contains(last, "go on") {
		return "", fmt.Errorf("the model was not told of the interrupt: last user text %q", oneLine(last))
	}
	return fmt.Sprintf("result %s after %.1fs, the same session goes on", res.TerminalReason, took.Seconds()), nil
}

// queuedMark marks the prompt checkQueued sends while its turn runs.
const queuedMark = "QUEUED-PROMPT-MARK"

// checkQueued: a prompt written while a turn runs waits in the harness,
// which takes it at the turn's next message boundary, beside the tool's
// result and in the same turn, and echoes it as it takes it (DESIGN.md
// «Queued cut»). The prompt is written once the reply's text is out and
// before its tool call is, so it is surely waiting when the tool has run.
func checkQueued(ctx context.Context, c *Checkup) (string, error) {
	p, s, end, err := c.begin(ctx, scriptedapi.Route(func(r *scriptedapi.Request) scriptedapi.Reply {
		switch {
		case strings.Contains(r.LastUserText, queuedMark):
			return scriptedapi.Reply{Text: "took it", Usage: secondUsage}
		case len(r.LastToolResults) == 0:
			return scriptedapi.Reply{Text: "looking", ToolUses: []scriptedapi.ToolUse{{Name: "Read", Input: map[string]any{"file_path": "NOTES.md"}}},
				ToolDelay: 500 * time.Millisecond, Usage: firstUsage}
		}
		return scriptedapi.Reply{Text: "no prompt came", Usage: secondUsage}
	}, nil, nil), "look, then wait")
	if err != nil {
		return "", err
	}
	defer end()
	evs, err := s.until(ctx, "the reply's text", func(ev *transcript.Event) bool { return ev.Kind == transcript.KindAssistant })
	if err != nil {
		return "", err
	}
	if err := s.s.Send(front.Turn{Kind: front.TurnWork, Prompt: queuedMark + ": write it down"}); err != nil {
		return "", err
	}
	rest, err := s.until(ctx, "the turn's result", func(ev *transcript.Event) bool { return ev.Kind == transcript.KindResult })
	evs = append(evs, rest...)
	if err != nil {
		return "", err
	}
	var order []string
	for _, ev := range evs {
		switch {
		case ev.Kind == transcript.KindUser && ev.Replay:
			order = append(order, "echo "+strings.Fields(transcript.UserText(&ev))[0])
		case ev.Kind == transcript.KindUser:
			order = append(order, "tool result")
		case ev.Kind == transcript.KindAssistant && ev.Text != "":
			order = append(order, "reply "+ev.Text)
		case ev.Kind == transcript.KindResult:
			order = append(order, "result "+ev.Result)
		}
	}
	want := []string{"echo look,", "reply looking", "tool result", "echo " + queuedMark + ":", "reply took it", "result took it"}
	if strings.Join(order, " | ") != strings.Join(want, " | ") {
		return "", fmt.Errorf("the turn went %q, want %q", order, want)
	}
	reqs := p.srv.Requests()
	if last := reqs[len(reqs)-1]; len(last.LastToolResults) != 1 || !strings.Contains(last.MidTurn, queuedMark) {
		return "", fmt.Errorf("the prompt did not come beside the tool's result: %d tool results, mid-turn text %q", len(last.LastToolResults), oneLine(last.MidTurn))
	}
	return "taken beside the tool's result in the same turn, echoed as taken", nil
}

// contextUsage starts a harness in p as a run would and asks
// get_context_usage before the first turn.
func (c *Checkup) contextUsage(ctx context.Context, p *place) (gjson.Result, error) {
	s, err := c.start(ctx, p)
	if err != nil {
		return gjson.Result{}, err
	}
	defer s.stop()
	raw, err := s.probe(ctx)
	if err != nil {
		return gjson.Result{}, fmt.Errorf("get_context_usage: %w", err)
	}
	return gjson.Parse(raw), nil
}

func checkContextUsage(ctx context.Context, c *Checkup) (string, error) {
	p, err := c.newPlace(scriptedapi.Sequence())
	if err != nil {
		return "", err
	}
	defer p.close()
	u, err := c.contextUsage(ctx, p)
	if err != nil {
		return "", err
	}
	var problems []string
	max, total := u.Get("maxTokens").Int(), u.Get("totalTokens").Int()
	if max != 200000 {
		problems = append(problems, fmt.Sprintf("maxTokens %d for claude-haiku-4-5, want 200000", max))
	}
	if total <= 0 || total >= max {
		problems = append(problems, fmt.Sprintf("totalTokens %d before any turn", total))
	}
	if !u.Get("categories").IsArray() || !u.Get("categories.0.tokens").Exists() {
		problems = append(problems, "no categories with tokens")
	}
	if e := u.Get("isAutoCompactEnabled"); !e.Exists() || e.Bool() {
		problems = append(problems, fmt.Sprintf("isAutoCompactEnabled %s under flower, want false", e.Raw))
	}
	if th := u.Get("autoCompactThreshold"); th.Exists() && th.Type != gjson.Null {
		problems = append(problems, fmt.Sprintf("autoCompactThreshold %s with auto-compact off", th.Raw))
	}
	if n := len(p.srv.Requests()); n != 0 {
		problems = append(problems, fmt.Sprintf("it made %d /v1/messages requests", n))
	}
	return verdict(problems, fmt.Sprintf("window %d, start-up floor %d, auto-compact off", max, total))
}

// hostileSettings switches compaction back on from a workspace's own
// settings (measured: it wins over DISABLE_AUTO_COMPACT=1 in the
// environment).
const hostileSettings = `{"env":{"DISABLE_AUTO_COMPACT":"0"}}`

func checkHostileEnv(ctx context.Context, c *Checkup) (string, error) {
	p, err := c.newPlace(scriptedapi.Sequence())
	if err != nil {
		return "", err
	}
	defer p.close()
	if err := p.write(false, ".claude/settings.json", hostileSettings); err != nil {
		return "", err
	}
	u, err := c.contextUsage(ctx, p)
	if err != nil {
		return "", err
	}
	if e := u.Get("isAutoCompactEnabled"); !e.Exists() || e.Bool() {
		return "", fmt.Errorf("with %s in the workspace's .claude/settings.json, isAutoCompactEnabled is %s: the harness would compact", hostileSettings, e.Raw)
	}
	return "isAutoCompactEnabled false with " + hostileSettings + " in the workspace's .claude/settings.json", nil
}

// summaryMark opens the harness's request for a compaction summary.
const summaryMark = "CRITICAL: Respond with TEXT ONLY"

func checkPreCompact(ctx context.Context, c *Checkup) (string, error) {
	p, err := c.newPlace(scriptedapi.Sequence(scriptedapi.Reply{Text: firstAnswer, Usage: firstUsage}))
	if err != nil {
		return "", err
	}
	defer p.close()
	s, err := c.start(ctx, p)
	if err != nil {
		return "", err
	}
	defer s.stop()
	if _, err := s.turn(ctx, "first question"); err != nil {
		return "", err
	}
	evs, err := s.turn(ctx, "/compact")
	if err != nil {
		return "", fmt.Errorf("/compact: %w", err)
	}
	var problems []string
	for _, r := range p.srv.Requests() {
		if strings.Contains(r.LastUserText, summaryMark) {
			problems = append(problems, "a summary request reached the model")
			break
		}
	}
	var failed, boundary bool
	var why string
	for _, ev := range evs {
		switch {
		case ev.Kind == transcript.KindSystem && ev.Subtype == "compact_boundary":
			boundary = true
		case ev.Kind == transcript.KindSystem && field(ev, "compact_result").String() == "failed":
			failed, why = true, field(ev, "compact_error").String()
		}
	}
	if boundary {
		problems = append(problems, "the harness compacted (compact_boundary)")
	}
	switch {
	case !failed:
		problems = append(problems, `no compact_result "failed"`)
	case !strings.Contains(why, "PreCompact") || !strings.Contains(strings.ToLower(why), "flower"):
		problems = append(problems, fmt.Sprintf("compact_error %q does not give flower's PreCompact reason", why))
	}
	return verdict(problems, fmt.Sprintf("compact_result failed: %s", why))
}

// verdict is a check's answer: what holds, or every problem found.
func verdict(problems []string, holds string) (string, error) {
	if len(problems) > 0 {
		return "", errors.New(strings.Join(problems, "; "))
	}
	return holds, nil
}
