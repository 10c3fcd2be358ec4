package checkup

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/flowerhq/flower/front"
	"github.com/flowerhq/flower/gemini"
	"github.com/flowerhq/flower/scriptedgen"
)

// Names of the Gemini CLI's facts beside FactVersion and FactInterrupt.
const (
	FactACP         = "ACP session"
	FactGeminiMeter = "the record's context per model call"
	FactGeminiHold  = "compression held off despite the person's settings"
)

// geminiSection is the DESIGN.md section every Gemini fact is written in.
const geminiSection = "Gemini facts"

// GeminiFacts is every fact flower relies on the Gemini CLI for, in the
// order flower doctor prints them. Config.Harness is the gemini
// executable; each check starts it through flower's Gemini front, as a run
// does.
func GeminiFacts() []Fact {
	return []Fact{
		{FactVersion, geminiSection, checkGeminiVersion},
		{FactACP, geminiSection, checkGeminiACP},
		{FactGeminiMeter, "Gemini front", checkGeminiMeter},
		{FactInterrupt, geminiSection, checkGeminiCancel},
		{FactGeminiHold, "Gemini front", checkGeminiHold},
	}
}

func checkGeminiVersion(ctx context.Context, c *Checkup) (string, error) {
	vctx, cancel := context.WithTimeout(ctx, versionTimeout)
	defer cancel()
	out, err := exec.CommandContext(vctx, c.cfg.Harness, "--version").Output()
	if err != nil {
		return "", fmt.Errorf("%s --version: %v", c.cfg.Harness, err)
	}
	v := strings.TrimSpace(string(out))
	if _, ok := front.ParseVersion(v); !ok {
		return "", fmt.Errorf("--version said %q, not a version", oneLine(v))
	}
	if v == gemini.PinnedVersion {
		return v + ", the pinned and tested one", nil
	}
	return fmt.Sprintf("%s, not the tested %s: the other lines decide", v, gemini.PinnedVersion), nil
}

// geminiRun is the Gemini CLI of one check: a HOME and a workspace of its
// own under a temporary directory, and a scripted Gemini API on
// 127.0.0.1.
type geminiRun struct {
	root string
	api  *scriptedgen.Server
	home string
	ws   string
}

// startGemini serves script, with the person's user settings given
// extra's keys in their model section (`"compressionThreshold": 0.2, `).
func (c *Checkup) startGemini(script scriptedgen.Script, extraModel string) (*geminiRun, error) {
	root, err := os.MkdirTemp("", "flower-doctor-gemini-")
	if err != nil {
		return nil, fmt.Errorf("temporary directory: %w", err)
	}
	r := &geminiRun{root: root, home: filepath.Join(root, "home"), ws: filepath.Join(root, "workspace")}
	if err := mkdirs(r.home, r.ws); err != nil {
		r.close()
		return nil, fmt.Errorf("temporary directory: %w", err)
	}
	if err := scriptedgen.WriteHome(r.home); err != nil {
		r.close()
		return nil, err
	}
	if extraModel != "" {
		p := filepath.Join(r.home, ".gemini", "settings.json")
		b, err := os.ReadFile(p)
		if err == nil {
			err = os.WriteFile(p, []byte(strings.Replace(string(b), `"model": {`, `"model": {`+extraModel, 1)), 0o600)
		}
		if err != nil {
			r.close()
			return nil, err
		}
	}
	if r.api, err = scriptedgen.Start(script); err != nil {
		r.close()
		return nil, fmt.Errorf("start the scripted model: %w", err)
	}
	return r, nil
}

func (r *geminiRun) close() {
	if r.api != nil {
		_ = r.api.Close()
	}
	_ = os.RemoveAll(r.root)
}

// geminiEnv is parent without what could carry a credential, point the
// CLI elsewhere or reach the person's own settings, with HOME home.
func geminiEnv(parent []string, home string) []string {
	if parent == nil {
		parent = os.Environ()
	}
	var env []string
	for _, kv := range parent {
		k, _, _ := strings.Cut(kv, "=")
		switch up := strings.ToUpper(k); {
		case strings.HasPrefix(up, "GEMINI_"), strings.HasPrefix(up, "GOOGLE_"), strings.HasSuffix(up, "_PROXY"),
			up == "HOME", strings.HasPrefix(up, "XDG_"), up == "CLOUD_SHELL":
			continue
		}
		env = append(env, kv)
	}
	return append(env, "HOME="+home)
}

