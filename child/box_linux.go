package child

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// newBox returns a cgroup of the child's own where this process may make
// one, and the process group with a subreaper otherwise.
func newBox(log *slog.Logger) (box, error) {
	c, err := newCgroupBox(log)
	if err == nil {
		return c, nil
	}
	noCgroupOnce.Do(func() { log.Info("no cgroup for children; process group and subreaper instead", "err", err) })
	return fallbackBox(log), nil
}

// fallbackBox is the way down from a cgroup: the process group, this
// process being a subreaper.
func fallbackBox(log *slog.Logger) box {
	becomeSubreaper(log)
	return newGroupBox(log)
}

var noCgroupOnce sync.Once

var (
	cgroupOff atomic.Bool
	cgroupSeq atomic.Int64
)

// cgroupBox is a cgroup v2 made for one child, below this process's own.
// The child is born in it (clone3 with CLONE_INTO_CGROUP), so it and every
// process it starts stay in it whatever they do to their session, group or
// environment.
type cgroupBox struct {
	log *slog.Logger
	dir string
	fd  *os.File
}

func newCgroupBox(log *slog.Logger) (*cgroupBox, error) {
	if cgroupOff.Load() {
		return nil, errors.New("switched off")
	}
	parent, err := ownCgroup()
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(parent, fmt.Sprintf("flower-%d-%d", os.Getpid(), cgroupSeq.Add(1)))
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, err
	}
	if _, err := os.Stat(filepath.Join(dir, "cgroup.kill")); err != nil {
		_ = os.Remove(dir)
		return nil, fmt.Errorf("no cgroup.kill (a kernel before 5.14): %w", err)
	}
	fd, err := os.Open(dir)
	if err != nil {
		_ = os.Remove(dir)
		return nil, err
	}
	return &cgroupBox{log: log, dir: dir, fd: fd}, nil
}

// ownCgroup returns the directory of this process's cgroup v2: the
// cgroup2 mount (all of /sys/fs/cgroup on a unified system, a part of it
// on a hybrid one) joined with the path /proc/self/cgroup gives.
func ownCgroup() (string, error) {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "", err
	}
	rel, err := parseCgroupFile(b)
	if err != nil {
		return "", err
	}
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return "", err
	}
	defer f.Close()
	mount, err := parseCgroup2Mount(f)
	if err != nil {
		return "", err
	}
	return filepath.Join(mount, rel), nil
}

// parseCgroupFile returns the cgroup v2 path of a /proc/PID/cgroup file:
// its "0::" line.
func parseCgroupFile(b []byte) (string, error) {
	for _, line := range strings.Split(string(b), "\n") {
		if p, ok := strings.CutPrefix(line, "0::"); ok && strings.HasPrefix(p, "/") {
			return p, nil
		}
	}
	return "", errors.New("no cgroup v2 in /proc/self/cgroup")
}

// parseCgroup2Mount finds in a mountinfo file where the cgroup2 file
// system is mounted with its root: all of /sys/fs/cgroup on a unified
// system, /sys/fs/cgroup/unified on a hybrid one. A mount of a part of the
// hierarchy (a container's, without a cgroup namespace) does not count:
// /proc/self/cgroup's path would not be below it. A mount point that
// mountinfo escaped (\040 for a space) is passed over, not unescaped.
func parseCgroup2Mount(r io.Reader) (string, error) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		// id parent major:minor root mountpoint options [optional...] - fstype source super
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		if !ok || !strings.HasPrefix(post, "cgroup2 ") {
			continue
		}
		fields := strings.Fields(pre)
		if len(fields) >= 5 && fields[3] == "/" && !strings.Contains(fields[4], "\\") {
			return fields[4], nil
		}
	}
	return "", errors.New("no cgroup2 mount")
}

func (c *cgroupBox) name() string { return "cgroup" }

func (c *cgroupBox) prepare(attr *syscall.SysProcAttr) {
	parentDeath(attr)
	attr.UseCgroupFD = true
	attr.CgroupFD = int(c.fd.Fd())
}

func (c *cgroupBox) fallible() bool      { return true }
func (c *cgroupBox) started(int, string) {}

func (c *cgroupBox) guardSetup(pid int, tag string, pty bool) (*syscall.SysProcAttr, []string) {
	// Outside the cgroup, and in a session of its own: neither a kill of
	// the child's cgroup nor one of flower's process group reaches it.
	return &syscall.SysProcAttr{Setsid: true}, []string{envGuardCgroup + "=" + c.dir}
}

func (c *cgroupBox) kill() {
	if err := os.WriteFile(filepath.Join(c.dir, "cgroup.kill"), []byte("1"), 0); err != nil && !errors.Is(err, os.ErrNotExist) {
		c.log.Warn("kill the child's cgroup", "err", err)
	}
}

