package levers

import (
	"encoding/json"
	"errors"
	"io"
	"maps"
	"os"
	"path/filepath"
	"syscall"
)

// StatusRefresh is how often, in seconds, the harness runs flower's status
// line command on its own (its statusLine.refreshInterval), besides after
// every change of the conversation: a handoff's announcement and a figure
// flower read after the last message still show within this time.
const StatusRefresh = 1

// StatusLine returns args with one --settings that holds flower's status
// line (DESIGN.md «Status line in the harness's screen»): the person's
// settings (their --settings, read as Read reads it) with statusLine set
// to command(theirs), where theirs is the status line command the harness
// would have run without flower ("" for none), so that flower's command can
// run it and append its own segment. A --settings flag overrides the
// statusLine of every settings file, so theirs is looked up as the harness
// would: the --settings given, then dir's .claude/settings.local.json and
// .claude/settings.json, then configDir's settings.json. On an error args
// come back unchanged.
func StatusLine(args []string, dir, configDir string, command func(theirs string) string) ([]string, error) {
	own, err := Read(args, dir)
	if err != nil {
		return args, err
	}
	theirs, padding := commandOf(own.settings["statusLine"])
	if theirs == "" {
		theirs, padding = fileStatusLine(
			filepath.Join(dir, ".claude", "settings.local.json"),
			filepath.Join(dir, ".claude", "settings.json"),
			filepath.Join(configDir, "settings.json"))
	}
	line := map[string]any{"type": "command", "command": command(theirs), "refreshInterval": StatusRefresh}
	if padding != nil {
		line["padding"] = padding
	}
	set := maps.Clone(own.settings)
	if set == nil {
		set = map[string]any{}
	}
	set["statusLine"] = line
	b, _ := json.Marshal(set)
	return append(without(args), flag+"="+string(b)), nil
}

// commandOf is a statusLine setting's command and padding, if it is one
// of type command.
func commandOf(v any) (string, any) {
	m, ok := v.(map[string]any)
	if !ok {
		return "", nil
	}
	cmd, _ := m["command"].(string)
	if t, _ := m["type"].(string); t != "command" || cmd == "" {
		return "", nil
	}
	return cmd, m["padding"]
}

// fileStatusLine is the status line command of the first of paths (in the
// harness's order of precedence) that sets one; files that are missing,
// not regular, too large or not JSON are passed over, as nothing of
// flower's depends on them.
func fileStatusLine(paths ...string) (string, any) {
	for _, p := range paths {
		b, err := readRegular(p)
		var m map[string]any
		if err != nil || len(b) > MaxSettingsFile || json.Unmarshal(b, &m) != nil {
			continue
		}
		if cmd, padding := commandOf(m["statusLine"]); cmd != "" {
			return cmd, padding
		}
	}
	return "", nil
}

// readRegular reads a settings file the harness would read: a link is
// followed, as the harness follows it (dotfiles are often links), but a
// FIFO or device is never read nor waited on.
func readRegular(path string) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return nil, errors.New("not a regular file")
	}
	return io.ReadAll(io.LimitReader(f, MaxSettingsFile+1))
}
