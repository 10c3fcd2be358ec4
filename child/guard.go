package child

import (
	"log/slog"
	"os"
	"os/exec"
	"strconv"
)

// The guard's environment: what it kills when flower is gone.
const (
	envGuardCgroup = "FLOWER_GUARD_CGROUP" // a cgroup directory: cgroup.kill, then rmdir
	envGuardPGID   = "FLOWER_GUARD_PGID"   // a process group: SIGKILL, and with /proc every process carrying the tag ($1)
)

// guardScript ($1: the child's tag) waits for a line on stdin, from a pipe only flower holds the
// other end of. "release" means flower has cleaned up itself; EOF without
// it means flower is gone, however it died, even by SIGKILL, when no code of
// flower could run: the guard then kills what the child left. It ignores
// the signals a stop sends to the child's group, so that it lasts to the
// end.
const guardScript = `trap '' INT TERM HUP
read x
[ "$x" = release ] && exit 0
if [ -n "$` + envGuardCgroup + `" ]; then
	echo 1 > "$` + envGuardCgroup + `/cgroup.kill"
	i=0
	until rmdir "$` + envGuardCgroup + `" 2>/dev/null; do
		i=$((i+1))
		[ $i -gt 300 ] && exit 1
		sleep 0.01
	done
	exit 0
fi
if [ -d /proc/self ]; then
	for pass in 1 2 3 4; do
		found=
		for f in $(grep -l -F "` + EnvTag + `=$1" /proc/[0-9]*/environ 2>/dev/null); do
			p=${f#/proc/}
			kill -s KILL "${p%/environ}" 2>/dev/null && found=1
		done
		[ -z "$found" ] && break
	done
fi
kill -s KILL -- "-$` + envGuardPGID + `"`

// GuardName is the guard's $0: a guard's command line is sh -c SCRIPT
// GuardName TAG, TAG being the tag of the child it guards.
const GuardName = "flower-guard"

// guard is the process that cleans up after flower when flower cannot: the
// parent-death signal reaches the child alone, not a descendant in a
// session or cgroup of its own.
type guard struct {
	cmd *exec.Cmd
	w   *os.File
}

// startGuard starts the guard for the child box says. Without a shell the
// child runs unguarded against flower's own death, and log says so.
func startGuard(b box, pid int, tag string, pty bool, log *slog.Logger) *guard {
	sh, err := exec.LookPath("sh")
	if err != nil {
		log.Warn("no guard for the child if flower dies", "err", err)
		return nil
	}
	r, w, err := os.Pipe()
	if err != nil {
		log.Warn("no guard for the child if flower dies", "err", err)
		return nil
	}
	attr, env := b.guardSetup(pid, tag, pty)
	cmd := exec.Command(sh, "-c", guardScript, GuardName, tag)
	cmd.Stdin = r
	// Not the child's environment: the guard must not carry the tag.
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH") + ":/usr/bin:/bin"}, env...)
	cmd.SysProcAttr = attr
	err = cmd.Start()
	r.Close()
	if err != nil {
		w.Close()
		log.Warn("no guard for the child if flower dies", "err", err)
		return nil
	}
	addOurs(cmd.Process.Pid)
	return &guard{cmd: cmd, w: w}
}

// release tells the guard that flower has cleaned up, and collects it.
func (g *guard) release() {
	if g == nil {
		return
	}
	_, _ = g.w.WriteString("release\n")
	g.w.Close()
	_ = g.cmd.Wait()
	dropOurs(g.cmd.Process.Pid)
}

func itoa(n int) string { return strconv.Itoa(n) }
