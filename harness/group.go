package harness

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// EnvTag is set in the harness's environment to a value unique to its
// Process. Every process the harness starts inherits it, also those that
// leave its process group: the real harness runs each Bash command in a
// session of its own (measured on 2.1.328: setsid, so neither SIGINT to the
// harness's group nor Pdeathsig reaches it). Finding the tag in
// /proc/PID/environ is how those are found and killed when the harness
// ends; a process that clears its environment escapes.
const EnvTag = "FLOWER_HARNESS_TAG"

func newTag() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// killTagged SIGKILLs every process (but this one) whose environment holds
// the tag, a few passes over, for a process that forks while it is walked.
// It returns how many it signalled.
func killTagged(tag string) int {
	mark := []byte(EnvTag + "=" + tag)
	self := os.Getpid()
	total := 0
	for pass := 0; pass < 4; pass++ {
		n := 0
		ents, _ := os.ReadDir("/proc")
		for _, e := range ents {
			pid, err := strconv.Atoi(e.Name())
			if err != nil || pid == self {
				continue
			}
			env, err := os.ReadFile("/proc/" + e.Name() + "/environ")
			if err != nil || !bytes.Contains(env, mark) {
				continue
			}
			if syscall.Kill(pid, syscall.SIGKILL) == nil {
				n++
			}
		}
		total += n
		if n == 0 {
			break
		}
	}
	return total
}

// Spawn runs f (a cmd.Start) on one OS thread that never exits. The
// harness's Pdeathsig fires when the thread that forked it exits, not when
// the process does (https://go.dev/issue/27505), and Go ends a thread when a
// goroutine locked to it returns: forked from an ordinary goroutine's
// thread, the harness could be killed while flower lives on.
func Spawn(f func()) {
	spawnOnce.Do(func() {
		go func() {
			runtime.LockOSThread() // for good: this thread is never given back
			for fn := range spawnCh {
				fn()
			}
		}()
	})
	done := make(chan struct{})
	spawnCh <- func() { f(); close(done) }
	<-done
}

var (
	spawnOnce sync.Once
	spawnCh   = make(chan func())
)

// live holds a killer for every harness this program started that may
// still be running, so that KillAll can reach them all from a signal
// handler.
var live = struct {
	sync.Mutex
	m map[*func()]struct{}
}{m: map[*func()]struct{}{}}

// Track registers kill, which SIGKILLs one running harness and all it
// started, for KillAll; call untrack once that harness has exited. kill
// runs under the registry's lock: it must not block, nor call Track or an
// untrack. A Process tracks itself; a harness started otherwise (in a pty)
// is tracked by whoever started it.
func Track(kill func()) (untrack func()) {
	k := &kill
	live.Lock()
	defer live.Unlock()
	live.m[k] = struct{}{}
	return func() {
		live.Lock()
		defer live.Unlock()
		delete(live.m, k)
	}
}

// KillAll sends SIGKILL at once to every harness this program started that
// is still running — its process group and every process carrying its tag —
// and returns how many harnesses it reached: those tracked, whose exit has
// not yet been seen. It is what a second Ctrl-C
// does: each Process then ends as if its harness had crashed (Events closes,
// Done follows).
func KillAll() int {
	live.Lock()
	defer live.Unlock()
	for kill := range live.m {
		(*kill)()
	}
	return len(live.m)
}

// reaperScript ($1: the tag) waits for EOF on stdin, which comes when the
// last holder of the pipe's write end — this program — is gone, however it
// died; then it kills every process carrying the harness's tag (a few
// passes, for forks), and last its own process group, the harness's. It
// ignores SIGINT and SIGTERM, which Stop and a cancelled context send to
// the group, so that it guards the group until the very end.
const reaperScript = `trap '' INT TERM
read x
for pass in 1 2 3 4; do
	found=
	for f in $(grep -l -F "` + EnvTag + `=$1" /proc/[0-9]*/environ 2>/dev/null); do
		p=${f#/proc/}
		kill -9 "${p%/environ}" 2>/dev/null && found=1
	done
	[ -z "$found" ] && break
done
kill -9 0`

