package interactive

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/flowerhq/flower/manifest"
)

func TestContinueHint(t *testing.T) {
	st := &manifest.StepResult{Name: "main", Status: manifest.StatusInterrupted, SessionID: "4f9c1f7e-0000-4000-8000-000000000001"}
	got := ContinueHint("/w/.flower/runs/20261130-112853", st, []string{"--permission-mode", "dontAsk", "--allowedTools", "Bash(git *)"})
	want := "flower: to continue this step (live session 4f9c1f7e-0000-4000-8000-000000000001):\n" +
		"  flower continue --run-dir /w/.flower/runs/20261130-112853 --step main -- --permission-mode dontAsk --allowedTools 'Bash(git *)'\n"
	if got != want {
		t.Errorf("ContinueHint =\n%q\nwant\n%q", got, want)
	}
	// flower continue refuses a succeeded step without a message.
	st = &manifest.StepResult{Name: "干活", Status: manifest.StatusSucceeded, SessionID: "sid"}
	want = "flower: to continue this step (live session sid), replace MESSAGE with what to do next:\n" +
		"  flower continue --run-dir '/w/my runs/r' --step 干活 MESSAGE\n"
	if got := ContinueHint("/w/my runs/r", st, nil); got != want {
		t.Errorf("ContinueHint =\n%q\nwant\n%q", got, want)
	}
	if got := ContinueHint("/w/runs/r", &manifest.StepResult{Name: "main", Status: manifest.StatusFailed}, nil); got != "" {
		t.Errorf("no session: %q, want nothing", got)
	}
	if got := ContinueHint("/w/runs/r", nil, nil); got != "" {
		t.Errorf("no step: %q, want nothing", got)
	}
	// Credentials in the harness arguments are not printed.
	st = &manifest.StepResult{Name: "main", Status: manifest.StatusInterrupted, SessionID: "sid"}
	got = ContinueHint("/w/runs/r", st, []string{"--mcp-config", `{"env":{"TOKEN":"SECRETSECRET1"}}`, "/x/SECRETSECRET2.json", "--allowedTools", "Bash"})
	want = "flower: to continue this step (live session sid):\n" +
		"  flower continue --run-dir /w/runs/r --step main -- --mcp-config '<33 bytes>' '<21 bytes>' --allowedTools Bash\n" +
		"  (values that may hold credentials are not shown: give them as before)\n"
	if got != want {
		t.Errorf("ContinueHint =\n%q\nwant\n%q", got, want)
	}
}

// What a shell makes of each quoted word is the word itself.
func TestShellWordRoundTrips(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Fatalf("no sh to check quoting with: %v", err)
	}
	words := []string{"plain", "/a/b-c_d.e", "two words", "it's", "$HOME", "`x`", "a;b", "*", "", "交接 步骤", "Bash(git *)", "back\\slash", "new\nline", "!bang"}
	var quoted []string
	for _, w := range words {
		quoted = append(quoted, shellWord(w))
	}
	script := "set -- " + strings.Join(quoted, " ") + `; for w in "$@"; do printf '%s\0' "$w"; done`
	out, err := exec.Command(sh, "-c", script).Output()
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
	if len(got) != len(words) {
		t.Fatalf("the shell read %d words from %q, want %d", len(got), quoted, len(words))
	}
	for i := range words {
		if got[i] != words[i] {
			t.Errorf("%q quoted as %s reads back as %q", words[i], quoted[i], got[i])
		}
	}
}
