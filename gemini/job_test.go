package gemini_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flowerhq/flower/gemini"
	"github.com/flowerhq/flower/handoffwriter"
	"github.com/flowerhq/flower/integration/itest"
	"github.com/flowerhq/flower/manifest"
	"github.com/flowerhq/flower/policy"
	"github.com/flowerhq/flower/scriptedgen"
	"github.com/flowerhq/flower/supervisor"
)

// job is a model that works in tool rounds whose context grows by
// session: rounds[i] is the i-th work request's context in every session,
// the last session (final) ends its work with a reply of text. A writing
// request is answered with the handoff document of its session.
type job struct {
	mu     sync.Mutex
	rounds []int
	final  int // the session that finishes, counted from 0
	gen, n int
	// firsts are the successors' first work requests; compressions
	// counts the CLI's own compression requests.
	firsts       []*scriptedgen.Request
	compressions int
	// work, when set, answers the n-th work request (from 1) of session
	// gen instead of rounds, unless it says no.
	work func(gen, n int) (scriptedgen.Reply, bool)
}

func (j *job) reply(r *scriptedgen.Request) scriptedgen.Reply {
	j.mu.Lock()
	defer j.mu.Unlock()
	switch {
	case r.Compression:
		j.compressions++
		return scriptedgen.Reply{Text: "<state_snapshot>SUMMARY</state_snapshot>", Usage: scriptedgen.Usage{PromptTokens: 120000, OutputTokens: 300}}
	case r.Side:
		return scriptedgen.SideReply
	case strings.Contains(r.LastUserText, handoffwriter.PromptTag):
		j.gen++
		j.n = 0
		return scriptedgen.Reply{Text: document(j.gen - 1), Usage: scriptedgen.Usage{PromptTokens: 150000, OutputTokens: 400}}
	}
	if len(r.Responses) == 0 && strings.Contains(r.LastUserText, "taking over an ongoing task") {
		if j.n > 0 {
			j.gen++
			j.n = 0
		}
		j.firsts = append(j.firsts, r)
	}
	j.n++
	if j.work != nil {
		if reply, ok := j.work(j.gen, j.n); ok {
			return reply
		}
	}
	if j.gen == j.final && j.n > len(j.rounds)-1 {
		return scriptedgen.Reply{Text: "all done", Usage: scriptedgen.Usage{PromptTokens: 40000, OutputTokens: 10}}
	}
	ctx := j.rounds[min(j.n-1, len(j.rounds)-1)]
	return scriptedgen.Reply{Text: fmt.Sprintf("round %d", j.n), Calls: []scriptedgen.Call{scriptedgen.Shell(fmt.Sprintf("echo working %d.%d", j.gen, j.n))},
		Usage: scriptedgen.Usage{PromptTokens: ctx, CachedTokens: ctx / 2, OutputTokens: 50}}
}

// document is session gen's handoff.
func document(gen int) string {
	return fmt.Sprintf(`## 现在在做 (doing)
Session %d was porting the parser; half the files are done.
## 已定的事 (decided)
Keep the old API (the users asked for it).
## 走不通的 (deadends)
Regex-based parsing broke on nested quotes.
## 下一步 (next)
Port parse_%d.go next.
## 现场 (scene)
/src/parser, branch port-%d
`, gen+1, gen+1, gen+1)
}

// geminiRun is a Runtime on the real Gemini CLI against j.
type geminiRun struct {
	rt   *supervisor.Runtime
	api  *scriptedgen.Server
	home string
	ws   string
}

func newRun(t *testing.T, j *job, with func(*supervisor.Options)) *geminiRun {
	t.Helper()
	bin := itest.GeminiPath(t)
	api, err := scriptedgen.Start(j.reply)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = api.Close() })
	home, ws := t.TempDir(), t.TempDir()
	if err := scriptedgen.WriteHome(home); err != nil {
		t.Fatal(err)
	}
	env := append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + home}, api.Env()...)
	opts := supervisor.Options{Workspace: ws, Workbench: true, WorkbenchDir: filepath.Join(ws, ".flower"),
		HarnessPath: bin, HarnessArgs: []string{"--skip-trust", "--approval-mode", "yolo"}, HookBinary: os.Args[0],
		Front: gemini.Launcher{}, Env: env, Handoff: policy.Switch(true), MaxAttempts: 2}
	if with != nil {
		with(&opts)
	}
	rt, err := supervisor.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return &geminiRun{rt: rt, api: api, home: home, ws: ws}
}

