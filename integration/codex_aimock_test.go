package integration_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/flowerhq/flower/handoffwriter"
	"github.com/flowerhq/flower/integration/itest"
	"github.com/flowerhq/flower/manifest"
	"github.com/flowerhq/flower/scriptedresp"
)

// aimockFixture is one entry of an aimock fixtures file: the first entry
// whose match fits a request answers it.
type aimockFixture struct {
	Match    aimockMatch    `json:"match"`
	Response aimockResponse `json:"response"`
}

// aimockMatch: UserMessage is a substring of the request's last user
// message (Codex's prompt of the turn), ToolResultContains of the last
// message when it is a tool result; SequenceIndex, when set, is which
// match of this fixture it answers (from 0).
type aimockMatch struct {
	UserMessage        string `json:"userMessage,omitempty"`
	ToolResultContains string `json:"toolResultContains,omitempty"`
	SequenceIndex      *int   `json:"sequenceIndex,omitempty"`
}

type aimockResponse struct {
	Content   string           `json:"content,omitempty"`
	ToolCalls []aimockToolCall `json:"toolCalls,omitempty"`
	Usage     aimockUsage      `json:"usage"`
}

type aimockToolCall struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

type aimockUsage struct {
	InputTokens  int `json:"input_tokens"`
	OutputTokens int `json:"output_tokens"`
}

// aimockEntry is one request in aimock's journal, its body as aimock
// read it: the Responses input turned into chat messages.
type aimockEntry struct {
	Method string `json:"method"`
	Path   string `json:"path"`
	Body   *struct {
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	} `json:"body"`
	Response struct {
		Status  int            `json:"status"`
		Fixture *aimockFixture `json:"fixture"`
	} `json:"response"`
}

// text is the content of message i as text ("" for none).
func (e aimockEntry) text(i int) string {
	raw := e.Body.Messages[i].Content
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return string(raw)
}

// firstOfTurn reports whether the request opens a turn: its last message
// is the user's prompt, with no tool result after it.
func (e aimockEntry) firstOfTurn() bool {
	n := len(e.Body.Messages)
	return n > 0 && e.Body.Messages[n-1].Role == "user"
}

// startAimock runs aimock on a free port of 127.0.0.1 with fixtures,
// strict (a request no fixture matches is answered 503 and journaled so),
// and returns its address, http://127.0.0.1:PORT. It is killed at cleanup.
func startAimock(t *testing.T, bin string, fixtures []aimockFixture) string {
	t.Helper()
	b, err := json.Marshal(map[string]any{"fixtures": fixtures})
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "fixtures.json")
	if err := os.WriteFile(file, b, 0o600); err != nil {
		t.Fatal(err)
	}
	mu, buf := &sync.Mutex{}, &bytes.Buffer{}
	output := func() string { mu.Lock(); defer mu.Unlock(); return buf.String() }
	cmd := exec.Command(bin, "--host", "127.0.0.1", "--port", "0", "--fixtures", file, "--strict", "--journal-max", "0")
	cmd.Stdout = lockedWriter{mu, buf}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("aimock output:\n%s", output())
		}
	})
	const listening = "aimock server listening on "
	var url string
	until(t, "aimock to listen", func() bool {
		_, rest, ok := strings.Cut(output(), listening)
		url, _, _ = strings.Cut(rest, "\n")
		return ok && strings.Contains(rest, "\n")
	})
	if !strings.HasPrefix(url, "http://127.0.0.1:") {
		t.Fatalf("aimock listens on %q, not on 127.0.0.1", url)
	}
	return url
}

// aimockJournal is every request aimock at url received, in order.
func aimockJournal(t *testing.T, url string) []aimockEntry {
	t.Helper()
	resp, err := http.Get(url + "/__aimock/journal")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var entries []aimockEntry
	if err := json.NewDecoder(resp.Body).Decode(&entries); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("aimock journal: status %d, %v", resp.StatusCode, err)
	}
	return entries
}

// aimockSections are the sections of a whole handoff.
var aimockSections = []string{"doing", "decided", "deadends", "next", "scene"}

// aimockMark is what section holds in the handoff written at the end of
// session k.
func aimockMark(section string, k int) string {
	return fmt.Sprintf("%s-MARK-%d", strings.ToUpper(section), k)
}

// aimockDocument is the whole handoff written at the end of session k.
func aimockDocument(k int) string {
	var b strings.Builder
	for _, s := range aimockSections {
		fmt.Fprintf(&b, "## %s\n%s\n", s, aimockMark(s, k))
	}
	return b.String()
}

// aimockSession answers the turn whose prompt holds prompt: an
// exec_command first, then one for each command's output, round r at
// context rounds[r-1]; after the last round's output, "all done" when
// done, else nothing (a request then is a failure).
func aimockSession(session int, prompt string, rounds []int, done bool) []aimockFixture {
	mark := func(r int) string { return fmt.Sprintf("<session %d round %d>", session, r) }
	call := func(r int) aimockResponse {
		args, _ := json.Marshal(map[string]string{"cmd": "echo '" + mark(r) + "'"})
		return aimockResponse{ToolCalls: []aimockToolCall{{Name: "exec_command", Arguments: string(args)}},
			Usage: aimockUsage{InputTokens: rounds[r-1], OutputTokens: 40}}
	}
	var fs []aimockFixture
	if done {
		fs = append(fs, aimockFixture{aimockMatch{UserMessage: prompt, ToolResultContains: mark(len(rounds))},
			aimockResponse{Content: "all done", Usage: aimockUsage{InputTokens: 40000, OutputTokens: 10}}})
	}
	for r := 2; r <= len(rounds); r++ {
		fs = append(fs, aimockFixture{aimockMatch{UserMessage: prompt, ToolResultContains: mark(r - 1)}, call(r)})
	}
	// Last: matching on the prompt alone, it fits every request of the turn.
	return append(fs, aimockFixture{aimockMatch{UserMessage: prompt}, call(1)})
}

