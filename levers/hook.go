package levers

import (
	"fmt"
	"io"
	"time"

	"github.com/tidwall/gjson"

	"github.com/flowerhq/flower/inbox"
)

// HookWait bounds how long the hook waits for the running flower to deal
// with its report, so that flower has decided before the harness goes on
// (DESIGN.md «Compaction levers»).
const HookWait = 2 * time.Second

// maxHookInput bounds what the hook reads of the harness's hook input.
const maxHookInput = 64 << 10

// RunHook is flower's PreCompact hook: it reads the harness's hook input
// from in, reports the attempt to the step's inbox at dir, waits up to
// HookWait for the running flower to take it, and writes the answer that
// blocks the compaction to out, whatever else happened.
func RunHook(in io.Reader, out io.Writer, dir string) error {
	return RunHookAnswering(in, out, dir, BlockDecision())
}

// RunHookAnswering is RunHook with the answer a harness takes as a block:
// BlockDecision for the Claude Code CLI, StopDecision for the Codex CLI.
func RunHookAnswering(in io.Reader, out io.Writer, dir, answer string) error {
	input, _ := io.ReadAll(io.LimitReader(in, maxHookInput))
	if dir != "" {
		trigger := gjson.GetBytes(input, "trigger").String()
		if trigger != "manual" && trigger != "auto" {
			trigger = "unknown"
		}
		r := inbox.Request{Kind: inbox.KindCompact, Trigger: trigger,
			Session: gjson.GetBytes(input, "session_id").String(), From: "PreCompact hook"}
		if name, err := inbox.Post(dir, r); err == nil {
			for deadline := time.Now().Add(HookWait); time.Now().Before(deadline) && !inbox.Taken(dir, name); {
				time.Sleep(10 * time.Millisecond)
			}
		}
	}
	_, err := fmt.Fprintln(out, answer)
	return err
}
