package integration_test

// Continuation (継続, DESIGN.md «Continuation») on the real harness. A step is interrupted in
// its second generation; Continue resumes the successor's session (never
// the retired one) and keeps handing off — or, when the harness no longer
// knows the session, starts a fresh generation from the handoff file.

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flowerhq/flower/handoffwriter"
	flowerharness "github.com/flowerhq/flower/harness"
	"github.com/flowerhq/flower/manifest"
	"github.com/flowerhq/flower/scriptedapi"
	"github.com/flowerhq/flower/supervisor"
)

func TestContinueOnRealHarness(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		refused bool // the continuing harness has another HOME: the session is unknown to it
	}{
		{"resumes the successor", false},
		{"refused, starts from the handoff file", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var (
				mu        sync.Mutex
				writings  int
				gen1      int
				continued bool
			)
			srv := startServer(t, func(r *scriptedapi.Request) scriptedapi.Reply {
				if r.Kind != scriptedapi.KindMain {
					return scriptedapi.Harmless(r)
				}
				mu.Lock()
				defer mu.Unlock()
				switch {
				case strings.Contains(r.LastUserText, handoffwriter.PromptTag):
					writings++
					return goodHandoff(writings - 1)
				case strings.Contains(r.AllText, "DOING-MARK-2"):
					return done(20_000) // generation 3, after the resumed successor handed off
				case strings.Contains(r.AllText, supervisor.ContinueMessage):
					// The resumed successor crosses the threshold in the
					// middle of its work (a turn that ended on its own at
					// the cut would end the step, DESIGN.md «The cut»).
					return bash(155_000, "echo resumed RESUMED-TURN")
				case strings.Contains(r.AllText, "DOING-MARK-1") && continued:
					return done(20_000) // a fresh generation 3 from the file
				case strings.Contains(r.AllText, "DOING-MARK-1"):
					// Generation 2 is working when flower is stopped.
					return scriptedapi.Reply{Text: "slow", Usage: usage(30_000), Delay: time.Minute}
				}
				gen1++
				if gen1 == 1 {
					return bash(100_000, "echo one")
				}
				return bash(155_000, "echo two")
			})
			ws := t.TempDir()
			runDir := filepath.Join(ws, ".flower", "runs", "cont")
			env := harnessEnv(t, srv)
			opts := func(env []string) supervisor.Options {
				return supervisor.Options{Front: flowerharness.Headless{}, Workspace: ws, RunDir: runDir, HarnessPath: harnessPath(t), Env: env,
					HarnessArgs: []string{"--allowedTools", "Bash"}, Workbench: true, Handoff: window200k(0), Grace: 3 * time.Second}
			}
			rt, err := supervisor.New(opts(env))
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			go func() {
				for ctx.Err() == nil {
					for _, r := range srv.Requests() {
						if r.Kind == scriptedapi.KindMain && strings.Contains(r.AllText, "DOING-MARK-1") {
							cancel()
						}
					}
					time.Sleep(20 * time.Millisecond)
				}
			}()
			st, err := rt.RunStep(ctx, "干活", "TASK-MARK: keep working")
			cancel()
			if !errors.Is(err, context.Canceled) || st.Status != manifest.StatusInterrupted || len(st.Generations) != 2 {
				t.Fatalf("first run: %v, status %s, %d generations; errors %q", err, st.Status, len(st.Generations), st.Errors)
			}
			s1, s2 := st.Retired[0], st.SessionID
			if s2 == "" || s2 == s1 {
				t.Fatalf("sessions %q / %q", s1, s2)
			}
			mu.Lock()
			continued = true
			mu.Unlock()

			if tc.refused {
				env = harnessEnv(t, srv) // a HOME of its own: no sessions
			}
			seq := len(srv.Requests())
			rt, err = supervisor.New(opts(env))
			if err != nil {
				t.Fatal(err)
			}
			cctx, ccancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer ccancel()
			st, err = rt.Continue(cctx, "干活", "")
			if err != nil {
				t.Fatalf("Continue: %v (errors %q)", err, st.Errors)
			}
			disk := loadStep(t, runDir, "干活")
			if disk.Status != manifest.StatusSucceeded || len(disk.Generations) != 3 || disk.Attempts != 0 {
				t.Fatalf("after continue: status %s, %d generations, attempts %d; errors %q", disk.Status, len(disk.Generations), disk.Attempts, disk.Errors)
			}
			for _, r := range srv.Requests()[seq:] {
				if strings.Contains(r.LastUserText, summaryRequest) {
					t.Errorf("request %d, after the continue, is a compaction request: %q", r.Seq, clip(r.LastUserText, 120))
				}
			}
			first := firstMainAfter(srv, seq)
			if !tc.refused {
				// The resumed request is generation 2's session: its
				// handoff prompt and the continue message, none of
				// generation 1's history.
				for _, want := range []string{"DOING-MARK-1", "taking over", supervisor.ContinueMessage} {
					if !strings.Contains(first.AllText, want) {
						t.Errorf("the resumed request lacks %q", want)
					}
				}
				if strings.Contains(first.AllText, "running echo one") {
					t.Errorf("continue resumed the retired generation 1")
				}
				if disk.Generations[1].SessionID != s2 || disk.Generations[1].Handoff == nil || disk.Generations[1].Handoff.Context < 150_000 {
					t.Errorf("generation 2 (resumed) did not hand off at the threshold: %+v", disk.Generations[1].Handoff)
				}
				if len(disk.Retired) != 2 || disk.Retired[0] != s1 || disk.Retired[1] != s2 {
					t.Errorf("retired %q, want [%s %s]", disk.Retired, s1, s2)
				}
				return
			}
			// Refused: no request resumed s2; generation 3 started fresh
			// from the handoff file, and the manifest says why.
			if !strings.Contains(first.AllText, "DOING-MARK-1") || strings.Contains(first.AllText, "slow") || first.NumMessages > 2 {
				t.Errorf("generation 3 did not start fresh from the file (%d messages)", first.NumMessages)
			}
			if !hasErrorText(disk, "could not be resumed") || !hasErrorText(disk, "No conversation found") {
				t.Errorf("errors do not say the resume was refused: %q", disk.Errors)
			}
			if len(disk.Retired) != 2 || disk.Retired[1] != s2 || disk.SessionID == s2 {
				t.Errorf("retired %q session %s", disk.Retired, disk.SessionID)
			}
		})
	}
}
