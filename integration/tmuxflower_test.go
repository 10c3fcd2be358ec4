package integration_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// tmuxFlower is one flower command line run in a pane of a tmux server of
// its own, as a person runs `flower -i` at a terminal. The pane's shell
// carries the environment the server was started with; execEnv is set on
// flower's command line alone, so that the shell and tmux around it do not
// carry it (a marker that finds the run's processes, say). The API key
// reaches flower through the server's environment, never through a file.
type tmuxFlower struct {
	socket string
	dir    string // the pane script's files

	pidv int
	done chan struct{}
	code int

	mu     sync.Mutex
	screen string // the pane once flower exited

	stopWatch chan struct{}
	watched   chan struct{}
	persons   sync.WaitGroup
}

// startTmuxFlower starts argv (flower and its arguments) in dir. It
// returns once flower's pid is known.
func startTmuxFlower(t *testing.T, env, execEnv []string, dir string, argv []string) (*tmuxFlower, error) {
	if _, err := exec.LookPath("tmux"); err != nil {
		return nil, fmt.Errorf("the interactive front needs tmux: %w", err)
	}
	f := &tmuxFlower{socket: fmt.Sprintf("flower-tf-%d-%d", os.Getpid(), time.Now().UnixNano()), dir: t.TempDir(),
		done: make(chan struct{}), stopWatch: make(chan struct{}), watched: make(chan struct{})}
	var q []string
	for _, a := range append(append([]string{"env"}, execEnv...), argv...) {
		q = append(q, shellQuote(a))
	}
	script := fmt.Sprintf(`#!/bin/bash
cd %s
bash -c 'echo $$ > %s; exec "$@"' flower %s
code=$?
echo "FLOWER-EXIT=$code"
echo $code > %s.tmp && mv %s.tmp %s
sleep 600
`, shellQuote(dir), shellQuote(f.file("pid")), strings.Join(q, " "),
		shellQuote(f.file("code")), shellQuote(f.file("code")), shellQuote(f.file("code")))
	path := f.file("run.sh")
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		return nil, err
	}
	cmd := exec.Command("tmux", "-u", "-L", f.socket, "-f", "/dev/null", "new-session", "-d", "-s", "it", "-x", "120", "-y", "40", path)
	cmd.Env = append(append([]string(nil), env...), "LANG=C.UTF-8", "LC_ALL=C.UTF-8")
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("tmux new-session: %v\n%s", err, out)
	}
	t.Cleanup(f.close)
	deadline := time.Now().Add(waitLimit)
	for {
		b, err := os.ReadFile(f.file("pid"))
		if err == nil {
			if f.pidv, err = strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
				break
			}
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("flower's pid not recorded within %v; pane:\n%s", waitLimit, f.capture())
		}
		time.Sleep(20 * time.Millisecond)
	}
	go f.watch()
	return f, nil
}

func (f *tmuxFlower) file(name string) string { return filepath.Join(f.dir, name) }

// watch waits for the exit status the pane's script writes right after it
// reaped flower.
func (f *tmuxFlower) watch() {
	defer close(f.watched)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-f.stopWatch:
			return
		case <-tick.C:
		}
		b, err := os.ReadFile(f.file("code"))
		if err != nil {
			continue
		}
		f.code, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		if f.code > 128 && f.code != 130 {
			f.code = -1 // killed by a signal, as os/exec reports it
		}
		f.mu.Lock()
		f.screen = f.capture()
		f.mu.Unlock()
		close(f.done)
		return
	}
}

func (f *tmuxFlower) close() {
	select {
	case <-f.stopWatch:
	default:
		close(f.stopWatch)
	}
	<-f.watched
	f.persons.Wait()
	select {
	case <-f.done:
	default:
		// Still running at the end of the test: it goes with its pane.
		_ = syscall.Kill(f.pidv, syscall.SIGKILL)
	}
	_ = exec.Command("tmux", "-L", f.socket, "kill-server").Run()
}

func (f *tmuxFlower) tmux(args ...string) (string, error) {
	out, err := tmuxCommand(f.socket, args...).CombinedOutput()
	return string(out), err
}

// capture is the pane's text with its scrollback, wrapped lines joined.
func (f *tmuxFlower) capture() string {
	out, _ := f.tmux("capture-pane", "-p", "-J", "-S", "-", "-t", "it")
	return out
}

