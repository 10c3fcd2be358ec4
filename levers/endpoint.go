package levers

import (
	"encoding/json"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/flowerhq/flower/diskfile"
)

// EndpointKey is the variable that says where the harness sends its
// requests, and with them the API key.
const EndpointKey = "ANTHROPIC_BASE_URL"

// DefaultEndpoint is where the harness sends its requests when nothing
// says otherwise.
const DefaultEndpoint = "https://api.anthropic.com"

// Endpoint is the endpoint a harness started with args and env in ws
// would send its requests to, as the harness itself layers its sources
// (the environment, then ~/.claude.json, the user's settings, the
// project's and the local settings when the arguments load them, then
// the person's --settings; the last that sets it wins), or DefaultEndpoint.
//
// flower's own settings hold it there for the whole run (DESIGN.md «Held
// harness»): the harness reloads a settings file that a repository script
// writes mid-run at once, and an env block in it would otherwise aim the
// next request, key and all, at another endpoint. flower's --settings
// outranks every file, so a write changes nothing.
func Endpoint(args, env []string, ws string, own Own) string {
	v := DefaultEndpoint
	if e, ok := lookup(env, EndpointKey); ok && e != "" {
		v = e
	}
	config, ok := lookup(env, "CLAUDE_CONFIG_DIR")
	if !ok || config == "" {
		home, _ := lookup(env, "HOME")
		if home == "" {
			home, _ = os.UserHomeDir()
		}
		config = filepath.Join(home, ".claude")
		if e := envOf(filepath.Join(home, ".claude.json")); e != "" {
			v = e
		}
	} else if e := envOf(filepath.Join(config, ".claude.json")); e != "" {
		v = e
	}
	files := []string{filepath.Join(config, "settings.json")}
	if sources, given := settingSources(args); !given || strings.Contains(sources, "project") {
		files = append(files, filepath.Join(ws, ".claude", "settings.json"))
	}
	if sources, given := settingSources(args); !given || strings.Contains(sources, "local") {
		files = append(files, filepath.Join(ws, ".claude", "settings.local.json"))
	}
	for _, f := range files {
		if e := envOf(f); e != "" {
			v = e
		}
	}
	if e, ok := own.settings["env"].(map[string]any); ok {
		if s, ok := e[EndpointKey].(string); ok && s != "" {
			v = s
		}
	}
	return v
}

// Hold are the variables flower's settings hold for a harness started with
// args and env in ws: the Endpoint. An endpoint with a user and password
// in it is not held: flower's settings go on the harness's command line,
// which every user of the machine can read.
func Hold(args, env []string, ws string, own Own) map[string]string {
	e := Endpoint(args, env, ws, own)
	if u, err := url.Parse(e); err != nil || u.User != nil {
		return nil
	}
	return map[string]string{EndpointKey: e}
}

// envOf is the endpoint the env block of the settings file at path sets,
// "" for none. The file may be anyone's (a workspace's): it is opened
// without blocking on a FIFO, read only as a regular file, under
// MaxSettingsFile; anything it cannot read sets nothing.
func envOf(path string) string {
	f, err := diskfile.Open(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return ""
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return ""
	}
	b, err := io.ReadAll(io.LimitReader(f, MaxSettingsFile+1))
	if err != nil || len(b) > MaxSettingsFile {
		return ""
	}
	var doc struct {
		Env map[string]any `json:"env"`
	}
	if json.Unmarshal(b, &doc) != nil {
		return ""
	}
	s, _ := doc.Env[EndpointKey].(string)
	return s
}

// settingSources is the value of the last --setting-sources in args.
func settingSources(args []string) (string, bool) {
	val, found := "", false
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case a == "--setting-sources" && i+1 < len(args):
			val, found = args[i+1], true
			i++
		case strings.HasPrefix(a, "--setting-sources="):
			val, found = a[len("--setting-sources="):], true
		}
	}
	return val, found
}

// lookup is the last value of key in env.
func lookup(env []string, key string) (string, bool) {
	for i := len(env) - 1; i >= 0; i-- {
		if k, v, ok := strings.Cut(env[i], "="); ok && k == key {
			return v, true
		}
	}
	return "", false
}
