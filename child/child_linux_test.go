package child

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The test binary, started with envParent set, becomes a small flower: it
// starts one child (with pipes or in a pty, as envParent says) whose tool
// escapes every way it can — a session of its own, an empty environment —
// writes "ready CONTAINMENT" once the tool has written its pid, and stops
// the child when its stdin closes.
const (
	envParent   = "CHILD_TEST_PARENT"
	envPidFile  = "CHILD_TEST_PIDFILE"
	envNoCgroup = "CHILD_TEST_NO_CGROUP"
	envKeepEnv  = "CHILD_TEST_KEEP_ENV" // the tool keeps its environment, and so the tag
	envOrphan   = "CHILD_TEST_ORPHAN"   // the tool is an orphan that ends on its own (orphanScript)
)

// escapeeScript is the child: a tool that calls setsid and clears its
// environment, then sleeps; $1 is where it writes its pid.
const escapeeScript = `setsid env -i /bin/sh -c 'echo $$ > "$0"; exec /bin/sleep 1000' "$1" & trap '' INT TERM; sleep 1000`

// orphanScript leaves a tool orphaned at once (its parent, a subshell,
// exits) that ends by itself a moment later.
const orphanScript = `(setsid /bin/sh -c 'echo $$ > "$0"; exec /bin/sleep 0.3' "$1" &); trap '' INT TERM; sleep 1000`

// taggedScript is the same tool, keeping its environment.
const taggedScript = `setsid /bin/sh -c 'echo $$ > "$0"; exec /bin/sleep 1000' "$1" & trap '' INT TERM; sleep 1000`

func TestMain(m *testing.M) {
	if mode := os.Getenv(envParent); mode != "" {
		os.Exit(parentMain(mode))
	}
	os.Exit(m.Run())
}

func parentMain(mode string) int {
	if os.Getenv(envNoCgroup) != "" {
		cgroupOff.Store(true) // as on a machine where none can be made
	}
	pidFile := os.Getenv(envPidFile)
	script := escapeeScript
	if os.Getenv(envKeepEnv) != "" {
		script = taggedScript
	}
	if os.Getenv(envOrphan) != "" {
		script = orphanScript
	}
	p, err := Start(context.Background(), Config{
		Path: "/bin/sh", Args: []string{"-c", script, "child", pidFile},
		PTY: mode == "pty", Grace: 200 * time.Millisecond,
	})
	if err != nil {
		fmt.Println("start:", err)
		return 1
	}
	if p.PTY() != nil {
		go func() { _, _ = io.Copy(io.Discard, p.PTY()) }()
	}
	for deadline := time.Now().Add(5 * time.Second); readPid(pidFile) == 0 && os.Getenv(envOrphan) == ""; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			fmt.Println("the tool did not start")
			return 1
		}
	}
	fmt.Println("ready", p.Containment())
	_, _ = io.Copy(io.Discard, os.Stdin)
	p.Stop(nil, syscall.SIGTERM, syscall.SIGKILL)
	return 0
}

// startParent starts the test binary as a small flower (parentMain) with
// env added, in a process group of its own, and returns it, its stdin
// (closing it stops the child) and the first line it wrote.
func startParent(t *testing.T, env ...string) (*exec.Cmd, io.Closer, string) {
	t.Helper()
	parent := exec.Command(os.Args[0], "-test.run=^$")
	parent.Env = append(os.Environ(), env...)
	parent.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	in, err := parent.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := parent.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := parent.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Kill(-parent.Process.Pid, syscall.SIGKILL); _ = parent.Wait() })
	line, _ := bufio.NewReader(out).ReadString('\n')
	return parent, in, line
}

func readPid(file string) int {
	b, _ := os.ReadFile(file)
	n, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return n
}

func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := strings.LastIndexByte(string(b), ')')
	return i >= 0 && !strings.HasPrefix(strings.TrimSpace(string(b[i+1:])), "Z")
}