// aimockJob is the script of a job of three sessions: a compaction request
// is answered with compactionAnswer; each writing turn with a whole
// handoff; the sessions' rounds climb past the handoff point, and the third
// ends after one round. Later sessions come first, as a successor's
// prompt carries the task the first session's prompt is matched by.
func aimockJob(task, compactionAnswer string) []aimockFixture {
	fs := []aimockFixture{{aimockMatch{UserMessage: scriptedresp.CompactionPrompt},
		aimockResponse{Content: compactionAnswer, Usage: aimockUsage{InputTokens: 20000, OutputTokens: 100}}}}
	for k := 1; k <= 2; k++ {
		nth := k - 1 // the k-th writing turn
		fs = append(fs, aimockFixture{aimockMatch{UserMessage: handoffwriter.PromptTag, SequenceIndex: &nth},
			aimockResponse{Content: aimockDocument(k), Usage: aimockUsage{InputTokens: 150000, OutputTokens: 300}}})
	}
	climb := []int{30000, 90000, 160000, 160000, 160000, 160000}
	fs = append(fs, aimockSession(3, "DOING-MARK-2", []int{30000}, true)...)
	fs = append(fs, aimockSession(2, "DOING-MARK-1", climb, false)...)
	return append(fs, aimockSession(1, task, climb, false)...)
}

// The job of TestCodexJobOfThreeSessions against a scripted Responses API
// the project did not write (aimock): on the real Codex CLI, with the
// person's config compacting at 100 000 of 200 000, it ends in two whole
// handoffs, no compaction request reaches the model, and each successor's
// first request holds its handoff's sections and the task verbatim.
func TestCodexJobOnAimock(t *testing.T) {
	t.Parallel()
	aimock := itest.AimockPath(t)
	bin := itest.CodexPath(t)
	const task, compacted = "TASK-MARK: port the parser", "COMPACTION-ANSWER-MARK"
	url := startAimock(t, aimock, aimockJob(task, compacted))
	env := codexEnv(t, url+"/v1", codexPersonConfig)
	ws := t.TempDir()
	runDir := filepath.Join(ws, ".flower", "runs", "codex")
	code, out := runFlowerCLI(t, env, "--harness", bin, "-C", ws, "--run-dir", runDir, task)
	if code != 0 {
		t.Fatalf("flower exited %d:\n%s", code, out)
	}
	st := loadStep(t, runDir, "main")
	if st.Status != manifest.StatusSucceeded || len(st.Generations) != 3 {
		t.Fatalf("status %s, %d generations (errors %q):\n%s", st.Status, len(st.Generations), st.Errors, out)
	}
	for i, g := range st.Generations[:2] {
		if h := g.Handoff; h == nil || h.Degraded || h.Window != 180000 {
			t.Errorf("generation %d handoff %+v: want a whole one against the window of 180000", i+1, h)
		}
	}
	checkAimockJournal(t, aimockJournal(t, url), task, compacted)
}

// checkAimockJournal: every model request was answered by a fixture, none
// was a compaction, and the two successors' first prompts hold handoffs 1
// and 2 and the task verbatim.
func checkAimockJournal(t *testing.T, entries []aimockEntry, task, compacted string) {
	t.Helper()
	carried := handoffwriter.TaskBegin + "\n" + task + "\n" + handoffwriter.TaskEnd
	firsts, models := 0, 0
	for i, e := range entries {
		if e.Method != http.MethodPost || e.Path != "/v1/responses" || e.Body == nil {
			t.Errorf("request %d: %s %s, not a model request", i+1, e.Method, e.Path)
			continue
		}
		models++
		if e.Response.Status != http.StatusOK || e.Response.Fixture == nil {
			t.Errorf("request %d answered %d, by fixture %+v", i+1, e.Response.Status, e.Response.Fixture)
		} else if e.Response.Fixture.Response.Content == compacted {
			t.Errorf("request %d was answered as a compaction request", i+1)
		}
		for m := range e.Body.Messages {
			if strings.Contains(e.text(m), scriptedresp.CompactionPrompt) {
				t.Errorf("request %d carries a compaction prompt", i+1)
			}
		}
		if !e.firstOfTurn() {
			continue
		}
		last := e.text(len(e.Body.Messages) - 1)
		if !strings.Contains(last, "taking over an ongoing task") {
			continue
		}
		firsts++
		for _, s := range aimockSections {
			if want := aimockMark(s, firsts); !strings.Contains(last, want) {
				t.Errorf("successor %d's first prompt lacks %q", firsts+1, want)
			}
		}
		if !strings.Contains(last, carried) {
			t.Errorf("successor %d's first prompt lacks the task verbatim", firsts+1)
		}
	}
	if firsts != 2 {
		t.Errorf("%d successors started from a handoff, want 2", firsts)
	}
	t.Logf("aimock answered %d model requests", models)
}
