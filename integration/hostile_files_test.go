package integration_test

import (
	"bytes"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/flowerhq/flower/handoffwriter"
	"github.com/flowerhq/flower/manifest"
	"github.com/flowerhq/flower/scriptedapi"
	"github.com/flowerhq/flower/workbench"
)

// decoy is a loopback listener that counts the requests it gets: the
// person's endpoint is the scripted server, so any request here carried
// the key somewhere else.
type decoy struct {
	url      string
	requests atomic.Int64
}

// startDecoy starts a decoy for one cell and aims the victim project's
// settings at it: a harness that ran in the victim, or read its settings,
// would send it the key.
func startDecoy(t *testing.T, victim string) *decoy {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	d := &decoy{url: "http://" + l.Addr().String()}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		d.requests.Add(1)
		http.Error(w, "decoy", http.StatusTeapot)
	})}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	writeFile(t, filepath.Join(victim, "other-project", ".claude", "settings.json"),
		`{"env": {"ANTHROPIC_BASE_URL": "`+d.url+`"}}`)
	return d
}

// gitInit makes ws a git repository with one commit, as a clone is.
func gitInit(t *testing.T, ws string) {
	t.Helper()
	for _, args := range [][]string{{"init", "-q"}, {"add", "-A"}, {"-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init", "--allow-empty"}} {
		c := exec.Command("git", args...)
		c.Dir = ws
		if out, err := c.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
}

func hardlink(t *testing.T, to, at string) {
	t.Helper()
	if err := os.Link(to, at); err != nil {
		t.Fatal(err)
	}
}

// fileRows are the table's rows for links of every kind and for what
// flower writes (DESIGN.md «Territory», «Input caps»): hard links written
// through, special files a tool blocks on, a task file that leads out of
// the workspace, a handoff written past its cap.
func fileRows() []hostileRow {
	wb := func(ws string, rel ...string) string {
		return filepath.Join(append([]string{ws, ".flower"}, rel...)...)
	}
	// linked replaces the file at rel with a second name of a file in the
	// victim (made if need be, holding a planted line).
	linked := func(victimFile string, rel ...string) func(t *testing.T, ws, victim string) string {
		return func(t *testing.T, ws, victim string) string {
			p, v := wb(ws, rel...), filepath.Join(victim, victimFile)
			if _, err := os.Stat(v); err != nil {
				writeFile(t, v, plantedMark+": the victim's file\n")
			}
			mustRemove(t, p)
			hardlink(t, v, p)
			return p
		}
	}
	runFiles := map[string]cellKind{"run": notApp, "worker activity": notApp, "relay start": ranSafe}
	stepFiles := map[string]cellKind{"show": notApp, "logs": notApp, "relay start": notApp}
	onlyRun := func(k cellKind) map[string]cellKind {
		m := map[string]cellKind{"run": k}
		for _, c := range hostileCommands[1:] {
			m[c] = notApp
		}
		return m
	}
	return []hostileRow{
		{name: "run dir flower.log hard-linked", recordNotes: true, plant: linked("log.txt", "runs", "r1", "flower.log"), want: runFiles},
		{name: "run dir step-main.lock hard-linked", recordNotes: true, plant: linked("lock.txt", "runs", "r1", "step-main.lock"), want: runFiles},
		{name: "runs/.step-main.lock hard-linked", recordNotes: true, plant: linked("lock.txt", "runs", ".step-main.lock"),
			want: map[string]cellKind{"show": ranSafe, "logs": ranSafe, "relay start": ranSafe}},
		{name: "run dir manifest.json hard-linked", recordNotes: true, plant: func(t *testing.T, ws, victim string) string {
			p := wb(ws, "runs", "r1", manifest.FileName)
			hardlink(t, p, filepath.Join(victim, "a-copy-of-the-manifest.json"))
			return p
		}, want: map[string]cellKind{"run": notApp, "worker activity": notApp}},
		{name: "notes/交接-main.md hard-linked", recordNotes: true, plant: linked("handoff.md", "notes", "交接-main.md"), want: stepFiles},
		{name: "notes/任务-main.md hard-linked", recordNotes: true, plant: linked("task.md", "notes", "任务-main.md"), want: stepFiles},
		{name: ".flower/.gitignore a FIFO, git", recordNotes: true, git: true, plant: func(t *testing.T, ws, victim string) string {
			p := wb(ws, ".gitignore")
			if err := syscall.Mkfifo(p, 0o644); err != nil {
				t.Fatal(err)
			}
			return p
		}},
		{name: "a socket in notes", recordNotes: true, plant: func(t *testing.T, ws, victim string) string {
			// Bound under a short name (a socket's path is short), then moved.
			dir, err := os.MkdirTemp("", "sock")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.RemoveAll(dir) })
			l, err := net.Listen("unix", filepath.Join(dir, "s"))
			if err != nil {
				t.Fatal(err)
			}
			p := wb(ws, "notes", "交接-other.md")
			if err := os.Rename(filepath.Join(dir, "s"), p); err != nil {
				t.Fatal(err)
			}
			l.Close()
			return p
		}},
		{name: "-f task.md → a key outside", recordNotes: true, plant: func(t *testing.T, ws, victim string) string {
			writeFile(t, filepath.Join(victim, "id_rsa"), plantedMark+" -----BEGIN OPENSSH PRIVATE KEY-----\n")
			p := filepath.Join(ws, "task.md")
			symlink(t, filepath.Join(victim, "id_rsa"), p)
			return p
		}, taskFile: func(ws, victim string) string { return filepath.Join(ws, "task.md") }, want: onlyRun(refused)},
		{name: "-f a task outside, named", recordNotes: true, plant: func(t *testing.T, ws, victim string) string {
			p := filepath.Join(victim, "tasks", "task.md")
			writeFile(t, p, hostileTask)
			return p
		}, taskFile: func(ws, victim string) string { return filepath.Join(victim, "tasks", "task.md") }, want: onlyRun(ranSafe)},
		{name: "a 10 MiB handoff from the model", recordNotes: true, plant: func(t *testing.T, ws, victim string) string {
			return wb(ws, "notes", "交接-main.md")
		}, model: func() *job {
			return &job{plans: [][]scriptedapi.Reply{{bash(100_000, "echo one >> work.txt"), bash(155_000, "echo two >> work.txt")}, {done(40_000)}},
				handoff: hugeHandoff}
		}, check: func(t *testing.T, ws string) {
			b, err := os.ReadFile(wb(ws, "notes", "交接-main.md"))
			if err != nil || len(b) > workbench.MaxHandoff || !bytes.Contains(b, []byte(handoffwriter.CutMarker)) {
				t.Errorf("the handoff file: %d bytes, marked %v, %v", len(b), bytes.Contains(b, []byte(handoffwriter.CutMarker)), err)
			}
			logs, _ := filepath.Glob(wb(ws, "runs", "*", "flower.log"))
			for _, l := range logs {
				if b, _ := os.ReadFile(l); len(b) > 4<<20 {
					t.Errorf("%s holds %d bytes: the handoff was logged whole", l, len(b))
				}
			}
		}, want: map[string]cellKind{"run": ranSafe, "continue": ranSafe, "rerun": ranSafe, "show": notApp, "logs": notApp,
			"relay start": notApp, "worker activity": notApp}},
	}
}
