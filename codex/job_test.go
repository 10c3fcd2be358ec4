package codex_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flowerhq/flower/codex"
	"github.com/flowerhq/flower/handoffwriter"
	"github.com/flowerhq/flower/integration/itest"
	"github.com/flowerhq/flower/manifest"
	"github.com/flowerhq/flower/policy"
	"github.com/flowerhq/flower/scriptedresp"
	"github.com/flowerhq/flower/supervisor"
)

// personConfig is a person's own Codex settings: compaction at 100 000 of
// a window of 200 000.
const personConfig = "model_auto_compact_token_limit = 100000\nmodel_context_window = 200000\n"

// job is a model that works in tool rounds whose context grows by
// session: rounds[i] is the i-th work request's context in every session,
// the last session (final) ends its work with a reply of text. A writing
// request is answered with the handoff document of its session.
type job struct {
	mu     sync.Mutex
	rounds []int
	final  int // the session that finishes, counted from 0
	gen, n int
	// firsts are the successors' first work requests.
	firsts []*scriptedresp.Request
	// write answers the writing request of session gen; nil: a whole
	// document. work, when set, answers the n-th work request (from 1)
	// of session gen instead of rounds, unless it says no.
	write func(gen int) scriptedresp.Reply
	work  func(gen, n int) (scriptedresp.Reply, bool)
}

func (j *job) reply(r *scriptedresp.Request) scriptedresp.Reply {
	j.mu.Lock()
	defer j.mu.Unlock()
	if r.Compaction {
		return scriptedresp.Reply{Text: "SUMMARY of the work so far", Usage: scriptedresp.Usage{InputTokens: 120000, OutputTokens: 300}}
	}
	if strings.Contains(r.LastUserText, handoffwriter.PromptTag) {
		j.gen++
		j.n = 0
		if j.write != nil {
			return j.write(j.gen - 1)
		}
		return scriptedresp.Reply{Text: document(j.gen - 1), Usage: scriptedresp.Usage{InputTokens: 150000, OutputTokens: 400}}
	}
	if len(r.Outputs) == 0 && strings.Contains(r.LastUserText, "taking over an ongoing task") {
		// A successor's first request; one that no writing request
		// came before (an overflow's) starts the next session too.
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
		return scriptedresp.Reply{Text: "all done", Usage: scriptedresp.Usage{InputTokens: 40000, OutputTokens: 10}}
	}
	ctx := j.rounds[min(j.n-1, len(j.rounds)-1)]
	return scriptedresp.Reply{Text: fmt.Sprintf("round %d", j.n), Calls: []scriptedresp.Call{{Cmd: "echo working"}},
		Usage: scriptedresp.Usage{InputTokens: ctx, CachedInputTokens: ctx / 2, OutputTokens: 50}}
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

// codexRun is a Runtime on the real Codex CLI against j.
type codexRun struct {
	rt   *supervisor.Runtime
	api  *scriptedresp.Server
	home string
	ws   string
}

func newRun(t *testing.T, j *job, config string, with func(*supervisor.Options)) *codexRun {
	t.Helper()
	bin := itest.CodexPath(t)
	api, err := scriptedresp.Start(j.reply)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = api.Close() })
	home, ws := t.TempDir(), t.TempDir()
	if err := api.WriteCodexHome(home, config); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "CODEX_HOME="+home)
	opts := supervisor.Options{Workspace: ws, Workbench: true, WorkbenchDir: filepath.Join(ws, ".flower"),
		HarnessPath: bin, HookBinary: os.Args[0], Front: codex.Launcher{}, Env: append(env, api.Env()...),
		Handoff: policy.Switch(true), MaxAttempts: 2}
	if with != nil {
		with(&opts)
	}
	rt, err := supervisor.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return &codexRun{rt: rt, api: api, home: home, ws: ws}
}

func (r *codexRun) run(t *testing.T, task string) *manifest.StepResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	st, err := r.rt.RunStep(ctx, "port", task)
	if err != nil {
		t.Fatalf("RunStep: %v (errors %q)", err, st.Errors)
	}
	return st
}

// TestThreeSessionsTwoHandoffs is a job that needs three sessions on the
// real Codex CLI, with the person's own config compacting at 100 000 of
// 200 000: it ends with two whole handoffs, no compaction request reaches
// the model, and each successor starts from the handoff file on disk and
// the task, verbatim.
func TestThreeSessionsTwoHandoffs(t *testing.T) {
	j := &job{rounds: []int{30000, 90000, 160000}, final: 2}
	// A person edits each handoff file once it is written: the
	// successor must start from the file as it is then.
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
	r := newRun(t, j, personConfig, func(o *supervisor.Options) { o.AfterFreeze = edit })
	const task = "Port the parser to the new API, file by file."
	st := r.run(t, task)
	if st.Status != manifest.StatusSucceeded || len(st.Generations) != 3 {
		t.Fatalf("status %s, %d generations (errors %q); want succeeded in 3", st.Status, len(st.Generations), st.Errors)
	}
	for i, g := range st.Generations[:2] {
		h := g.Handoff
		if h == nil || h.Degraded || h.Reason != manifest.ReasonThreshold {
			t.Fatalf("generation %d handoff %+v: want a whole one at the threshold", i+1, h)
		}
		if h.Window != 180000 {
			t.Errorf("generation %d handed off against a window of %d; want 180000, where Codex compacts (90%% of 200000)", i+1, h.Window)
		}
	}
	for _, q := range r.api.Requests() {
		if q.Compaction {
			t.Fatalf("request %d is a compaction request", q.Seq)
		}
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
		if g := st.Generations[i].Handoff; g.SHA256Launched == "" || g.SHA256Launched == g.SHA256Written {
			t.Errorf("generation %d: launched %q, written %q: want the edited file launched", i+1, g.SHA256Launched, g.SHA256Written)
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
		t.Errorf("sessions %v: want three threads", ids)
	}
}