func (c *cgroupBox) clear(pid int, tag string, grace time.Duration) int {
	procs, _ := os.ReadFile(filepath.Join(c.dir, "cgroup.procs"))
	n := len(strings.Fields(string(procs)))
	if n == 0 && !c.populated() {
		return 0
	}
	c.kill()
	if !c.waitEmpty(grace) {
		c.log.Warn("the child's cgroup is not empty after its kill", "cgroup", c.dir, "grace", grace)
	}
	return n
}

// populated reads cgroup.events.
func (c *cgroupBox) populated() bool {
	b, err := os.ReadFile(filepath.Join(c.dir, "cgroup.events"))
	return err == nil && bytes.Contains(b, []byte("populated 1"))
}

// waitEmpty waits until cgroup.events says "populated 0": the kernel wakes
// a poll for POLLPRI on that file when the value changes.
func (c *cgroupBox) waitEmpty(limit time.Duration) bool {
	f, err := os.Open(filepath.Join(c.dir, "cgroup.events"))
	if err != nil {
		return !c.populated()
	}
	defer f.Close()
	deadline := time.Now().Add(limit)
	buf := make([]byte, 256)
	for {
		n, err := f.ReadAt(buf, 0)
		if (err == nil || n > 0) && !bytes.Contains(buf[:n], []byte("populated 1")) {
			return true
		}
		left := time.Until(deadline)
		if left <= 0 {
			return false
		}
		fds := []unix.PollFd{{Fd: int32(f.Fd()), Events: unix.POLLPRI}}
		if _, err := unix.Poll(fds, int(left/time.Millisecond)+1); err != nil && !errors.Is(err, unix.EINTR) {
			return !c.populated()
		}
	}
}

func (c *cgroupBox) release() {
	c.fd.Close()
	if err := os.Remove(c.dir); err != nil && !errors.Is(err, os.ErrNotExist) {
		c.log.Warn("remove the child's cgroup", "cgroup", c.dir, "err", err)
	}
}

// parentDeath: if flower dies without cleaning up, the child gets SIGKILL.
func parentDeath(attr *syscall.SysProcAttr) { attr.Pdeathsig = syscall.SIGKILL }

var subreaperOn atomic.Bool

// becomeSubreaper makes this process the child subreaper of its
// descendants: an orphan reparents to it, not to init, and strays finds it.
func becomeSubreaper(log *slog.Logger) {
	if subreaperOn.Load() {
		return
	}
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		log.Warn("cannot become a subreaper: a child's orphans go to init", "err", err)
		return
	}
	subreaperOn.Store(true)
	// An orphan that ends on its own is a zombie of this process: reap it
	// when it ends, not at the next harness's end.
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGCHLD)
	go func() {
		for range ch {
			reapOrphans()
		}
	}()
}

// isOrphan: p is a child of this process (in session sid) that this
// package did not start: it reparented here (see strays).
func isOrphan(p ProcStat, self, sid int) bool {
	return p.PPID == self && !isOurs(p.PID) && (p.SID != sid || wasOurGroup(p.Pgrp))
}

// reapOrphans reaps the orphans that have ended, and no other child.
func reapOrphans() {
	self := os.Getpid()
	sid, _ := unix.Getsid(0)
	for _, p := range Procs() {
		if p.State == "Z" && isOrphan(p, self, sid) {
			var ws unix.WaitStatus
			_, _ = unix.Wait4(p.PID, &ws, unix.WNOHANG, nil)
		}
	}
}

func subreaper() bool { return subreaperOn.Load() }

// strays SIGKILLs what an exited child left outside its process group: every
// process carrying its tag, and, this process being a subreaper, every
// orphan reparented to it (a child of this process that it did not start
// here: its group was a child's, or its session is not this process's).
// With reap, orphans are killed and reaped until none is left: an orphan's
// own children reparent here when it dies, so this finds every descendant
// by construction, whatever they did to their environment. It returns how
// many it killed.
func strays(tag string, reap bool) int {
	n := killTagged(tag)
	if !subreaper() {
		return n
	}
	self := os.Getpid()
	sid, _ := unix.Getsid(0)
	for pass := 0; pass < 1000; pass++ {
		found := 0
		for _, p := range Procs() {
			if !isOrphan(p, self, sid) {
				continue
			}
			if p.State != "Z" && syscall.Kill(p.PID, syscall.SIGKILL) == nil {
				n++
			}
			found++
			if reap {
				var ws unix.WaitStatus
				_, _ = unix.Wait4(p.PID, &ws, 0, nil)
			}
		}
		if found == 0 || !reap {
			break
		}
	}
	return n
}

// killTagged SIGKILLs every process (but this one) whose environment holds
// the tag, a few passes over, for a process that forks while it is walked.
func killTagged(tag string) int {
	if tag == "" {
		return 0
	}
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