// session starts the front's session of r, with the compression held off
// when hold, opened to the workspace and every tool approved.
func (c *Checkup) geminiSession(ctx context.Context, r *geminiRun, hold bool, prompt string) (front.Session, error) {
	var h *front.Hold
	if hold {
		h = &front.Hold{}
	}
	args := append([]string{"--skip-trust", "--approval-mode", "yolo"}, c.cfg.Args...)
	return gemini.Launcher{}.Launch(ctx, front.Spec{Step: "doctor", Generation: 1, Path: c.cfg.Harness, Args: args, Hold: h,
		Prompt: prompt, Dir: r.ws, Env: append(geminiEnv(c.cfg.Env, r.home), r.api.Env()...), Grace: 2 * time.Second, Logger: c.cfg.Logger})
}

// untilEnd reads facts until the running turn ends.
func untilEnd(ctx context.Context, s front.Session) ([]front.Fact, front.TurnEnded, error) {
	var out []front.Fact
	for {
		f, err := s.Next(ctx)
		if errors.Is(err, io.EOF) {
			return out, front.TurnEnded{}, fmt.Errorf("the Gemini CLI exited before the turn ended: %s", s.Exit().Why)
		}
		if err != nil {
			return out, front.TurnEnded{}, err
		}
		out = append(out, f)
		if e, ok := f.(front.TurnEnded); ok {
			return out, e, nil
		}
	}
}

func checkGeminiACP(ctx context.Context, c *Checkup) (string, error) {
	r, err := c.startGemini(scriptedgen.Sequence(scriptedgen.Reply{Text: "ok", Usage: scriptedgen.Usage{PromptTokens: 1000}}), "")
	if err != nil {
		return "", err
	}
	defer r.close()
	s, err := c.geminiSession(ctx, r, true, "")
	if err != nil {
		return "", err
	}
	defer s.Stop()
	f, err := s.Next(ctx)
	if err != nil {
		return "", err
	}
	init, ok := f.(front.Init)
	if !ok || init.SessionID == "" || init.Version == "" {
		return "", fmt.Errorf("the session's first fact is %#v, want the Init with a session and a version", f)
	}
	if init.Model != scriptedgen.Model {
		return "", fmt.Errorf("the session runs %q, want the model of the settings, %s", init.Model, scriptedgen.Model)
	}
	return fmt.Sprintf("--acp: initialize, session/new (session %s, model %s, gemini-cli %s)", init.SessionID[:8], init.Model, init.Version), nil
}

// The meter check's two rounds.
const geminiFirst, geminiLast = 12000, 12500

func checkGeminiMeter(ctx context.Context, c *Checkup) (string, error) {
	r, err := c.startGemini(scriptedgen.Sequence(
		scriptedgen.Reply{Text: "listing", Calls: []scriptedgen.Call{scriptedgen.Shell("echo round")}, Usage: scriptedgen.Usage{PromptTokens: geminiFirst, OutputTokens: 5}},
		scriptedgen.Reply{Text: "done", Usage: scriptedgen.Usage{PromptTokens: geminiLast, OutputTokens: 5}}), "")
	if err != nil {
		return "", err
	}
	defer r.close()
	s, err := c.geminiSession(ctx, r, true, "list it")
	if err != nil {
		return "", err
	}
	defer s.Stop()
	if err := s.Begin(); err != nil {
		return "", err
	}
	facts, end, err := untilEnd(ctx, s)
	if err != nil {
		return "", err
	}
	var seen []string
	for _, f := range facts {
		if rd, ok := f.(front.Round); ok {
			switch {
			case rd.Context > 0:
				seen = append(seen, fmt.Sprint(rd.Context))
			case len(rd.ToolUses) > 0:
				seen = append(seen, "tool")
			}
		}
	}
	if got, want := strings.Join(seen, ","), fmt.Sprintf("%d,tool,%d", geminiFirst, geminiLast); got != want {
		return "", fmt.Errorf("rounds %s, want %s: the context of each model call, before its tool call", got, want)
	}
	if end.How != front.EndedOnOwn || end.Text != "done" {
		return "", fmt.Errorf("the turn ended %v with %q, want on its own with the last reply", end.How, end.Text)
	}
	return fmt.Sprintf("rounds of %d and %d tokens, the tool call between, read from the CLI's record", geminiFirst, geminiLast), nil
}