// Guard keeps a child and everything it starts from outliving this
// program. Give the child Env; start it with Spawn (for Pdeathsig); then
// Watch starts the reaper, a shell that waits for EOF on a pipe only this
// program holds and, however the program died, kills every process carrying
// the tag (Pdeathsig alone reaches only the child itself: the tools it runs
// would live on as orphans). Release collects the reaper once the child and
// its processes are gone.
type Guard struct {
	tag      string
	reaper   *exec.Cmd
	reaperIn *os.File
}

// NewGuard returns a guard with a fresh tag.
func NewGuard() *Guard { return &Guard{tag: newTag()} }

// Env is the environment entry that tags the child and all it starts.
func (g *Guard) Env() string { return EnvTag + "=" + g.tag }

// KillTagged SIGKILLs every process carrying the tag and returns how many.
func (g *Guard) KillTagged() int { return killTagged(g.tag) }

// KillTaggedLate sweeps for the tag again a moment later, in the
// background. A process caught in execve when the harness died shows an
// empty environment for that moment, so the sweeps at the harness's death
// miss it (seen once in CI: a tool that had just written its pid and was
// exec'ing sleep survived all three).
func (g *Guard) KillTaggedLate(log *slog.Logger) {
	go func() {
		for _, d := range lateSweeps {
			time.Sleep(d)
			if n := killTagged(g.tag); n > 0 {
				log.Info("killed processes the harness left behind, on a late sweep", "count", n)
			}
		}
	}()
}

// lateSweeps are the pauses before each late sweep.
var lateSweeps = []time.Duration{100 * time.Millisecond, 400 * time.Millisecond}

// Watch starts the reaper. With pgid > 0 it joins that process group (the
// child's, in this program's session), which also keeps the group's id from
// being reused until the group is killed; with 0 it stays in a group of its
// own (a child that leads a session of its own cannot be joined). Without a
// shell the child runs unguarded, and log says so.
func (g *Guard) Watch(pgid int, log *slog.Logger) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		log.Warn("no reaper for the harness's processes", "err", err)
		return
	}
	r, w, err := os.Pipe()
	if err != nil {
		log.Warn("no reaper for the harness's processes", "err", err)
		return
	}
	cmd := exec.Command(sh, "-c", reaperScript, "flower-reaper", g.tag)
	cmd.Stdin = r
	// Not the child's environment: the reaper must not carry the tag.
	cmd.Env = []string{"PATH=" + os.Getenv("PATH") + ":/usr/bin:/bin"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pgid: pgid}
	err = cmd.Start()
	r.Close()
	if err != nil {
		w.Close()
		log.Warn("no reaper for the harness's processes", "err", err)
		return
	}
	g.reaper, g.reaperIn = cmd, w
}

// Release lets the reaper go and collects it: it kills what is left of the
// tag (nothing, normally) and its own group, then exits.
func (g *Guard) Release() {
	if g.reaper == nil {
		return
	}
	g.reaperIn.Close()
	_ = g.reaper.Wait()
}

// exitedError is ErrExited with how the harness exited and the last line it
// wrote to stderr, once it has exited: that is the reason a person needs
// ("No conversation found with session ID: …").
func (p *Process) exitedError() error {
	select {
	case <-p.exited:
	case <-time.After(time.Second):
		// A broken pipe comes a moment before Wait returns.
		return ErrExited
	}
	var b strings.Builder
	if p.err != nil {
		b.WriteString(" (" + p.err.Error() + ")")
	}
	if l := lastLine(p.Stderr()); l != "" {
		b.WriteString(": " + l)
	}
	if b.Len() == 0 {
		return ErrExited
	}
	return &exitedError{detail: b.String()}
}

type exitedError struct{ detail string }

func (e *exitedError) Error() string { return ErrExited.Error() + e.detail }
func (e *exitedError) Unwrap() error { return ErrExited }

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	return strings.TrimSpace(s)
}

// resumeRefusals are how the harness says that --resume named no session it
// has (measured on 2.1.328: stderr, then a result line with subtype
// error_during_execution and exit status 1, before any init line).
var resumeRefusals = []string{
	"No conversation found with session ID",
	"--resume requires a valid session ID",
}

// ResumeRefused reports whether text (an error message carrying the
// harness's stderr) says the harness refused to resume a session: the
// session is unknown to it, so resuming again cannot help.
func ResumeRefused(text string) bool {
	for _, r := range resumeRefusals {
		if strings.Contains(text, r) {
			return true
		}
	}
	return false
}
