// Package envinject owns the environment a harness child is started with:
// whether DISABLE_AUTO_COMPACT is injected for the compact mode in effect
// (generational handoff forces the harness's auto-compact off), how injected
// variables win over inherited ones, and how the effective auth configuration
// is shown to a person with its secrets masked.
package envinject

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/flowerhq/flower/policy"
)

// DisableAutoCompact is the variable that switches the harness's auto-compact
// off when set to "1".
const DisableAutoCompact = "DISABLE_AUTO_COMPACT"

// Held are the variables every harness child gets, whatever the compact
// mode: a harness under flower never updates itself (DESIGN.md «Held
// harness»), so the release a run starts is the one it was started on.
var Held = map[string]string{"DISABLE_AUTOUPDATER": "1"}

// OtherCompaction are the variables that switch on a compaction of the
// harness's own beside auto-compact (sleep compaction, which queues a
// /compact while the session idles, and its timer; cold and idle
// compaction's tuning). With the harness's compaction held off they are
// taken out of the inherited environment.
var OtherCompaction = []string{"CLAUDE_CODE_SLEEP_COMPACT", "CLAUDE_CODE_SLEEP_COMPACT_AFTER_MS",
	"CLAUDE_CODE_COLD_COMPACT", "CLAUDE_CODE_IDLE_COMPACT_MIN_TOKENS"}

// Plan is the environment for one harness child and what flower changed in it.
type Plan struct {
	// Env is the child's environment, KEY=VALUE, each key once.
	Env []string
	// Injected holds the variables flower set on top of the inherited ones.
	Injected map[string]string
	// Notice, when not empty, is a line a person should see before the run
	// because the compact setting works differently from what handoff implies.
	Notice string
}

// Child builds the environment of a harness child: base (the inherited
// environment, duplicates removed with the last entry winning), then extra,
// then Held, then the compact mode's say over DISABLE_AUTO_COMPACT. Later
// layers win, so injected variables beat inherited ones, and no key appears
// twice.
//
// The effective compact mode (see Effective) owns DISABLE_AUTO_COMPACT:
//   - no_summary: it is set to "1", whatever base or extra said, and the
//     switches of OtherCompaction are removed;
//   - auto: it is removed, since an inherited "1" would silently defeat the
//     explicit request; the Notice says auto-compact stays on;
//   - unset (handoff off, no spec): nothing is injected and the user's
//     own value, if any, is left alone, as plain `claude` would see it. An
//     inherited DISABLE_AUTO_COMPACT that is not empty or "0" then keeps
//     auto-compact off despite --no-handoff, so the Notice says so.
//
// Keys in extra that are empty or contain '=' cannot be expressed as an
// environment entry and are skipped.
func Child(base []string, spec policy.CompactMode, handoff bool, extra map[string]string) Plan {
	env := dedup(base)
	injected := map[string]string{}
	for _, k := range slices.Sorted(maps.Keys(extra)) {
		if !validKey(k) {
			continue
		}
		env = Set(env, k, extra[k])
		injected[k] = extra[k]
	}
	for _, k := range slices.Sorted(maps.Keys(Held)) {
		env = Set(env, k, Held[k])
		injected[k] = Held[k]
	}

	var notice string
	switch spec.Effective(handoff) {
	case policy.CompactNoSummary:
		env = Set(env, DisableAutoCompact, "1")
		injected[DisableAutoCompact] = "1"
		for _, k := range OtherCompaction {
			env = unset(env, k)
		}
	case policy.CompactAuto:
		env = unset(env, DisableAutoCompact)
		delete(injected, DisableAutoCompact)
		if handoff {
			notice = "auto-compact stays on because compact mode \"auto\" was asked for explicitly: " +
				"the harness may compact the context before flower hands off, " +
				"so a lost context has two possible causes"
		}
	case policy.CompactUnset:
		if v, ok := Lookup(env, DisableAutoCompact); ok && v != "" && v != "0" {
			notice = fmt.Sprintf("handoff is off, but %s=%s in the environment keeps the harness's auto-compact off too; "+
				"unset it to get compaction", DisableAutoCompact, v)
		}
	}
	return Plan{Env: env, Injected: injected, Notice: notice}
}

// Lookup returns the value of key in env, a KEY=VALUE list; the last entry
// for a key wins, as with os/exec.
func Lookup(env []string, key string) (string, bool) {
	for i := len(env) - 1; i >= 0; i-- {
		if k, v, ok := strings.Cut(env[i], "="); ok && k == key {
			return v, true
		}
	}
	return "", false
}

// Set returns a copy of env in which key appears exactly once, with value,
// at the place of its first occurrence (appended if it was absent). env is
// not modified.
func Set(env []string, key, value string) []string {
	out := make([]string, 0, len(env)+1)
	placed := false
	for _, kv := range env {
		if k, _, _ := strings.Cut(kv, "="); k == key {
			if !placed {
				out = append(out, key+"="+value)
				placed = true
			}
			continue
		}
		out = append(out, kv)
	}
	if !placed {
		out = append(out, key+"="+value)
	}
	return out
}

// unset returns a copy of env without key.
func unset(env []string, key string) []string {
	return slices.DeleteFunc(slices.Clone(env), func(kv string) bool {
		k, _, _ := strings.Cut(kv, "=")
		return k == key
	})
}

// dedup returns env with one entry per key: the last value, at the place of
// the key's first occurrence. Entries without '=' are dropped: a child would
// not see them as variables anyway.
func dedup(env []string) []string {
	out := make([]string, 0, len(env))
	at := map[string]int{}
	for _, kv := range env {
		k, _, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			continue
		}
		if i, seen := at[k]; seen {
			out[i] = kv
			continue
		}
		at[k] = len(out)
		out = append(out, kv)
	}
	return out
}

func validKey(k string) bool {
	return k != "" && !strings.ContainsAny(k, "=\x00")
}
