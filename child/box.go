package child

import (
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"runtime"
	"sync"
	"syscall"
	"time"
)

// A box holds a child and everything it starts, so that all of it can be
// killed at once and waited for (DESIGN.md «Signals and orphans»). Its
// methods are called in this order: prepare (before the fork), started,
// guardSetup, then kill at any time and clear once the child has exited,
// and release last.
type box interface {
	// name is how the log and Containment name it.
	name() string
	// prepare adds what the box needs to the child's attributes.
	prepare(attr *syscall.SysProcAttr)
	// fallible: the child may fail to start because of the box; Start
	// then tries again with the process group alone.
	fallible() bool
	started(pid int, tag string)
	// guardSetup says how the guard is started: its attributes and the
	// environment that tells it what to kill.
	guardSetup(pid int, tag string, pty bool) (*syscall.SysProcAttr, []string)
	// kill sends SIGKILL to everything in the box. It must not block.
	kill()
	// clear kills whatever the exited child left and waits, at most
	// grace, until it is gone; it returns how many processes it killed.
	clear(pid int, tag string, grace time.Duration) int
	release()
}

// groupBox holds the child by its process group, and where the platform
// has them by a subreaper and the tag (see strays).
type groupBox struct {
	log *slog.Logger
	pid int
	tag string
}

func newGroupBox(log *slog.Logger) *groupBox { return &groupBox{log: log} }

func (g *groupBox) name() string {
	if subreaper() {
		return "subreaper"
	}
	return "group"
}

func (g *groupBox) prepare(attr *syscall.SysProcAttr) { parentDeath(attr) }
func (g *groupBox) fallible() bool                    { return false }
func (g *groupBox) started(pid int, tag string) {
	g.pid, g.tag = pid, tag
	rememberGroup(pid)
}

func (g *groupBox) guardSetup(pid int, tag string, pty bool) (*syscall.SysProcAttr, []string) {
	env := []string{envGuardPGID + "=" + itoa(pid)}
	if pty {
		// A session leader's group cannot be joined.
		return &syscall.SysProcAttr{Setsid: true}, env
	}
	// In the child's group, the guard keeps the group's id from being
	// reused until the group is killed.
	return &syscall.SysProcAttr{Setpgid: true, Pgid: pid}, env
}

func (g *groupBox) kill() {
	_ = syscall.Kill(-g.pid, syscall.SIGKILL)
	strays(g.tag, false)
}

func (g *groupBox) clear(pid int, tag string, grace time.Duration) int {
	n := 0
	if syscall.Kill(-pid, syscall.SIGKILL) == nil {
		n++ // at least one, the guard aside: how many is not known here
	}
	return n + strays(tag, true)
}

func (g *groupBox) release() {}

// ours holds the pids of the children and guards this package started that
// have not been waited for: never anyone's orphans.
var ours = struct {
	sync.Mutex
	m      map[int]bool
	groups map[int]bool // every child's process group id, ever
}{m: map[int]bool{}, groups: map[int]bool{}}

func addOurs(pid int) {
	ours.Lock()
	ours.m[pid] = true
	ours.Unlock()
}

func dropOurs(pid int) {
	ours.Lock()
	delete(ours.m, pid)
	ours.Unlock()
}

func isOurs(pid int) bool {
	ours.Lock()
	defer ours.Unlock()
	return ours.m[pid]
}

func rememberGroup(pgid int) {
	ours.Lock()
	ours.groups[pgid] = true
	ours.Unlock()
}

func wasOurGroup(pgid int) bool {
	ours.Lock()
	defer ours.Unlock()
	return ours.groups[pgid]
}

func newTag() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// spawn runs f (a fork) on one OS thread that never exits. The child's
// parent-death signal fires when the thread that forked it exits, not when
// the process does (https://go.dev/issue/27505), and Go ends a thread when a
// goroutine locked to it returns: forked from an ordinary goroutine's
// thread, the child could be killed while flower lives on.
func spawn(f func()) {
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
