package integration_test

// DESIGN.md «Compaction levers»: while flower hands off, a workspace (or
// the person's own settings) that switches the harness's compaction back
// on does not get it. The real harness, told by an env block to compact
// and given a window that puts its own threshold near 67K, never sends a
// summary request; flower hands off at its own threshold, and every
// compaction its hook blocked is in the manifest.

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flowerhq/flower/manifest"
	"github.com/flowerhq/flower/scriptedapi"
)

// summaryRequest is the start of the harness's compaction request.
const summaryRequest = "CRITICAL: Respond with TEXT ONLY"

// hostileOn is the env block that switches compaction back on.
const hostileOn = `{"env":{"DISABLE_AUTO_COMPACT":"0"},"hooks":{"PreCompact":[{"hooks":[{"type":"command","command":"echo x >> \"$FLOWER_TEST_MARKS\""}]}]}}`

// noCompaction fails the test if the API saw a summary request or the
// harness reported a compaction.
func noCompaction(t *testing.T, g *guarRun, out string) {
	t.Helper()
	for _, r := range g.srv.Requests() {
		if strings.HasPrefix(strings.TrimSpace(r.LastUserText), summaryRequest) || strings.Contains(r.LastUserText, summaryRequest) {
			t.Errorf("request %d is a summary request: %q", r.Seq, clip(r.LastUserText, 120))
		}
	}
	if strings.Contains(out, "compact_boundary") || transcriptHas(g.home, "compact_boundary") {
		t.Errorf("the harness compacted (a compact_boundary)")
	}
}

func blocked(st *manifest.StepResult) []manifest.BlockedCompaction {
	var out []manifest.BlockedCompaction
	for _, g := range st.Generations {
		out = append(out, g.BlockedCompactions...)
	}
	return out
}

func TestHostileWorkspaceCompactionHeldOff(t *testing.T) {
	t.Parallel()
	ws := func(g *guarRun) string { return filepath.Join(g.ws, ".claude", "settings.json") }
	rows := []struct {
		name  string
		front guarFront
		where func(g *guarRun) string
		// auto: flower runs with --compact auto, so the harness compacts
		// for real: the premise of every other row.
		auto bool
	}{
		{"compact auto", headlessGuar{}, ws, true},
		{"settings.json", headlessGuar{}, ws, false},
		{"settings.json", interactiveGuar{}, ws, false},
		{"settings.local.json", headlessGuar{}, func(g *guarRun) string { return filepath.Join(g.ws, ".claude", "settings.local.json") }, false},
		{"user settings", headlessGuar{}, func(g *guarRun) string { return filepath.Join(g.home, ".claude", "settings.json") }, false},
	}
	for _, row := range rows {
		t.Run(row.name+"/"+row.front.name(), func(t *testing.T) {
			t.Parallel()
			// 70K is past the harness's 67K; 85K past flower's 80K (a
			// 130K window less the 50K headroom).
			job := jobScript([][]scriptedapi.Reply{{bash(10_000, "echo one >> work.txt"), bash(20_000, "echo two >> work.txt"),
				bash(30_000, "echo three >> work.txt"), bash(70_000, "echo four >> work.txt"),
				bash(85_000, "echo five >> work.txt"), done(86_000)}, {done(20_000)}}, goodHandoff)()
			script := func() scriptedapi.Script {
				return func(r *scriptedapi.Request) scriptedapi.Reply {
					if r.Kind == scriptedapi.KindMain && strings.Contains(r.LastUserText, summaryRequest) {
						return scriptedapi.Reply{Text: "<summary>SUMMARY-MARK: lines appended so far</summary>", Usage: usage(72_000)}
					}
					return job(r)
				}
			}
			marks := filepath.Join(t.TempDir(), "marks")
			g := newGuarRun(t, row.front, script(), "ANTHROPIC_MODEL=claude-haiku-4-5",
				"CLAUDE_CODE_AUTO_COMPACT_WINDOW=100000", "FLOWER_TEST_MARKS="+marks)
			path := row.where(g)
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, []byte(hostileOn), 0o644); err != nil {
				t.Fatal(err)
			}
			if _, headless := row.front.(headlessGuar); headless && strings.HasPrefix(path, g.ws) {
				// The person trusts the settings that fight the levers, so
				// the harness loads them (DESIGN.md «Trust store»).
				if code, out := flowerCmd(t, g.env, g.ws, "trust", g.ws); code != 0 {
					t.Fatalf("flower trust: exit %d\n%s", code, out)
				}
			}
			flags := []string{"--window", "130000"}
			if row.auto {
				flags = append(flags, "--compact", "auto")
			}
			h := g.run(guarTask, flags...)
			code := g.wait(h)
			st := g.step()
			if row.auto {
				checkRealCompaction(t, g, code, st)
				return
			}
			noCompaction(t, g, h.output())
			if code != 0 || len(st.Generations) != 2 || st.Generations[0].Handoff == nil || st.Generations[0].Handoff.Reason != manifest.ReasonThreshold {
				t.Fatalf("exit %d, %d generations, generation 1's handoff %+v; errors %q: want one handoff at flower's threshold",
					code, len(st.Generations), st.Generations[0].Handoff, st.Errors)
			}
			if c := st.Generations[0].Handoff.Context; c < 80_000 {
				t.Errorf("handed off at %d, below flower's threshold of 80K", c)
			}
			if ac := st.Generations[0].AutoCompactEnabled; ac == nil || *ac {
				t.Errorf("the harness reports auto-compact %v under flower's levers, want false", ac)
			}
			// Each time the harness ran its PreCompact hooks, the
			// workspace's own hook left a mark: flower's hook ran beside
			// it and the manifest has the attempt.
			b, _ := os.ReadFile(marks)
			ran := strings.Count(string(b), "x")
			got := blocked(st)
			if len(got) != ran {
				t.Errorf("the harness ran its PreCompact hooks %d times; the manifest records %d blocked compactions: %+v", ran, len(got), got)
			}
			for _, bc := range got {
				if bc.Trigger != "auto" || bc.Context < 67_000 {
					t.Errorf("blocked compaction %+v: want trigger auto, at 67K or more", bc)
				}
			}
			t.Logf("blocked compactions: %+v", got)
		})
	}
}

