// Package levers owns the harness settings that hold its compaction off
// while flower hands off (DESIGN.md «Compaction levers»): one --settings
// value with env.DISABLE_AUTO_COMPACT=1, autoCompactEnabled:false,
// idleCompaction:false and a PreCompact hook that blocks, merged with the
// --settings the person gave the harness themselves.
package levers

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/flowerhq/flower/jsonenc"
)

// Reason is what the blocking PreCompact hook tells the harness; the
// harness shows it where the compaction would have run.
const Reason = "flower holds compaction off while it hands off: a fresh session will start from a handoff written by this one instead of a summary"

// MaxSettingsFile bounds the size of a --settings file flower reads.
const MaxSettingsFile = 1 << 20

// flag is the harness's flag; it takes a file path or a JSON string.
const flag = "--settings"

// Hook is the shell command of the PreCompact hook. A command that
// cannot run at all (exit status other than 0 and 2, which the harness
// takes as "go on") is turned into a block by "|| exit 2".
func Hook(argv ...string) string {
	return Quote(argv...) + " || exit 2"
}

// Quote is argv as one shell command line, each word quoted.
func Quote(argv ...string) string {
	quoted := make([]string, len(argv))
	for i, a := range argv {
		quoted[i] = shellQuote(a)
	}
	return strings.Join(quoted, " ")
}

// BlockOnly is the hook of a run that has no flower executable to record
// the attempt with (a library caller): it blocks, nothing more.
var BlockOnly = "printf '%s\\n' " + shellQuote(BlockDecision()) + "; exit 0"

// BlockDecision is the hook's answer that blocks a compaction.
func BlockDecision() string {
	b, _ := json.Marshal(map[string]string{"decision": "block", "reason": Reason})
	return string(b)
}

// StopDecision is the answer that stops the Codex CLI's compaction: the one
// it obeys is {"continue":false}, which also ends the turn, and every later
// turn of its thread past the threshold (DESIGN.md «Codex facts»).
func StopDecision() string { return `{"continue":false}` }

// Settings are flower's own settings for a harness whose hook command is
// hook.
func Settings(hook string) map[string]any {
	return map[string]any{
		// The env block outranks a project's or the user's: compaction
		// stays off, sleep compaction (a /compact queued while the
		// session idles) is not armed, and the harness does not update
		// itself, whatever their env blocks say.
		"env":                map[string]any{"DISABLE_AUTO_COMPACT": "1", "CLAUDE_CODE_SLEEP_COMPACT": "0", "DISABLE_AUTOUPDATER": "1"},
		"autoCompactEnabled": false,
		"idleCompaction":     false,
		"hooks": map[string]any{"PreCompact": []any{
			map[string]any{"hooks": []any{map[string]any{"type": "command", "command": hook}}},
		}},
	}
}

// Own is the --settings a person gave the harness, read once.
type Own struct {
	// Given: the arguments had a --settings flag.
	Given bool
	// Source is what the flag said: a path, or "inline JSON".
	Source   string
	settings map[string]any
	// Pin are variables flower's settings hold at the value they had when
	// the run started (Endpoint's), in every mode: a settings file
	// written mid-run does not change them.
	Pin map[string]string
}

// ErrSettings is wrapped by every error about the person's --settings.
var ErrSettings = errors.New("harness --settings")

