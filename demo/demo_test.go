package demo

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/flowerhq/flower/handoffwriter"
	"github.com/flowerhq/flower/policy"
	"github.com/flowerhq/flower/scriptedapi"
)

func TestHarnessEnv(t *testing.T) {
	server := []string{"ANTHROPIC_BASE_URL=http://127.0.0.1:1", "ANTHROPIC_API_KEY=" + scriptedapi.APIKey}
	tests := []struct {
		kv   string
		keep bool
	}{
		{"PATH=/usr/bin:/bin", true},
		{"LANG=C.UTF-8", true},
		{"TMPDIR=/tmp/x", true},
		{"TERM=screen", true},
		{"FLOWER_HARNESS=/opt/claude", true},
		{"ANTHROPIC_API_KEY=sk-ant-real-0000", false},
		{"ANTHROPIC_AUTH_TOKEN=tok-real-0000", false},
		{"ANTHROPIC_BASE_URL=https://api.example.com", false},
		{"ANTHROPIC_MODEL=claude-opus-4-1", false},
		{"CLAUDE_CODE_USE_BEDROCK=1", false},
		{"CLAUDE_CONFIG_DIR=/home/me/.claude", false},
		{"CLAUDECODE=1", false},
		{"HTTPS_PROXY=http://proxy:3128", false},
		{"https_proxy=http://proxy:3128", false},
		{"ALL_PROXY=socks5://proxy", false},
		{"HOME=/home/me", false},
		{"XDG_CONFIG_HOME=/home/me/.config", false},
		{"DISABLE_AUTO_COMPACT=0", false},
		{"not-a-variable", false},
	}
	var parent []string
	for _, tt := range tests {
		parent = append(parent, tt.kv)
	}
	got := HarnessEnv(parent, "/tmp/demo-home", server)
	for _, tt := range tests {
		if slices.Contains(got, tt.kv) != tt.keep {
			t.Errorf("%s: kept = %v, want %v", tt.kv, !tt.keep, tt.keep)
		}
	}
	tail := got[len(got)-len(server)-2:]
	want := append(append([]string{"HOME=/tmp/demo-home"}, server...), "ANTHROPIC_MODEL="+ModelName)
	if !slices.Equal(tail, want) {
		t.Errorf("env ends with %q, want %q", tail, want)
	}
	for _, kv := range got {
		if strings.Contains(kv, "real-0000") {
			t.Errorf("a credential of the parent survived: %s", kv)
		}
	}
}

// contextOf is what the harness and flower take as a reply's context size.
func contextOf(u scriptedapi.Usage) int {
	return u.InputTokens + u.CacheCreationInputTokens + u.CacheReadInputTokens
}

func mainRequest(text string, msgs int) *scriptedapi.Request {
	return &scriptedapi.Request{Kind: scriptedapi.KindMain, LastUserText: text, NumMessages: msgs}
}

// takingOver is how the successor's first request looks: the prompt block
// plus what the harness adds.
func takingOver(h handoffwriter.Handoff) *scriptedapi.Request {
	return mainRequest("<system-reminder>x</system-reminder>\n"+h.PromptBlock(), 2)
}

// run plays one generation: working requests until the model stops calling
// tools or its reply reaches the handoff threshold. It returns the replies.
func run(t *testing.T, m *Model, first *scriptedapi.Request, at int) []scriptedapi.Reply {
	t.Helper()
	var out []scriptedapi.Reply
	r := first
	for n := 0; n < 20; n++ {
		reply := m.Script(r)
		out = append(out, reply)
		if len(reply.ToolUses) == 0 || contextOf(reply.Usage) >= at {
			return out
		}
		r = &scriptedapi.Request{Kind: scriptedapi.KindMain, NumMessages: 3 + 2*n,
			LastToolResults: []scriptedapi.ToolResult{{Content: fmt.Sprintf("TOOL-OUTPUT-%d\n\n<system-reminder>\nREMINDER\n</system-reminder>", n)}}}
	}
	t.Fatal("the generation never ended")
	return nil
}

