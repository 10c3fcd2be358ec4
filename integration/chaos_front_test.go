package integration_test

import (
	"bytes"
	"os/exec"
	"sync"
	"syscall"
)

// front is one way of running flower that the campaign drives: headless
// today (flower TASK on stream-json); an interactive front runs it under
// tmux. The campaign knows nothing else about a front: it starts flower,
// injects faults by pid, waits for the exit and continues.
type front interface {
	name() string
	// start runs flower in the round's workspace on the round's task, or
	// (cont) picks the round's step up with `flower continue`.
	start(r *round, cont bool) (flowerHandle, error)
	// takes reports whether the front can take a fault kind.
	takes(k faultKind) bool
}

// flowerHandle is one flower process a front started.
type flowerHandle interface {
	pid() int
	// exited is closed once flower has exited and been reaped.
	exited() <-chan struct{}
	// exitCode is flower's exit status (-1 when killed by a signal);
	// valid after exited.
	exitCode() int
	// output is what flower printed.
	output() string
}

// headless runs `flower TASK` and `flower continue` as a user at a shell
// does, in a process group of its own so that a signal reaches flower
// alone.
type headless struct{}

func (headless) name() string         { return "headless" }
func (headless) takes(faultKind) bool { return true }

func (headless) start(r *round, cont bool) (flowerHandle, error) {
	args := []string{"-C", r.ws, "--run-dir", r.runDir, "--window", "200000", "--max-attempts", "6", "-q", "--limit-backoff", "1s"}
	if cont {
		args = append([]string{"continue"}, args...)
	} else {
		args = append(args, r.task)
	}
	args = append(args, "--", "--allowedTools", "Bash")
	p := &proc{done: make(chan struct{})}
	p.cmd = exec.Command(r.flower, args...)
	p.cmd.Env = r.env
	p.cmd.Stdout, p.cmd.Stderr = lockedWriter{&p.mu, &p.out}, lockedWriter{&p.mu, &p.out}
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := p.cmd.Start(); err != nil {
		return nil, err
	}
	go func() {
		p.code = exitCode(p.cmd.Wait())
		close(p.done)
	}()
	return p, nil
}

// proc is a flower started with os/exec.
type proc struct {
	cmd  *exec.Cmd
	done chan struct{}
	code int

	mu  sync.Mutex
	out bytes.Buffer
}

func (p *proc) pid() int                { return p.cmd.Process.Pid }
func (p *proc) exited() <-chan struct{} { return p.done }
func (p *proc) exitCode() int           { return p.code }

func (p *proc) output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.String()
}

// interactive runs `flower -i TASK` in a tmux pane, as a person at a
// terminal does, with a person at the screen (tmuxFlower.person) who types
// "go on" when a turn ended in an error and /exit once the job is done.
// `flower continue` resumes an interactive step headless (the README's
// Interactive mode section), so a continuation runs as the headless
// front's does.
type interactive struct{}

func (interactive) name() string { return "interactive" }

// takes: every kind. A limit is not waited out on the interactive front:
// the screen shows it, and the person types on once the harness has sat
// idle (8 s, past the limits' resets of 1 and 2 s).
func (interactive) takes(faultKind) bool { return true }

// late: flower stopped by a signal is continued headless, so those faults
// land in the last session, after the other faults met the interactive
// front.
func (interactive) late(k faultKind) bool { return k == faultKillFlower || k == faultTermFlower }

func (interactive) start(r *round, cont bool) (flowerHandle, error) {
	if cont {
		return headless{}.start(r, true)
	}
	seedHarnessHome(r.t, r.home, r.ws, r.key)
	var env []string
	for _, kv := range r.env {
		if kv != r.marker {
			env = append(env, kv)
		}
	}
	argv := []string{r.flower, "-i", "-C", r.ws, "--run-dir", r.runDir, "--window", "200000", "--max-attempts", "6", r.task,
		"--", "--permission-mode", "dontAsk", "--allowedTools", "Bash"}
	f, err := startTmuxFlower(r.t, env, []string{r.marker}, r.ws, argv)
	if err != nil {
		return nil, err
	}
	f.startPerson(r.home, r.harness, r.model.finished, nil, r.note)
	return f, nil
}