func (r *geminiRun) run(t *testing.T, task string) *manifest.StepResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	st, err := r.rt.RunStep(ctx, "port", task)
	if os.Getenv("GEMINI_DEBUG") != "" {
		_ = os.CopyFS("/tmp/gdebug", os.DirFS(filepath.Join(r.home, ".gemini")))
		_ = os.CopyFS("/tmp/gdebug-ws", os.DirFS(filepath.Join(r.ws, ".flower")))
	}
	if err != nil {
		t.Fatalf("RunStep: %v (errors %q)", err, st.Errors)
	}
	return st
}

// TestThreeSessionsTwoHandoffs is a job that needs three sessions on the
// real Gemini CLI: it ends with two whole handoffs, no compression request
// reaches the model, and each successor starts from the handoff file on
// disk and the task, verbatim. The person's own settings compress at 0.2
// of the window; flower's hold keeps it off.
func TestThreeSessionsTwoHandoffs(t *testing.T) {
	j := &job{rounds: []int{300000, 700000, 1010000}, final: 2}
	edits := 0
	edit := func(path string) {
		edits++
		f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Error(err)
			return
		}
		defer f.Close()
		fmt.Fprintf(f, "\nA person's note %d: mind the tests in /src/parser/testdata.\n", edits)
	}
	r := newRun(t, j, func(o *supervisor.Options) { o.AfterFreeze = edit })
	settings := filepath.Join(r.home, ".gemini", "settings.json")
	b, err := os.ReadFile(settings)
	if err != nil {
		t.Fatal(err)
	}
	person := strings.Replace(string(b), `"model": {`, `"model": {"compressionThreshold": 0.2, `, 1)
	if person == string(b) {
		t.Fatalf("settings without a model section: %s", b)
	}
	if err := os.WriteFile(settings, []byte(person), 0o600); err != nil {
		t.Fatal(err)
	}
	const task = "Port the parser to the new API, file by file."
	st := r.run(t, task)
	if st.Status != manifest.StatusSucceeded || len(st.Generations) != 3 {
		t.Fatalf("status %s, %d generations (errors %q); want succeeded in 3", st.Status, len(st.Generations), st.Errors)
	}
	for i, g := range st.Generations[:2] {
		if h := g.Handoff; h == nil || h.Degraded || h.Reason != manifest.ReasonThreshold || h.Window != gemini.Window(scriptedgen.Model) {
			t.Fatalf("generation %d handoff %+v: want a whole one at the threshold of a window of %d", i+1, h, gemini.Window(scriptedgen.Model))
		}
	}
	if j.compressions > 0 {
		t.Fatalf("%d compression requests reached the model", j.compressions)
	}
	if len(j.firsts) != 2 {
		t.Fatalf("%d successors' first requests, want 2", len(j.firsts))
	}
	for i, q := range j.firsts {
		h := handoffwriter.Parse(document(i))
		for _, part := range []string{h.Doing, h.Decided, h.Deadends, h.Next, fmt.Sprintf("A person's note %d", i+1)} {
			if !strings.Contains(q.LastUserText, strings.TrimSpace(part)) {
				t.Errorf("successor %d's first prompt lacks %q of its handoff file:\n%s", i+2, part, q.LastUserText)
			}
		}
		if !strings.Contains(q.LastUserText, "<<<<<<<< the task begins\n"+task+"\n>>>>>>>> the task ends") {
			t.Errorf("successor %d's first prompt lacks the task verbatim:\n%s", i+2, q.LastUserText)
		}
	}
	ids := map[string]bool{}
	for _, g := range st.Generations {
		ids[g.SessionID] = true
	}
	if len(ids) != 3 {
		t.Errorf("sessions %v: want three", ids)
	}
	if b2, _ := os.ReadFile(settings); string(b2) != person {
		t.Errorf("the person's settings changed:\n%s", b2)
	}
}
