package checkup

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"sync/atomic"
	"time"

	"github.com/flowerhq/flower/codex"
	"github.com/flowerhq/flower/codexrpc"
	"github.com/flowerhq/flower/front"
	"github.com/flowerhq/flower/inbox"
	"github.com/flowerhq/flower/scriptedresp"
)

// Names of the Codex CLI's facts beside FactVersion and FactInterrupt.
const (
	FactSchema     = "app-server schema"
	FactTokenUsage = "token usage and window"
	FactCodexHold  = "compaction held off despite the person's config"
	FactCodexHook  = "PreCompact hook stops a compaction"
)

// codexSection is the DESIGN.md section every Codex fact is written in.
const codexSection = "Codex facts"

// CodexFacts is every fact flower relies on the Codex CLI for, in the
// order flower doctor prints them. Config.Harness is the codex executable.
func CodexFacts() []Fact {
	return []Fact{
		{FactVersion, codexSection, checkCodexVersion},
		{FactSchema, codexSection, checkCodexSchema},
		{FactTokenUsage, codexSection, checkCodexTokenUsage},
		{FactInterrupt, codexSection, checkCodexInterrupt},
		{FactCodexHold, codexSection, checkCodexHold},
		{FactCodexHook, codexSection, checkCodexHook},
	}
}

func checkCodexVersion(ctx context.Context, c *Checkup) (string, error) {
	vctx, cancel := context.WithTimeout(ctx, versionTimeout)
	defer cancel()
	out, err := exec.CommandContext(vctx, c.cfg.Harness, "--version").Output()
	if err != nil {
		return "", fmt.Errorf("%s --version: %v", c.cfg.Harness, err)
	}
	v, ok := codexrpc.VersionOf(string(out))
	if !ok {
		return "", fmt.Errorf("--version said %q, not \"codex-cli X.Y.Z\"", oneLine(string(out)))
	}
	if v == codexrpc.PinnedVersion {
		return "codex-cli " + v + ", the pinned and tested one", nil
	}
	return fmt.Sprintf("codex-cli %s, not the tested %s: the other lines decide", v, codexrpc.PinnedVersion), nil
}

func checkCodexSchema(ctx context.Context, c *Checkup) (string, error) {
	if err := codexrpc.CheckSchema(ctx, c.cfg.Harness); err != nil {
		return "", err
	}
	return "generate-json-schema has every method, notification and field flower uses", nil
}

// The token-usage check's window and its two rounds' contexts.
const (
	configuredWindow       = 200000
	firstRound, lastRound  = 1200, 1500
	codexWindowShare       = 95 // modelContextWindow is this % of the window
	personalWindowSettings = "model_context_window = 200000\n"
)

func checkCodexTokenUsage(ctx context.Context, c *Checkup) (string, error) {
	r, err := c.startCodex(ctx, scriptedresp.Sequence(
		scriptedresp.Reply{Calls: []scriptedresp.Call{{Cmd: "echo round"}}, Usage: scriptedresp.Usage{InputTokens: firstRound, OutputTokens: 5}},
		scriptedresp.Reply{Text: "done", Usage: scriptedresp.Usage{InputTokens: lastRound, OutputTokens: 5}},
	), personalWindowSettings, nil)
	if err != nil {
		return "", err
	}
	defer r.close()
	if end, err := r.turn(ctx, "run a command"); err != nil || end.Status != codexrpc.StatusCompleted {
		return "", turnProblem("the turn of two rounds", end, err)
	}
	usages := seen[codexrpc.TokenUsage](r)
	if len(usages) == 0 {
		return "", errors.New("no thread/tokenUsage/updated")
	}
	u := usages[len(usages)-1]
	var problems []string
	if u.Last.InputTokens != lastRound || u.Total.InputTokens != firstRound+lastRound {
		problems = append(problems, fmt.Sprintf("last.inputTokens %d, total.inputTokens %d; want %d (the last round) and %d (the sum)",
			u.Last.InputTokens, u.Total.InputTokens, lastRound, firstRound+lastRound))
	}
	if want := int64(configuredWindow * codexWindowShare / 100); u.ModelContextWindow != want {
		problems = append(problems, fmt.Sprintf("modelContextWindow %d, want %d (%d %% of the configured %d)",
			u.ModelContextWindow, want, codexWindowShare, configuredWindow))
	}
	if u.ThreadID != r.thread {
		problems = append(problems, fmt.Sprintf("usage of thread %q, want %q", u.ThreadID, r.thread))
	}
	return verdict(problems, fmt.Sprintf("last %d (not the total %d), modelContextWindow %d of a configured %d",
		u.Last.InputTokens, u.Total.InputTokens, u.ModelContextWindow, configuredWindow))
}