// A tool that leaves the harness's session and clears its environment dies
// with flower all the same: when flower stops the harness, and when flower
// is killed by SIGKILL, when no code of flower runs — on both fronts
// (pipes, pty). Without a cgroup (the way down, on a machine that allows
// none), flower reaps such a tool as a subreaper while it lives; after a
// SIGKILL of flower only a tool that kept the tag in its environment can be
// found (DESIGN.md «Signals and orphans»), so that row's tool keeps it.
func TestNothingOutlivesFlower(t *testing.T) {
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skip("no setsid here")
	}
	cg, cgErr := ownCgroup()
	for _, mode := range []string{"pipes", "pty"} {
		for _, way := range []string{"cgroup", "subreaper"} {
			for _, end := range []string{"stop", "SIGKILL"} {
				t.Run(mode+"/"+way+"/"+end, func(t *testing.T) {
					t.Parallel()
					pidFile := filepath.Join(t.TempDir(), "escapee")
					env := []string{envParent + "=" + mode, envPidFile + "=" + pidFile}
					if way == "subreaper" {
						env = append(env, envNoCgroup+"=1")
						if end == "SIGKILL" {
							env = append(env, envKeepEnv+"=1")
						}
					}
					parent, in, line := startParent(t, env...)
					got, ok := strings.CutPrefix(strings.TrimSpace(line), "ready ")
					if !ok {
						t.Fatalf("the parent said %q", line)
					}
					if way == "cgroup" && got != "cgroup" {
						if cgErr == nil {
							t.Fatalf("containment %q, want a cgroup (%s is this test's own)", got, cg)
						}
						t.Skipf("no cgroup can be made here (%v): containment %q", cgErr, got)
					}
					if way == "subreaper" && got != "subreaper" {
						t.Fatalf("containment %q, want subreaper", got)
					}
					escapee := readPid(pidFile)
					if !alive(escapee) {
						t.Fatalf("the tool %d is not running", escapee)
					}
					if end == "SIGKILL" {
						if err := parent.Process.Kill(); err != nil {
							t.Fatal(err)
						}
					} else {
						in.Close()
					}
					_ = parent.Wait()
					gone := time.Now()
					for alive(escapee) {
						if time.Since(gone) > 5*time.Second {
							t.Fatalf("the tool %d outlived flower's %s by 5s", escapee, end)
						}
						time.Sleep(10 * time.Millisecond)
					}
					t.Logf("the tool was gone %v after flower's %s", time.Since(gone).Round(time.Millisecond), end)
					if way == "cgroup" {
						for {
							left, _ := filepath.Glob(filepath.Join(cg, fmt.Sprintf("flower-%d-*", parent.Process.Pid)))
							if len(left) == 0 {
								break
							}
							if time.Since(gone) > 5*time.Second {
								t.Fatalf("cgroups left behind: %v", left)
							}
							time.Sleep(10 * time.Millisecond)
						}
					}
				})
			}
		}
	}
}

// Without a cgroup, flower is the subreaper of what its children leave: an
// orphan that ends on its own is reaped when it ends, not left a zombie of
// flower until the next harness ends.
func TestOrphansAreReaped(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "orphan")
	parent, _, line := startParent(t, envParent+"=pipes", envPidFile+"="+pidFile, envNoCgroup+"=1", envOrphan+"=1")
	if strings.TrimSpace(line) != "ready subreaper" {
		t.Fatalf("the parent said %q", line)
	}
	var orphan int
	for deadline := time.Now().Add(5 * time.Second); orphan == 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the orphan did not start")
		}
		orphan = readPid(pidFile)
	}
	adopted := false
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(orphan) + "/stat")
		if err != nil {
			break // reaped
		}
		st := string(b)
		if f := strings.Fields(st[strings.LastIndexByte(st, ')')+1:]); len(f) > 1 && f[1] == strconv.Itoa(parent.Process.Pid) {
			adopted = true
		}
		if time.Now().After(deadline) {
			t.Fatalf("the orphan was not reaped 5s after it started: %s", st)
		}
	}
	if !adopted {
		t.Error("the orphan was never seen a child of flower: the premise, a subreaper, does not hold")
	}
}

// BenchmarkStart measures what starting a child costs: /bin/true, started
// and gone, in a cgroup of its own (where one can be made here), or with
// CHILD_BENCH_NO_CGROUP=1 in the process group, flower a subreaper.
func BenchmarkStart(b *testing.B) {
	if os.Getenv("CHILD_BENCH_NO_CGROUP") != "" {
		cgroupOff.Store(true) // as on a machine where none can be made
	}
	for b.Loop() {
		p, err := Start(context.Background(), Config{Path: "/bin/true"})
		if err != nil {
			b.Fatal(err)
		}
		<-p.Done()
	}
}

// Where the cgroup v2 hierarchy is found, on the layouts machines have.
func TestCgroupPaths(t *testing.T) {
	mounts := []struct {
		name, mountinfo, want string
	}{
		{"unified", "25 30 0:23 / /sys/fs/cgroup rw,nosuid shared:9 - cgroup2 cgroup2 rw,nsdelegate\n", "/sys/fs/cgroup"},
		{"hybrid", "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n" +
			"32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n" +
			"41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n", "/sys/fs/cgroup/unified"},
		{"a part of the hierarchy", "41 31 0:38 /docker/abc /sys/fs/cgroup ro - cgroup2 cgroup2 rw\n", ""},
		{"v1 alone", "32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n", ""},
	}
	for _, m := range mounts {
		got, err := parseCgroup2Mount(strings.NewReader(m.mountinfo))
		if got != m.want || (err == nil) != (m.want != "") {
			t.Errorf("%s: mount %q (%v), want %q", m.name, got, err, m.want)
		}
	}
	files := []struct {
		name, file, want string
	}{
		{"unified", "0::/user.slice/user-1000.slice/session-2.scope\n", "/user.slice/user-1000.slice/session-2.scope"},
		{"hybrid", "4:memory:/process_api/ec87\n1:cpu:/\n0::/\n", "/"},
		{"v1 alone", "4:memory:/x\n1:cpu:/\n", ""},
	}
	for _, f := range files {
		got, err := parseCgroupFile([]byte(f.file))
		if got != f.want || (err == nil) != (f.want != "") {
			t.Errorf("%s: cgroup %q (%v), want %q", f.name, got, err, f.want)
		}
	}
}