// typeLine types text and then Enter, as a person does.
func (f *tmuxFlower) typeLine(text string) {
	_, _ = f.tmux("send-keys", "-t", "it", "-l", text)
	time.Sleep(300 * time.Millisecond)
	_, _ = f.tmux("send-keys", "-t", "it", "Enter")
}

func (f *tmuxFlower) pid() int                { return f.pidv }
func (f *tmuxFlower) exited() <-chan struct{} { return f.done }
func (f *tmuxFlower) exitCode() int           { return f.code }

func (f *tmuxFlower) output() string {
	select {
	case <-f.done:
		f.mu.Lock()
		defer f.mu.Unlock()
		return f.screen
	default:
		return f.capture()
	}
}

// harnessState is the status ("busy", "idle") the interactive harness of
// pid writes to its state file under home, "" when there is none.
func harnessState(home string, pid int) string {
	b, err := os.ReadFile(filepath.Join(home, ".claude", "sessions", strconv.Itoa(pid)+".json"))
	if err != nil {
		return ""
	}
	var s struct {
		Status string `json:"status"`
	}
	if json.Unmarshal(b, &s) != nil {
		return ""
	}
	return s.Status
}

// harnessChild is the pid of flower's harness child (exe is the harness's
// resolved path), 0 if none runs.
func harnessChild(flowerPID int, exe string) int {
	// The oldest: the interactive front's context-usage probe is a second
	// harness of the same executable, started once the first round is back.
	pid, start := 0, int64(0)
	for _, p := range allProcs() {
		if p.ppid == flowerPID && p.exe == exe && (pid == 0 || p.start < start) {
			pid, start = p.pid, p.start
		}
	}
	return pid
}

// startPerson runs person until flower exits or the test ends.
// quiet, when set and true, keeps the person from typing.
func (f *tmuxFlower) startPerson(home, harnessExe string, finished, quiet func() bool, note func(string, ...any)) {
	f.persons.Add(1)
	go func() {
		defer f.persons.Done()
		f.person(home, harnessExe, finished, quiet, note)
	}()
}

// person plays the person at an interactive flower's screen: the harness's
// turns are typed by a person, so a turn that ended in an error (the API
// gave up) waits for one, and so does the end of the job. Once the harness
// has sat idle for a while, person types "go on" — or /exit when finished
// says the job is done. It returns when flower exits.
func (f *tmuxFlower) person(home, harnessExe string, finished, quiet func() bool, note func(string, ...any)) {
	var idleSince, lastTyped time.Time
	idlePid := 0
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-f.done:
			return
		case <-f.stopWatch:
			return
		case <-tick.C:
		}
		pid := harnessChild(f.pidv, harnessExe)
		if pid == 0 || harnessState(home, pid) != "idle" {
			idleSince, idlePid = time.Time{}, 0
			continue
		}
		now := time.Now()
		if idlePid != pid || idleSince.IsZero() {
			idleSince, idlePid = now, pid
		}
		if now.Sub(lastTyped) < 10*time.Second || (quiet != nil && quiet()) {
			continue
		}
		switch idle := now.Sub(idleSince); {
		case finished() && idle >= 2*time.Second:
			note("person: the job is done; typing /exit (harness pid %d)", pid)
			f.typeLine("/exit")
			lastTyped = time.Now()
		case !finished() && idle >= 8*time.Second:
			note("person: the harness (pid %d) has sat idle %v; typing go on", pid, idle.Round(time.Second))
			f.typeLine("go on with the task")
			lastTyped = time.Now()
		}
	}
}

// titleLog is every title a tmux server's pane "it" showed, as a person
// glancing at the window would see them, sampled until the test ends.
type titleLog struct{ seen sync.Map }

func watchTitles(t *testing.T, socket string) *titleLog {
	l := &titleLog{}
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop) })
	go func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(50 * time.Millisecond):
				if out, err := tmuxCommand(socket, "display-message", "-p", "-t", "it", "#{pane_title}").Output(); err == nil {
					l.seen.Store(strings.TrimSpace(string(out)), true)
				}
			}
		}
	}()
	return l
}

// saw: some title held sub.
func (l *titleLog) saw(sub string) bool {
	found := false
	l.seen.Range(func(k, _ any) bool {
		found = found || strings.Contains(k.(string), sub)
		return !found
	})
	return found
}

// all is the titles seen.
func (l *titleLog) all() []string {
	var all []string
	l.seen.Range(func(k, _ any) bool { all = append(all, k.(string)); return true })
	return all
}
