package levers

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
)

// ScrubKey is the harness's switch that starts the model's tools (its Bash
// tool, hooks, MCP servers) without the API keys and tokens in their
// environment. The harness does it under bubblewrap, whose network proxy
// needs socat; without them it refuses to run a tool at all.
const ScrubKey = "CLAUDE_CODE_SUBPROCESS_ENV_SCRUB"

// scrubNeeds are the programs the harness's scrub needs on PATH.
var scrubNeeds = []string{"bwrap", "socat"}

// Scrub is env with the harness's scrub switched on where the harness can
// do it (DESIGN.md «Held harness»): a repository script the model runs
// then cannot read the key. A value of the person's own is left as it is.
// on says whether the tools are kept from the key; why, when they are
// not, says why in a few words.
func Scrub(env []string) (out []string, on bool, why string) {
	if v, ok := lookup(env, ScrubKey); ok {
		v = strings.ToLower(strings.TrimSpace(v))
		if v == "1" || v == "true" || v == "yes" || v == "on" {
			return env, true, ""
		}
		return env, false, ScrubKey + "=" + v + " is set in the environment"
	}
	path, _ := lookup(env, "PATH")
	var missing []string
	for _, p := range scrubNeeds {
		if !onPath(path, p) {
			missing = append(missing, p)
		}
	}
	if len(missing) > 0 {
		return env, false, strings.Join(missing, " and ") + " not found on PATH (the harness's scrub runs the tools under bubblewrap)"
	}
	if err := bwrapWorks(path); err != "" {
		// With the scrub on, every tool would fail: worse than a key
		// the tools can read.
		return env, false, err
	}
	return append(append([]string(nil), env...), ScrubKey+"=1"), true, ""
}

func onPath(path, name string) bool {
	for _, dir := range filepath.SplitList(path) {
		if dir == "" {
			continue
		}
		if isExec(filepath.Join(dir, name)) {
			return true
		}
	}
	return false
}

// bwrapWorks starts PATH's bubblewrap once, as the harness's scrub does
// (its own PID and network namespaces over a read-only root): where the
// machine allows no namespaces it fails, and so would every tool. "" when
// it works, else why not. The answer is kept per binary for the process.
func bwrapWorks(path string) string {
	bin := ""
	for _, dir := range filepath.SplitList(path) {
		if p := filepath.Join(dir, "bwrap"); dir != "" && isExec(p) {
			bin = p
			break
		}
	}
	bwrapMu.Lock()
	defer bwrapMu.Unlock()
	if why, ok := bwrapSeen[bin]; ok {
		return why
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	why := ""
	out, err := exec.CommandContext(ctx, bin, "--ro-bind", "/", "/", "--dev", "/dev", "--unshare-pid", "--unshare-net", "true").CombinedOutput()
	if err != nil {
		msg := strings.TrimSpace(string(out))
		if msg == "" {
			msg = err.Error()
		}
		if len(msg) > 120 {
			msg = msg[:120] + "…"
		}
		why = "bubblewrap cannot start here (" + msg + ")"
	}
	bwrapSeen[bin] = why
	return why
}

var (
	bwrapMu   sync.Mutex
	bwrapSeen = map[string]string{}
)

func isExec(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0
}

// modeFlags set a permission mode of the person's, which the harness's
// scrub forces back to default ("Permission mode forced to default —
// CLAUDE_CODE_SUBPROCESS_ENV_SCRUB is set", measured on 2.1.328).
var modeFlags = []string{"--permission-mode", "--dangerously-skip-permissions"}

// ScrubFor is Scrub for a harness started with args: a permission mode
// the person chose there is theirs, so the scrub is not switched on over
// it (a value of ScrubKey of their own still decides).
func ScrubFor(env, args []string) (out []string, on bool, why string) {
	if _, ok := lookup(env, ScrubKey); !ok {
		for _, a := range args {
			if a == "--" {
				break
			}
			flag, _, _ := strings.Cut(a, "=")
			if slices.Contains(modeFlags, flag) {
				return env, false, flag + " sets a permission mode, which the harness's scrub would force back to default"
			}
		}
	}
	return Scrub(env)
}