// Read finds the person's --settings in args and reads it: the last one
// given, since the harness reads only that one. A value that parses as a
// JSON object is the settings themselves; anything else is a file path,
// relative to dir (the harness's working directory), as the harness reads
// it. The file is read at most MaxSettingsFile bytes, and must hold a JSON
// object.
func Read(args []string, dir string) (Own, error) {
	v, ok := last(args)
	if !ok {
		return Own{}, nil
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(v), &m); err == nil && m != nil {
		return Own{Given: true, Source: "inline JSON", settings: m}, nil
	}
	if strings.HasPrefix(strings.TrimSpace(v), "{") || strings.HasPrefix(strings.TrimSpace(v), "[") {
		if json.Valid([]byte(v)) {
			return Own{}, fmt.Errorf("%w: the inline JSON must be an object", ErrSettings)
		}
	}
	path := v
	if !filepath.IsAbs(path) {
		path = filepath.Join(dir, path)
	}
	// The person's file, read as they named it (a pipe of theirs, as
	// --settings <(…) gives, included); what is said of it never shows the
	// path, which is a --settings value like any other (DESIGN.md «Secrets
	// on screen and in logs»).
	f, err := os.Open(path)
	if err != nil {
		return Own{}, settingsError(v, path, err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, MaxSettingsFile+1))
	if err != nil {
		return Own{}, settingsError(v, path, err)
	}
	if len(b) > MaxSettingsFile {
		return Own{}, settingsError(v, path, fmt.Errorf("larger than %d bytes", MaxSettingsFile))
	}
	if err := json.Unmarshal(b, &m); err != nil || m == nil {
		if err == nil {
			err = errors.New("not a JSON object")
		}
		return Own{}, settingsError(v, path, err)
	}
	return Own{Given: true, Source: path, settings: m}, nil
}

// settingsError says what is wrong with the --settings file given as v
// (read at path) with the value masked as a log masks it, its size in its
// place, and the path taken out of the cause.
func settingsError(v, path string, err error) error {
	cause := err.Error()
	if pe := (*fs.PathError)(nil); errors.As(err, &pe) {
		cause = pe.Op + ": " + pe.Err.Error()
	}
	cause = strings.ReplaceAll(strings.ReplaceAll(cause, path, "the file"), v, "the file")
	return fmt.Errorf("%w <%d bytes>: %s (the value is hidden, as it may carry credentials)", ErrSettings, len(v), cause)
}

// Args returns args with every --settings flag taken out and one
// --settings=<JSON> put at the end: the person's settings merged with
// flower's (Merge). The flag goes as one "--settings=…" word, so no
// variadic flag before it (--allowedTools a b) can take it for a value.
func Args(args []string, own Own, hook string) []string {
	return withSettings(args, Merge(Merge(own.settings, Settings(hook)), pinned(own.Pin)))
}

// Pinned is Args for a run whose compaction is not held off: the person's
// settings with only own.Pin laid over them; args as they are when there
// is nothing to pin.
func Pinned(args []string, own Own) []string {
	if len(own.Pin) == 0 {
		return args
	}
	return withSettings(args, Merge(own.settings, pinned(own.Pin)))
}

func pinned(pin map[string]string) map[string]any {
	env := map[string]any{}
	for k, v := range pin {
		env[k] = v
	}
	return map[string]any{"env": env}
}

// withSettings is args with every --settings taken out and settings put
// last as one --settings= word.
func withSettings(args []string, settings map[string]any) []string {
	b, _ := jsonenc.Marshal(settings) // encoding/json's bytes, without its reflection
	return append(without(args), flag+"="+string(b))
}

// Merge lays flower's settings over the person's: objects are merged key
// by key, lists are appended to (the person's PreCompact hooks run as
// before, flower's after them), and a plain value of flower's replaces the
// person's (DISABLE_AUTO_COMPACT, autoCompactEnabled, idleCompaction).
// Neither map is changed.
func Merge(own, flower map[string]any) map[string]any {
	out := maps.Clone(own)
	if out == nil {
		out = map[string]any{}
	}
	for _, k := range slices.Sorted(maps.Keys(flower)) {
		fv := flower[k]
		switch f := fv.(type) {
		case map[string]any:
			if o, ok := out[k].(map[string]any); ok {
				out[k] = Merge(o, f)
				continue
			}
		case []any:
			if o, ok := out[k].([]any); ok {
				out[k] = append(slices.Clone(o), f...)
				continue
			}
		}
		out[k] = fv
	}
	return out
}

// last returns the value of the last --settings flag in args.
func last(args []string) (string, bool) {
	val, found := "", false
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == flag && i+1 < len(args):
			val, found = args[i+1], true
			i++
		case strings.HasPrefix(a, flag+"="):
			val, found = a[len(flag)+1:], true
		}
	}
	return val, found
}

// without returns args with every --settings flag (and its value) removed.
func without(args []string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == flag:
			i++ // and its value
		case strings.HasPrefix(a, flag+"="):
		default:
			out = append(out, a)
		}
	}
	return out
}

func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