// turnProblem says why a turn did not end as a check needs.
func turnProblem(what string, end codexrpc.TurnCompleted, err error) error {
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if end.Error != nil {
		return fmt.Errorf("%s ended %q: %s (%s)", what, end.Status, end.Error.Message, end.Error.Kind)
	}
	return fmt.Errorf("%s ended %q", what, end.Status)
}

// interruptBound is how soon after turn/interrupt a turn cut in a long
// command must end (it took 0.1 s on 0.171.0).
const interruptBound = 10 * time.Second

func checkCodexInterrupt(ctx context.Context, c *Checkup) (string, error) {
	// The command runs outside Codex's sandbox: this checks the cut, not
	// whether bubblewrap can start on this machine.
	r, err := c.startCodexIn(ctx, "danger-full-access", func(q *scriptedresp.Request) scriptedresp.Reply {
		if q.LastUserText == "first" && len(q.Outputs) == 0 {
			return scriptedresp.Reply{Calls: []scriptedresp.Call{{Cmd: "sleep 60"}}, Usage: scriptedresp.Usage{InputTokens: 900, OutputTokens: 5}}
		}
		return scriptedresp.Reply{Text: "again", Usage: scriptedresp.Usage{InputTokens: 1000, OutputTokens: 5}}
	}, "", nil)
	if err != nil {
		return "", err
	}
	defer r.close()
	first, err := r.client.StartTurn(ctx, r.thread, "first")
	if err != nil {
		return "", err
	}
	if err := r.commandStarted(ctx, first); err != nil {
		return "", err
	}
	asked := time.Now()
	if err := r.client.Interrupt(ctx, r.thread, first); err != nil {
		return "", err
	}
	end, err := r.completed(ctx, first)
	took := time.Since(asked)
	switch {
	case err != nil || end.Status != codexrpc.StatusInterrupted:
		return "", turnProblem("the interrupted turn", end, err)
	case took > interruptBound:
		return "", fmt.Errorf("the turn ended %s after turn/interrupt: the command was not cut", took.Round(time.Millisecond))
	}
	if end, err := r.turn(ctx, "second"); err != nil || end.Status != codexrpc.StatusCompleted {
		return "", turnProblem("the next turn in the thread", end, err)
	}
	reqs := r.api.Requests()
	if last := reqs[len(reqs)-1].LastUserText; last != "second" {
		return "", fmt.Errorf("the next turn's request ends with user text %q, want %q", last, "second")
	}
	return fmt.Sprintf("a 60 s command cut, the turn interrupted %s after turn/interrupt; the thread took the next turn",
		took.Round(time.Millisecond)), nil
}

// commandStarted waits for a command of turn id to start; a turn that
// ends first is the problem.
func (r *codexRun) commandStarted(ctx context.Context, id string) error {
	n, err := r.until(ctx, "start of the long command", func(n codexrpc.Notification) bool {
		it, started := n.Value.(codexrpc.Item)
		tc, ended := n.Value.(codexrpc.TurnCompleted)
		return (started && it.Started && it.Type == "commandExecution") || (ended && tc.TurnID == id)
	})
	if tc, ended := n.Value.(codexrpc.TurnCompleted); err == nil && ended {
		// Say what the command gave the model instead of running: a
		// sandbox that could not start shows here.
		for _, q := range r.api.Requests() {
			for _, o := range q.Outputs {
				return fmt.Errorf("%w; the command's output to the model: %q", turnProblem("the turn meant to run a long command", tc, nil), clip(o.Output, 300))
			}
		}
		return turnProblem("the turn meant to run a long command", tc, nil)
	}
	return err
}

// personCompacting is a person's config.toml that compacts at 100 000 of
// a 200 000 window, and at the end of any turn past 10 % of that.
const personCompacting = "model_auto_compact_token_limit = 100000\nmodel_context_window = 200000\nmodel_post_turn_compact_threshold_percent = 10\n"