// TestStory plays the script the way the harness and flower would and checks
// what the demo promises: each of the first two generations crosses the near
// notice and then the threshold, writes a complete handoff, and the last one
// finishes below the near notice; the files are written in the workspace.
func TestStory(t *testing.T) {
	pol := policy.HandoffPolicy{Enabled: true, Window: Window, Headroom: policy.DefaultHeadroom}
	ws := filepath.Join(t.TempDir(), "ws")
	m := NewModel(ws, 0)
	written := map[string]bool{}
	first := mainRequest(Task, 1)
	for gen := 1; gen <= Generations; gen++ {
		if got := m.Generation(); got != gen {
			t.Fatalf("model is in generation %d, want %d", got, gen)
		}
		replies := run(t, m, first, pol.At())
		near := false
		for _, r := range replies {
			c := contextOf(r.Usage)
			near = near || (c >= pol.WarnAt() && c < pol.At())
			if r.Text == "" {
				t.Errorf("generation %d: a reply without text", gen)
			}
			for _, tu := range r.ToolUses {
				in := tu.Input.(map[string]any)
				if p, ok := in["file_path"].(string); ok {
					if !strings.HasPrefix(p, ws+string(filepath.Separator)) {
						t.Errorf("generation %d: %s on %s, outside the workspace", gen, tu.Name, p)
					}
					if tu.Name == "Write" {
						written[filepath.Base(p)] = true
					}
				}
			}
		}
		last := replies[len(replies)-1]
		if gen == Generations {
			if len(last.ToolUses) != 0 || contextOf(last.Usage) >= pol.WarnAt() || near {
				t.Errorf("last generation: ends with %d tool calls at %d tokens (near notice seen: %v); want a plain answer below %d",
					len(last.ToolUses), contextOf(last.Usage), near, pol.WarnAt())
			}
			if !strings.Contains(last.Text, "TOOL-OUTPUT") || strings.Contains(last.Text, "REMINDER") {
				t.Errorf("the closing text does not quote the test run, or quotes the harness's reminder: %q", last.Text)
			}
			break
		}
		if !near || contextOf(last.Usage) < pol.At() {
			t.Fatalf("generation %d: near notice %v, ends at %d; want the notice, then at least %d", gen, near, contextOf(last.Usage), pol.At())
		}
		// The writing turn, as flower sends it after the interrupt.
		w := m.Script(mainRequest("[Request interrupted by user for tool use]\n"+
			handoffwriter.HandoffPrompt(contextOf(last.Usage), Window), len(replies)*2+1))
		if len(w.ToolUses) != 0 {
			t.Errorf("generation %d: the handoff calls tools", gen)
		}
		h := handoffwriter.Parse(w.Text)
		if len(h.Filled()) != len(handoffwriter.Sections) {
			t.Errorf("generation %d: handoff fills %v, want all five sections", gen, h.Filled())
		}
		if !strings.Contains(h.Scene, ws) {
			t.Errorf("generation %d: the scene does not point into the workspace: %q", gen, h.Scene)
		}
		first = takingOver(h)
	}
	for _, f := range Files {
		if !written[f] {
			t.Errorf("%s is never written", f)
		}
	}
}

// A successor whose predecessor wrote no handoff (the writing turn failed)
// is recognised by its prompt, and the story moves on.
func TestTakeoverWithoutWritingTurn(t *testing.T) {
	m := NewModel(t.TempDir(), 0)
	m.Script(mainRequest(Task, 1))
	m.Script(&scriptedapi.Request{Kind: scriptedapi.KindMain, NumMessages: 3})
	m.Script(takingOver(handoffwriter.Degraded(Step, Task, "the writing turn failed")))
	if got := m.Generation(); got != 2 {
		t.Errorf("after a degraded takeover the model is in generation %d, want 2", got)
	}
	// The first request of a session, but not a takeover: no change.
	m.Script(mainRequest("hello", 2))
	if got := m.Generation(); got != 2 {
		t.Errorf("a plain first request moved the model to generation %d", got)
	}
}

// Subagent and side requests do not move the story; calls may come from
// several goroutines (run with -race).
func TestOtherRequestsAndConcurrency(t *testing.T) {
	m := NewModel(t.TempDir(), 0)
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, k := range []scriptedapi.Kind{scriptedapi.KindSubagent, scriptedapi.KindSide} {
				if r := m.Script(&scriptedapi.Request{Kind: k, LastUserText: handoffwriter.PromptTag}); len(r.ToolUses) != 0 || contextOf(r.Usage) > 1000 {
					t.Errorf("%s request: got %+v, want a harmless reply", k, r)
				}
			}
			m.Script(mainRequest(Task, 1))
			_ = m.Generation()
		}()
	}
	wg.Wait()
	if got := m.Generation(); got != 1 {
		t.Errorf("generation %d after working requests only, want 1", got)
	}
}