// checkRealCompaction: with --compact auto the harness compacts (a summary
// request, a compact_boundary); flower records it and still hands off at
// its own threshold, the successor started from a handoff.
func checkRealCompaction(t *testing.T, g *guarRun, code int, st *manifest.StepResult) {
	t.Helper()
	summaries := 0
	for _, r := range g.srv.Requests() {
		if strings.Contains(r.LastUserText, summaryRequest) {
			summaries++
		}
	}
	var done []manifest.Compaction
	for _, gen := range st.Generations {
		done = append(done, gen.Compactions...)
	}
	if summaries == 0 || len(done) == 0 || !transcriptHas(g.home, "compact_boundary") {
		t.Fatalf("%d summary requests, compactions recorded %+v, compact_boundary in a transcript %v: want a real compaction",
			summaries, done, transcriptHas(g.home, "compact_boundary"))
	}
	if done[0].Trigger != "auto" || done[0].PreTokens < 67_000 {
		t.Errorf("compaction %+v: want trigger auto past 67K", done[0])
	}
	if len(blocked(st)) != 0 {
		t.Errorf("compact mode auto blocked compactions: %+v", blocked(st))
	}
	if code != 0 || len(st.Generations) != 2 || st.Generations[0].Handoff == nil || st.Generations[0].Handoff.Reason != manifest.ReasonThreshold {
		t.Fatalf("exit %d, %d generations, generation 1's handoff %+v; errors %q: want one handoff at flower's threshold",
			code, len(st.Generations), st.Generations[0].Handoff, st.Errors)
	}
	t.Logf("compactions: %+v", done)
}

// TestOwnSettingsKept: the person's own --settings (a file, or inline
// JSON) still takes effect under flower's levers: its env reaches the
// agent's tools, and its PreCompact hook runs when a /compact is blocked.
func TestOwnSettingsKept(t *testing.T) {
	t.Parallel()
	for _, form := range []string{"file", "inline"} {
		t.Run(form, func(t *testing.T) {
			t.Parallel()
			script := jobScript([][]scriptedapi.Reply{{bash(50_000, `echo "mark=$PERSON_MARK" >> work.txt`), done(60_000)}, {done(20_000)}}, goodHandoff)
			g := newGuarRun(t, headlessGuar{}, script(), "ANTHROPIC_MODEL=claude-haiku-4-5")
			marker := filepath.Join(t.TempDir(), "hook-ran")
			own := `{"env":{"PERSON_MARK":"OWN-SETTING-42","DISABLE_AUTO_COMPACT":"0"},` +
				`"hooks":{"PreCompact":[{"hooks":[{"type":"command","command":"cat > ` + marker + `"}]}]}}`
			value := own
			if form == "file" {
				value = filepath.Join(t.TempDir(), "mine.json")
				if err := os.WriteFile(value, []byte(own), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			harnessArgs := []string{"--", "--allowedTools", "Bash", "--settings", value}
			h := procHandle{startFlower(t, g.env, append([]string{"-C", g.ws, "--run-dir", g.runDir, guarTask}, harnessArgs...)...)}
			if code := g.wait(h); code != 0 {
				t.Fatalf("flower exited %d:\n%s", code, h.output())
			}
			b, _ := os.ReadFile(filepath.Join(g.ws, "work.txt"))
			if !strings.Contains(string(b), "mark=OWN-SETTING-42") {
				t.Errorf("work.txt %q: the person's env did not reach the tool", b)
			}
			h = procHandle{startFlower(t, g.env, append([]string{"continue", "-C", g.ws, "--run-dir", g.runDir, "/compact"}, harnessArgs...)...)}
			code := g.wait(h)
			st := g.step()
			hook, err := os.ReadFile(marker)
			if err != nil || !strings.Contains(string(hook), `"trigger":"manual"`) {
				t.Errorf("the person's PreCompact hook did not run (%v): %q", err, hook)
			}
			noCompaction(t, g, h.output())
			if code != 0 || len(st.Generations) != 2 || st.Generations[0].Handoff == nil || st.Generations[0].Handoff.Reason != manifest.ReasonCompactBlocked {
				t.Fatalf("exit %d, %d generations, handoff %+v: want the /compact blocked and a handoff", code, len(st.Generations), st.Generations[0].Handoff)
			}
			if ac := st.Generations[0].AutoCompactEnabled; ac == nil || *ac {
				t.Errorf("auto-compact %v with the person's DISABLE_AUTO_COMPACT=0: flower's value must win", ac)
			}
		})
	}
}