// compactingScript answers every turn with a context of input tokens
// (of the moment input says), and a compaction request with a summary.
func compactingScript(input func() int) scriptedresp.Script {
	return func(q *scriptedresp.Request) scriptedresp.Reply {
		if q.Compaction {
			return scriptedresp.Reply{Text: "SUMMARY", Usage: scriptedresp.Usage{InputTokens: 2000, OutputTokens: 10}}
		}
		return scriptedresp.Reply{Text: "ok", Usage: scriptedresp.Usage{InputTokens: input(), OutputTokens: 10}}
	}
}

// heldContext is the hold check's context: past the person's limit, within
// their window.
const heldContext = 120000

func checkCodexHold(ctx context.Context, c *Checkup) (string, error) {
	r, err := c.startCodex(ctx, compactingScript(func() int { return heldContext }), personCompacting, codexrpc.HoldOverrides(""))
	if err != nil {
		return "", err
	}
	defer r.close()
	for _, text := range []string{"one", "two"} {
		if end, err := r.turn(ctx, text); err != nil || end.Status != codexrpc.StatusCompleted {
			return "", turnProblem("turn "+text, end, err)
		}
	}
	if reqs, items := r.compactions(); reqs > 0 || items > 0 {
		return "", fmt.Errorf("Codex compacted at %d of the person's limit of 100000 despite flower's -c overrides: "+
			"%d compaction requests reached the model, %d compaction items", heldContext, reqs, items)
	}
	return fmt.Sprintf("two turns at %d, past the person's limit of 100000: no compaction request reached the model", heldContext), nil
}

func checkCodexHook(ctx context.Context, c *Checkup) (string, error) {
	if c.cfg.Flower == "" {
		return "", errors.New("no flower executable to run as the hook")
	}
	box, err := os.MkdirTemp("", "flower-doctor-inbox-")
	if err != nil {
		return "", fmt.Errorf("temporary directory: %w", err)
	}
	defer os.RemoveAll(box)
	since := time.Now()
	var input atomic.Int64
	input.Store(1000)
	r, err := c.startCodex(ctx, compactingScript(func() int { return int(input.Load()) }), "",
		codex.Overrides(front.Spec{Hold: &front.Hold{Hook: []string{c.cfg.Flower, "hook", "precompact", "--inbox", box}}}))
	if err != nil {
		return "", err
	}
	defer r.close()
	if !r.hooked {
		return "", errors.New("hooks/list does not list flower's hook: Codex would skip it")
	}
	past, err := r.pastTheThreshold(ctx)
	if err != nil {
		return "", err
	}
	input.Store(past)
	end, err := r.turn(ctx, "past the threshold")
	if err != nil || end.Status != codexrpc.StatusInterrupted {
		reqs, _ := r.compactions()
		return "", fmt.Errorf("%w, and %d compaction requests reached the model", turnProblem("the turn past the threshold", end, err), reqs)
	}
	return r.hookVerdict(past, inbox.NewReader(box, since, slog.New(slog.DiscardHandler)).Scan())
}

// pastTheThreshold runs a small first turn and returns a context past the
// 90 % of the window where Codex compacts, whatever window it took
// (modelContextWindow is 95 % of it): 93 %.
func (r *codexRun) pastTheThreshold(ctx context.Context) (int64, error) {
	if end, err := r.turn(ctx, "measure"); err != nil || end.Status != codexrpc.StatusCompleted {
		return 0, turnProblem("the first turn", end, err)
	}
	usages := seen[codexrpc.TokenUsage](r)
	if len(usages) == 0 || usages[len(usages)-1].ModelContextWindow <= 0 {
		return 0, errors.New("no modelContextWindow in thread/tokenUsage/updated")
	}
	return usages[len(usages)-1].ModelContextWindow * 93 / codexWindowShare, nil
}

// hookVerdict: no compaction reached the model and the hook told flower.
func (r *codexRun) hookVerdict(past int64, heard []inbox.Request) (string, error) {
	var problems []string
	if reqs, _ := r.compactions(); reqs > 0 {
		problems = append(problems, fmt.Sprintf("%d compaction requests reached the model", reqs))
	}
	if len(heard) != 1 || heard[0].Kind != inbox.KindCompact || heard[0].Trigger != "auto" {
		problems = append(problems, fmt.Sprintf("the inbox got %+v, want one automatic compaction reported", heard))
	}
	return verdict(problems, fmt.Sprintf("at %d, past 90 %% of the window, flower's hook (trusted) stopped the compaction: "+
		"the turn ended interrupted, no compaction request, the inbox told", past))
}

// clip is s cut to n bytes, marked when cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
