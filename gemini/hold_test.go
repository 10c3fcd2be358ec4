package gemini_test

import (
	"context"
	"errors"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/flowerhq/flower/front"
	"github.com/flowerhq/flower/gemini"
	"github.com/flowerhq/flower/integration/itest"
	"github.com/flowerhq/flower/scriptedgen"
)

// session launches the front's session on the real CLI against api, with
// the person's settings compressing at 0.2 of the window.
func session(t *testing.T, api *scriptedgen.Server, hold *front.Hold, prompt string) (front.Session, string) {
	t.Helper()
	return sessionWith(t, api, hold, prompt, "")
}

// sessionWith is session with general settings of the person's (JSON
// members, `"maxAttempts": 1`).
func sessionWith(t *testing.T, api *scriptedgen.Server, hold *front.Hold, prompt, general string) (front.Session, string) {
	t.Helper()
	bin := itest.GeminiPath(t)
	home, ws := t.TempDir(), t.TempDir()
	if err := scriptedgen.WriteHome(home); err != nil {
		t.Fatal(err)
	}
	settings := home + "/.gemini/settings.json"
	b, _ := os.ReadFile(settings)
	person := strings.Replace(string(b), `"model": {`, `"model": {"compressionThreshold": 0.2, `, 1)
	if general != "" {
		person = strings.Replace(person, `"general": {`, `"general": {`+general+`, `, 1)
	}
	if err := os.WriteFile(settings, []byte(person), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := gemini.Launcher{}.Launch(ctx, front.Spec{Step: "s", Generation: 1, Path: bin, Args: []string{"--skip-trust", "--approval-mode", "yolo"},
		Hold: hold, Prompt: prompt, Dir: ws, Env: append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + home}, api.Env()...), Grace: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	return s, home
}

// turn reads facts until the running turn ends, and returns them.
func turn(t *testing.T, s front.Session) []front.Fact {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out []front.Fact
	for {
		f, err := s.Next(ctx)
		if err != nil {
			t.Fatalf("after %d facts: %v", len(out), err)
		}
		out = append(out, f)
		if _, ok := f.(front.TurnEnded); ok {
			return out
		}
	}
}

// The CLI compresses at the start of a turn once the last prompt passed
// its threshold (the person's 0.2 of 1 048 576 here); with flower's hold
// it never does, and without it a compression shows as a Compacted fact.
func TestHoldKeepsCompressionOff(t *testing.T) {
	for _, held := range []bool{true, false} {
		t.Run(map[bool]string{true: "held", false: "not held"}[held], func(t *testing.T) {
			compressions := 0
			api, err := scriptedgen.Start(func(r *scriptedgen.Request) scriptedgen.Reply {
				switch {
				case r.Compression:
					compressions++
					return scriptedgen.Reply{Text: "<state_snapshot>SUMMARY</state_snapshot>", Usage: scriptedgen.Usage{PromptTokens: 300000, OutputTokens: 10}}
				case r.Side:
					return scriptedgen.SideReply
				}
				return scriptedgen.Reply{Text: "a big answer", Usage: scriptedgen.Usage{PromptTokens: 300000, OutputTokens: 10}}
			})
			if err != nil {
				t.Fatal(err)
			}
			defer api.Close()
			var hold *front.Hold
			if held {
				hold = &front.Hold{}
			}
			s, _ := session(t, api, hold, "first")
			if err := s.Begin(); err != nil {
				t.Fatal(err)
			}
			first := turn(t, s)
			if _, ok := first[0].(front.Init); !ok {
				t.Errorf("first fact %#v, want the Init", first[0])
			}
			r, ok := first[1].(front.Round)
			if !ok || r.Context != 300000 || r.Text != "a big answer" || !r.MainThread {
				t.Errorf("the round %#v, want the reply at 300000", first[1])
			}
			if e := first[len(first)-1].(front.TurnEnded); e.How != front.EndedOnOwn || e.Text != "a big answer" || e.Windows[scriptedgen.Model] != 1048576 {
				t.Errorf("end %+v", e)
			}
			if err := s.Send(front.Turn{Kind: front.TurnWork, Prompt: "second"}); err != nil {
				t.Fatal(err)
			}
			var compacted bool
			for _, f := range turn(t, s) {
				if _, ok := f.(front.Compacted); ok {
					compacted = true
				}
			}
			if held && (compressions > 0 || compacted) {
				t.Errorf("held: %d compression requests, compacted %v", compressions, compacted)
			}
			if !held && (compressions == 0 || !compacted) {
				t.Errorf("not held: %d compression requests, compacted %v; want the CLI's compression seen", compressions, compacted)
			}
			if err := s.EndAfterTurn(); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			for {
				if _, err := s.Next(ctx); errors.Is(err, io.EOF) {
					break
				} else if err != nil {
					t.Fatal(err)
				}
			}
			if x := s.Exit(); !strings.Contains(x.Why, "exited") {
				t.Errorf("exit %+v", x)
			}
		})
	}
}

// The model's commands run without the API key: flower's home turns the
// CLI's redaction on, even where the person's settings allow the key.
func TestKeyHiddenFromCommands(t *testing.T) {
	api, err := scriptedgen.Start(scriptedgen.Sequence(
		scriptedgen.Reply{Text: "looking", Calls: []scriptedgen.Call{scriptedgen.Shell("printenv GEMINI_API_KEY; echo end-of-env")}, Usage: scriptedgen.Usage{PromptTokens: 1000}},
		scriptedgen.Reply{Text: "done", Usage: scriptedgen.Usage{PromptTokens: 1100}}))
	if err != nil {
		t.Fatal(err)
	}
	defer api.Close()
	s, _ := session(t, api, &front.Hold{}, "look")
	if err := s.Begin(); err != nil {
		t.Fatal(err)
	}
	turn(t, s)
	main := api.Main()
	if len(main) != 2 || len(main[1].Responses) != 1 {
		t.Fatalf("requests %+v", main)
	}
	out := scriptedgen.ShellOutput(main[1].Responses[0].Response)
	if !strings.Contains(out, "end-of-env") || strings.Contains(out, scriptedgen.APIKey) {
		t.Errorf("the command printed %q: want it run, without the key", out)
	}
}

// An API error ends the prompt with the API's status once the CLI has
// given up (the person's maxAttempts 1 here: it retries none): a 429 is a
// limit, a 500 an error with its status, an overflow an overflow.
func TestAPIErrorsEndTheTurn(t *testing.T) {
	for _, tc := range []struct {
		name   string
		reply  scriptedgen.Reply
		how    front.Ending
		status int
	}{
		{"rate limit", scriptedgen.RateLimited(0), front.EndedLimited, 0},
		{"server error", scriptedgen.Reply{Status: 500, ErrorStatus: "INTERNAL", ErrorMessage: "boom"}, front.EndedError, 500},
		{"overflow", scriptedgen.Overflow(), front.EndedOverflow, 0},
		{"refused key", scriptedgen.Unauthorized(), front.EndedError, 400},
	} {
		t.Run(tc.name, func(t *testing.T) {
			api, err := scriptedgen.Start(scriptedgen.Sequence(tc.reply))
			if err != nil {
				t.Fatal(err)
			}
			defer api.Close()
			s, _ := sessionWith(t, api, &front.Hold{}, "hi", `"maxAttempts": 1`)
			if err := s.Begin(); err != nil {
				t.Fatal(err)
			}
			facts := turn(t, s)
			e := facts[len(facts)-1].(front.TurnEnded)
			if e.How != tc.how || e.APIErrorStatus != tc.status {
				t.Errorf("end %+v, want %v with status %d", e, tc.how, tc.status)
			}
			if tc.how == front.EndedLimited && (e.Limit == nil || e.Limit.Kind == "") {
				t.Errorf("a limit without its kind: %+v", e.Limit)
			}
			if strings.HasPrefix(e.Text, "{") {
				t.Errorf("the end's text is the API's body, not its message: %q", e.Text)
			}
			if tc.name == "refused key" && !e.NoCredentials {
				t.Errorf("a refused key is not NoCredentials: %+v", e)
			}
			t.Logf("%s: %d requests, end %q", tc.name, len(api.Main()), e.Text)
		})
	}
}