func checkGeminiCancel(ctx context.Context, c *Checkup) (string, error) {
	r, err := c.startGemini(scriptedgen.Sequence(
		scriptedgen.Reply{Text: "waiting", Calls: []scriptedgen.Call{scriptedgen.Shell("sleep 60")}, Usage: scriptedgen.Usage{PromptTokens: 9000}},
		scriptedgen.Reply{Text: "next", Usage: scriptedgen.Usage{PromptTokens: 9100}}), "")
	if err != nil {
		return "", err
	}
	defer r.close()
	s, err := c.geminiSession(ctx, r, true, "wait")
	if err != nil {
		return "", err
	}
	defer s.Stop()
	if err := s.Begin(); err != nil {
		return "", err
	}
	for {
		f, err := s.Next(ctx)
		if err != nil {
			return "", err
		}
		if rd, ok := f.(front.Round); ok && len(rd.ToolUses) > 0 {
			break
		}
	}
	began := time.Now()
	if err := s.Cut(); err != nil {
		return "", err
	}
	_, end, err := untilEnd(ctx, s)
	if err != nil {
		return "", err
	}
	took := time.Since(began)
	if end.How != front.EndedInterrupted || took > 10*time.Second {
		return "", fmt.Errorf("session/cancel during a sleep 60 ended the turn %v after %v, want interrupted at once", end.How, took.Round(time.Millisecond))
	}
	return fmt.Sprintf("session/cancel during a sleep 60 ended the turn in %v", took.Round(time.Millisecond)), nil
}

// The hold check's context, past the person's threshold of 0.2.
const geminiHoldContext = 300000

func checkGeminiHold(ctx context.Context, c *Checkup) (string, error) {
	var detail []string
	for _, held := range []bool{false, true} {
		var compressions atomic.Int32
		r, err := c.startGemini(func(q *scriptedgen.Request) scriptedgen.Reply {
			switch {
			case q.Compression:
				compressions.Add(1)
				return scriptedgen.Reply{Text: "<state_snapshot>summary</state_snapshot>", Usage: scriptedgen.Usage{PromptTokens: geminiHoldContext}}
			case q.Side:
				return scriptedgen.SideReply
			}
			return scriptedgen.Reply{Text: "a big answer", Usage: scriptedgen.Usage{PromptTokens: geminiHoldContext, OutputTokens: 5}}
		}, `"compressionThreshold": 0.2, `)
		if err != nil {
			return "", err
		}
		compacted, err := c.twoTurns(ctx, r, held)
		r.close()
		if err != nil {
			return "", err
		}
		switch n := compressions.Load(); {
		case held && (n > 0 || compacted):
			return "", fmt.Errorf("with flower's hold, %d compression requests reached the model after a turn of %d tokens (the person's threshold 0.2)", n, geminiHoldContext)
		case !held && (n == 0 || !compacted):
			return "", fmt.Errorf("without flower's hold the person's threshold 0.2 compressed nothing after %d tokens (%d requests, seen %v): this check no longer shows the lever", geminiHoldContext, n, compacted)
		case held:
			detail = append(detail, "held: none")
		default:
			detail = append(detail, fmt.Sprintf("not held: compressed (%d requests), seen in the record", n))
		}
	}
	return fmt.Sprintf("two turns at %d tokens with the person's threshold 0.2: %s", geminiHoldContext, strings.Join(detail, "; ")), nil
}

// twoTurns runs two turns in one session of r and says whether a
// compression was seen.
func (c *Checkup) twoTurns(ctx context.Context, r *geminiRun, held bool) (bool, error) {
	s, err := c.geminiSession(ctx, r, held, "first")
	if err != nil {
		return false, err
	}
	defer s.Stop()
	if err := s.Begin(); err != nil {
		return false, err
	}
	compacted := false
	for i := range 2 {
		if i == 1 {
			if err := s.Send(front.Turn{Kind: front.TurnWork, Prompt: "second"}); err != nil {
				return false, err
			}
		}
		facts, _, err := untilEnd(ctx, s)
		if err != nil {
			return false, err
		}
		for _, f := range facts {
			if _, ok := f.(front.Compacted); ok {
				compacted = true
			}
		}
	}
	return compacted, nil
}
