package interactive

import (
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync/atomic"

	"github.com/flowerhq/flower/atomicfile"
	"github.com/flowerhq/flower/front"
	"github.com/flowerhq/flower/safefile"
	"github.com/flowerhq/flower/workbench"
)

// A quiet screen (DESIGN.md «Quiet screen»): flower's long prompts (the
// handoff request, a successor's first prompt) are not typed into the
// person's screen. Each is written to a file of the run's, and one short line that
// names it with the harness's own file mention (@"path") is typed instead.
// The harness reads a mentioned file into the turn's request itself, whole,
// as it reads one the person mentions: the model gets the prompt exactly,
// and the screen shows one line and "Read …". That is no tool call of the
// model's, so a writing turn stays text only.

const (
	// quietShort: a one-line prompt up to this many bytes is typed as it
	// is; there is nothing to quiet.
	quietShort = 240
	// quietMaxBytes and quietMaxLines bound a prompt sent through a file.
	// Harness 2.1.328 attached a mentioned file of 98 KB (1,032 lines)
	// whole, and silently left out one of 123 KB and one of 165 KB (1,600
	// lines of Chinese): no attachment, no word. A longer prompt is typed,
	// as before, rather than risk the model getting only the short line.
	quietMaxBytes = 64 << 10
	quietMaxLines = 1500
)

// promptFiles numbers a front's prompt files, which go in <run dir>/prompts
// and stay there with the run.
type promptFiles struct{ n atomic.Int64 }

// quiet returns what to give the harness for prompt, one of flower's own
// (ours) of kind k in generation gen of step, run in runDir: the short line
// that mentions a file holding prompt, or prompt itself when it is short
// or the person's own words, too long for an attachment, or its file
// cannot be written (said in log).
func (q *promptFiles) quiet(runDir, step string, gen int, k front.TurnKind, prompt string, ours bool, log *slog.Logger) string {
	if !ours || runDir == "" || (len(prompt) <= quietShort && !strings.Contains(prompt, "\n")) {
		return prompt
	}
	if len(prompt) > quietMaxBytes || strings.Count(prompt, "\n") >= quietMaxLines {
		return prompt
	}
	name := fmt.Sprintf("%s-%d-%s-%d.md", workbench.SafeStepName(step), gen, k, q.n.Add(1))
	path, err := writePrompt(runDir, name, prompt)
	if err != nil {
		if log != nil {
			log.Warn("write the prompt file; typing the prompt whole", "err", err)
		}
		return prompt
	}
	return quietLine(k, path)
}

// writePrompt writes prompt to <runDir>/prompts/name, replacing whatever
// is there (a planted link included) and never writing through it.
func writePrompt(runDir, name, prompt string) (string, error) {
	dir := filepath.Join(runDir, "prompts")
	path := filepath.Join(dir, name)
	if strings.ContainsAny(path, "\"\n\r") {
		return "", fmt.Errorf("a mention cannot quote the path %q", path)
	}
	if err := safefile.MkdirAll(runDir, dir, 0o700); err != nil {
		return "", err
	}
	return path, atomicfile.WriteFile(path, []byte(prompt), 0o600)
}

// quietLine is the line typed for a prompt kept at path. The mention is
// never last: with the cursor right after a mention the harness offers to
// complete it, and the Enter that submits the line picks the offer instead
// (2.1.328).
func quietLine(k front.TurnKind, path string) string {
	mention := `@"` + path + `"`
	switch k {
	case front.TurnWriting:
		return "flower: your context window is nearly full. Write your handoff document now, exactly as the request in " + mention + " says, and call no tool."
	case front.TurnFirst:
		return "flower: you are taking over this task from an earlier session of yourself. Your handoff and the task are in " + mention + "; start from them."
	}
	return "flower: flower's prompt for this turn is in " + mention + "."
}
