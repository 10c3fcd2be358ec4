package interactive

import (
	"fmt"
	"strings"
	"unicode"

	"github.com/flowerhq/flower/harness"
	"github.com/flowerhq/flower/manifest"
)

// ContinueHint is flower's closing line of an interactive run, in place of
// the harness's goodbye (see GoodbyeFilter): the command that picks step st
// of the run in runDir up again, supervised, from its live session, and that
// session's id. The run dir and step are given explicitly so the command
// works from any folder; harnessArgs go after "--" because flower continue
// does not remember them. A step that succeeded is only continued with
// something to do, so its command holds a MESSAGE to replace. Every word is
// quoted for a POSIX shell where it needs to be. Values that may carry
// credentials are not printed (harness.LoggedArgs): the line says to give
// them again. It is "" when the step has no session to continue.
func ContinueHint(runDir string, st *manifest.StepResult, harnessArgs []string) string {
	if st == nil || st.SessionID == "" {
		return ""
	}
	cmd := []string{"flower", "continue", "--run-dir", shellWord(runDir), "--step", shellWord(st.Name)}
	head := fmt.Sprintf("flower: to continue this step (live session %s):", st.SessionID)
	if st.Status == manifest.StatusSucceeded {
		cmd = append(cmd, ContinueHintMessage)
		head = fmt.Sprintf("flower: to continue this step (live session %s), replace %s with what to do next:", st.SessionID, ContinueHintMessage)
	}
	masked := false
	if len(harnessArgs) > 0 {
		cmd = append(cmd, "--")
		for i, a := range harness.LoggedArgs(harnessArgs) {
			masked = masked || a != harnessArgs[i]
			cmd = append(cmd, shellWord(a))
		}
	}
	hint := head + "\n  " + strings.Join(cmd, " ") + "\n"
	if masked {
		hint += "  (values that may hold credentials are not shown: give them as before)\n"
	}
	return hint
}

// ContinueHintMessage stands for the message in ContinueHint's command.
const ContinueHintMessage = "MESSAGE"

// shellWord quotes s for a POSIX shell unless it is made only of characters
// no shell treats specially.
func shellWord(s string) string {
	safe := s != ""
	for _, r := range s {
		if !(r < unicode.MaxASCII && strings.ContainsRune("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-+=/.,:@%", r)) &&
			!(r > unicode.MaxASCII && (unicode.IsLetter(r) || unicode.IsDigit(r))) {
			safe = false
			break
		}
	}
	if safe {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
