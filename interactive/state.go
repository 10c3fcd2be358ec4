package interactive

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/tidwall/gjson"

	"github.com/flowerhq/flower/transcript"
)

// harnessState is what an interactive harness says of itself in
// <config dir>/sessions/<pid>.json (see the package doc).
type harnessState struct {
	SessionID string
	Status    string // "busy", "idle", …
	Cwd       string
}

// readState reads the state file of the harness with pid; a missing or torn
// file is an error (the harness writes it at start and removes it at exit).
func readState(configDir string, pid int) (harnessState, error) {
	b, err := os.ReadFile(filepath.Join(configDir, "sessions", strconv.Itoa(pid)+".json"))
	if err != nil {
		return harnessState{}, fmt.Errorf("read harness state: %w", err)
	}
	if !gjson.ValidBytes(b) {
		return harnessState{}, fmt.Errorf("read harness state: not JSON (%d bytes)", len(b))
	}
	r := gjson.ParseBytes(b)
	return harnessState{
		SessionID: r.Get("sessionId").String(),
		Status:    r.Get("status").String(),
		Cwd:       r.Get("cwd").String(),
	}, nil
}

// locator finds the transcript of one interactive harness: by the session
// id in its state file when it has one, else the newest transcript created
// in the working directory's project folder since the harness started that
// no earlier generation used.
type locator struct {
	configDir string
	cwd       string
	pid       int
	since     time.Time
	used      map[string]bool // transcripts of earlier generations
}

// find returns the transcript path and the session id ("" when only the
// fallback found it). ok is false while there is nothing to follow yet.
func (l *locator) find() (path, sessionID string, ok bool) {
	if st, err := readState(l.configDir, l.pid); err == nil && st.SessionID != "" {
		p := transcript.FilePath(l.configDir, l.cwd, st.SessionID)
		if exists(p) {
			return p, st.SessionID, true
		}
		// The folder name is the harness's business: look for the id
		// anywhere under projects/ before giving up on it.
		if m, _ := filepath.Glob(filepath.Join(l.configDir, "projects", "*", st.SessionID+".jsonl")); len(m) > 0 {
			return m[0], st.SessionID, true
		}
		return "", st.SessionID, false
	}
	return l.newest()
}

// newest is the fallback: the most recently created transcript in the
// project folder since the harness started.
func (l *locator) newest() (string, string, bool) {
	dir := transcript.ProjectDir(l.configDir, l.cwd)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return "", "", false
	}
	type cand struct {
		path string
		mod  time.Time
	}
	var cands []cand
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".jsonl") {
			continue
		}
		p := filepath.Join(dir, e.Name())
		if l.used[p] {
			continue
		}
		fi, err := e.Info()
		if err != nil || fi.ModTime().Before(l.since) {
			continue
		}
		cands = append(cands, cand{p, fi.ModTime()})
	}
	if len(cands) == 0 {
		return "", "", false
	}
	sort.Slice(cands, func(i, j int) bool { return cands[i].mod.After(cands[j].mod) })
	return cands[0].path, "", true
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
