// Command e2ebench measures what a handoff costs end to end (`make
// bench-e2e`): the real harness and the flower binary against the scripted
// Messages API on 127.0.0.1 (package scriptedapi), side by side in one run,
// printed as one table. It is a measurement, not a test: it prints figures
// and the goals they are held to, every run of each (never only the best),
// and the machine's load with them, since figures taken on a loaded
// machine say more about the machine.
//
// The baseline is the bare harness started as flower's headless front
// starts it (the stream-json flags, flower's compaction levers, and the
// harness's key scrub where flower switches it on), its first prompt
// written at once; cold starts are taken in pairs with
// flower's. The job is three generations of instant Bash rounds under
// --window 200000 (handoffs at 150k). Times are read off the scripted
// server's clock (when a request arrived, when its answer was written in
// full) and off flower's own line trace (harness.EnvTrace: when flower
// read a harness's line, when it wrote one to its stdin), which gives
// flower's reaction to the crossing reply and its own share of a switch.
// Flower's own CPU and peak RSS are read from /proc while it runs; the CPU
// of the whole job (flower and every harness it waited for) from its
// rusage. Beside them, the bare harness's own floor: sessions of it driven
// as flower drives one by a driver that takes no time (warmed with a blank
// prompt, then prompted; cut by an interrupt written as the reply is
// read), which says how much of a switch and of a cut is the harness's.
// Then: a soak of -soak generations whose writing turns answer at
// once, counting degraded handoffs; flower's CPU while the harness waits
// -slow on the model; the interactive switch (flower -i in a pty) beside a
// bare screen started with a prompt, -tui pairs. The stream figures run
// flower on the fake harness of package harnesstest (this binary,
// re-executed), which writes a stream of 64 KiB tool-result lines of the
// given size.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/flowerhq/flower/child"
	"github.com/flowerhq/flower/harness"
	"github.com/flowerhq/flower/harness/harnesstest"
	"github.com/flowerhq/flower/levers"
	"github.com/flowerhq/flower/scriptedapi"
)

func main() {
	harnesstest.Main() // this binary is also the fake harness of the stream figures
	if err := run(context.Background(), os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "e2ebench:", err)
		os.Exit(1)
	}
}

type config struct {
	flower, harness string
	bare, runs      int
	soak, tuis      int
	streams         []int
	writing, slow   time.Duration
	verbose         bool
}

func run(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("e2ebench", flag.ContinueOnError)
	var c config
	fs.StringVar(&c.flower, "flower", "bin/flower", "the flower binary")
	fs.StringVar(&c.harness, "harness", os.Getenv("FLOWER_HARNESS"), "the claude executable (FLOWER_HARNESS)")
	fs.IntVar(&c.bare, "bare", 7, "cold starts of the bare harness and of flower, in pairs, to take the medians of (at least 5)")
	fs.IntVar(&c.runs, "runs", 3, "flower jobs of three generations")
	streams := fs.String("streams", "10,500", "stream sizes in MB for flower's RSS; empty for none")
	keep := fs.Bool("keep", false, "keep the workspaces and run dirs (flower.log) and say where")
	fs.BoolVar(&c.verbose, "v", false, "print each job's requests with their times")
	fs.DurationVar(&c.writing, "writing", 3*time.Second, "how long the scripted writing turn takes to answer (a real one writes ~1k tokens: 10 s or more)")
	fs.IntVar(&c.soak, "soak", 10, "generations of the soak (instant tools, a writing turn that answers at once); 0 for none")
	fs.DurationVar(&c.slow, "slow", 10*time.Second, "how long the slow model takes, while flower's CPU is read; 0 for none")
	fs.IntVar(&c.tuis, "tui", 3, "pairs of a bare screen's start and flower -i's switch; 0 for none")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if c.harness == "" {
		return errors.New("no harness: set FLOWER_HARNESS or -harness")
	}
	if c.bare < 5 && c.runs > 0 {
		return errors.New("-bare must be at least 5")
	}
	for _, s := range strings.Split(*streams, ",") {
		if strings.TrimSpace(s) == "" {
			continue
		}
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil {
			return fmt.Errorf("-streams: %w", err)
		}
		c.streams = append(c.streams, n)
	}
	var err error
	if c.flower, err = filepath.Abs(c.flower); err != nil {
		return err
	}
	scratch, err := os.MkdirTemp("", "e2ebench-")
	if err != nil {
		return err
	}
	if *keep {
		fmt.Fprintln(out, "workspaces kept in", scratch)
	} else {
		defer os.RemoveAll(scratch)
	}
	b := &bench{config: c, scratch: scratch}
	load0 := loadavg()

	fig, err := b.all(ctx)
	if err != nil {
		return err
	}
	fig.load0, fig.load1 = load0, loadavg()
	report(out, c, fig)
	return nil
}

// figures are everything the bench measured, every run of it.
type figures struct {
	bare, starts []time.Duration
	floor        *floorFigures
	jobs         []jobFigures
	soak         *jobFigures
	soakErr      error // how a soak that ran some handoffs went wrong
	idle         *idleFigures
	tui          *tuiFigures
	rss          []streamFigures
	load0, load1 string
}

// all takes the figures, one kind after another.
func (b *bench) all(ctx context.Context) (f figures, err error) {
	if b.runs > 0 {
		if f.bare, f.starts, err = b.starts(ctx); err != nil {
			return f, fmt.Errorf("cold starts: %w", err)
		}
		fl, err := b.floor(ctx)
		if err != nil {
			return f, fmt.Errorf("the bare harness's floor: %w", err)
		}
		f.floor = &fl
	}
	for i := range b.runs {
		j, err := b.job(ctx, i, 3, b.writing)
		if err != nil {
			return f, fmt.Errorf("flower job %d: %w", i+1, err)
		}
		f.jobs = append(f.jobs, j)
	}
	if b.soak > 1 {
		// A degraded handoff is a figure here, not a failure of the bench.
		j, err := b.job(ctx, len(f.jobs), b.soak, 0)
		if err != nil && len(j.gaps) == 0 {
			return f, fmt.Errorf("soak: %w", err)
		}
		f.soak, f.soakErr = &j, err
	}
	if b.slow > 0 {
		i, err := b.idle(ctx)
		if err != nil {
			return f, fmt.Errorf("slow model: %w", err)
		}
		f.idle = &i
	}
	if b.tuis > 0 {
		t, err := b.tui(ctx)
		if err != nil {
			return f, fmt.Errorf("interactive: %w", err)
		}
		f.tui = &t
	}
	for _, mb := range b.streams {
		r, err := b.stream(ctx, mb)
		if err != nil {
			return f, fmt.Errorf("stream of %d MB: %w", mb, err)
		}
		f.rss = append(f.rss, r)
	}
	return f, nil
}

type bench struct {
	config
	scratch string
	n       int
}

func (b *bench) dir(name string) string {
	b.n++
	d := filepath.Join(b.scratch, fmt.Sprintf("%s-%d", name, b.n))
	if err := os.MkdirAll(d, 0o755); err != nil {
		panic(err)
	}
	return d
}

// env is a harness's environment: nothing of this machine's ANTHROPIC_* or
// CLAUDE* settings, a HOME of its own, and the scripted server.
func (b *bench) env(srv *scriptedapi.Server) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "ANTHROPIC_") || strings.HasPrefix(k, "CLAUDE") || k == "HOME" || k == "DISABLE_AUTO_COMPACT" || strings.HasPrefix(k, "FLOWER_FAKE") {
			continue
		}
		env = append(env, kv)
	}
	env = append(env, "HOME="+b.dir("home"))
	return append(env, srv.Env()...)
}

// bareArgs start the bare harness as flower's headless front does: the
// stream-json flags, flower's compaction levers in --settings (with a hook
// that blocks and records nothing), the job's own flags.
func bareArgs() []string {
	return harness.Config{Args: levers.Args([]string{"--allowedTools", "Bash"}, levers.Own{}, levers.BlockOnly)}.Argv()
}

// bareHarness is the bare harness's command, in a workspace of its own
// named after what it is for.
func (b *bench) bareHarness(ctx context.Context, srv *scriptedapi.Server, name string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, b.harness, bareArgs()...)
	cmd.Dir = b.dir(name)
	cmd.Env = bareEnv(b.env(srv))
	return cmd
}

// bareEnv is env as flower gives it to its harness: compaction off, and
// the harness's scrub of the tools' keys on where flower switches it on
// (levers.Scrub), for the scrub is part of how flower starts the harness
// and costs it time (a cold start, each tool's run).
func bareEnv(env []string) []string {
	env, _, _ = levers.Scrub(append(env, "DISABLE_AUTO_COMPACT=1"))
	return env
}

// starts takes cold starts in pairs, side by side: the bare harness, as
// flower starts it, with its first prompt written at once, then flower
// on a one-turn task; each measured from spawn to its first API request.
// Pairs, because one start varies by ±100 ms on a shared machine, far more
// than what flower adds.
func (b *bench) starts(ctx context.Context) (bare, flower []time.Duration, err error) {
	srv, err := scriptedapi.Start(scriptedapi.Harmless)
	if err != nil {
		return nil, nil, err
	}
	defer srv.Close()
	first := func(before int) (time.Time, error) {
		for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(2 * time.Millisecond) {
			for _, r := range srv.Requests()[before:] {
				if r.Kind == scriptedapi.KindMain {
					return r.Time, nil
				}
			}
		}
		return time.Time{}, errors.New("no request within 60 s")
	}
	bareStart := func() (time.Duration, error) {
		before := len(srv.Requests())
		cmd := b.bareHarness(ctx, srv, "bare")
		stdin, err := cmd.StdinPipe()
		if err != nil {
			return 0, err
		}
		cmd.Stdout = io.Discard
		spawn := time.Now()
		if err := cmd.Start(); err != nil {
			return 0, err
		}
		_, _ = io.WriteString(stdin, `{"type":"user","message":{"role":"user","content":"Say ok."}}`+"\n")
		t, err := first(before)
		stdin.Close()
		_ = cmd.Wait()
		if err != nil {
			return 0, fmt.Errorf("bare harness: %w", err)
		}
		return t.Sub(spawn), nil
	}
	flowerStart := func() (time.Duration, error) {
		before := len(srv.Requests())
		ws := b.dir("start")
		p, err := b.flowerRun(ctx, []string{"-C", ws, "--run-dir", filepath.Join(ws, "run"), "-q", "Say ok.", "--", "--allowedTools", "Bash"},
			append(b.env(srv), "FLOWER_HARNESS="+b.harness), nil)
		if err != nil {
			return 0, err
		}
		t, err := first(before)
		if err != nil {
			return 0, fmt.Errorf("flower (exit %d): %w\n%s", p.code, err, p.output)
		}
		return t.Sub(p.spawn), nil
	}
	// Each pair takes its two starts in turn, the first one alternating:
	// a start right after another finds more of the harness in the page
	// cache.
	for i := range b.bare {
		var bd, fd time.Duration
		if i%2 == 0 {
			if bd, err = bareStart(); err == nil {
				fd, err = flowerStart()
			}
		} else {
			if fd, err = flowerStart(); err == nil {
				bd, err = bareStart()
			}
		}
		if err != nil {
			return nil, nil, err
		}
		bare, flower = append(bare, bd), append(flower, fd)
	}
	return bare, flower, nil
}

type streamFigures struct {
	mb      int
	peakRSS int // KiB
	wall    time.Duration
}

// stream runs flower on the fake harness writing mb MB of tool-result lines
// in one turn.
func (b *bench) stream(ctx context.Context, mb int) (streamFigures, error) {
	self, err := os.Executable()
	if err != nil {
		return streamFigures{}, err
	}
	ws := b.dir("stream")
	env := harnesstest.Env(harnesstest.ModeStream, harnesstest.EnvStreamBytes+"="+strconv.Itoa(mb<<20),
		harnesstest.EnvContext+"=20000", "FLOWER_HARNESS="+self, "HOME="+b.dir("home"))
	p, err := b.flowerRun(ctx, []string{"-C", ws, "--run-dir", filepath.Join(ws, "run"), "--window", "200000", "-q", "Stream."}, env, nil)
	if err != nil {
		return streamFigures{}, err
	}
	if p.code != 0 {
		return streamFigures{}, fmt.Errorf("flower exited %d:\n%s", p.code, p.output)
	}
	return streamFigures{mb: mb, peakRSS: p.peakRSS, wall: p.wall}, nil
}

type flowerProc struct {
	spawn            time.Time
	wall             time.Duration
	code             int
	output           string
	ownCPU, totalCPU time.Duration
	peakRSS          int // KiB
}

// flowerRun runs the flower binary to its end, sampling its own CPU time
// and peak RSS (VmHWM) from /proc while it runs.
// onStart, when not nil, is told flower's pid as it starts.
func (b *bench) flowerRun(ctx context.Context, args, env []string, onStart func(pid int)) (flowerProc, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute) // a hang guard
	defer cancel()
	cmd := exec.CommandContext(ctx, b.flower, args...)
	cmd.Env = env
	var outBuf strings.Builder
	var mu sync.Mutex
	cmd.Stdout = io.Discard
	cmd.Stderr = writerFunc(func(p []byte) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		if outBuf.Len() < 1<<16 {
			outBuf.Write(p)
		}
		return len(p), nil
	})
	var p flowerProc
	p.spawn = time.Now()
	if err := cmd.Start(); err != nil {
		return p, err
	}
	pid := cmd.Process.Pid
	if onStart != nil {
		onStart(pid)
	}
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			if kib := child.PeakRSS(pid); kib > 0 {
				p.peakRSS = kib
			}
			if cpu := procCPU(pid); cpu > 0 {
				p.ownCPU = cpu
			}
			select {
			case <-stop:
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
	}()
	// Reap only after the last sample: wait for the exit without reaping,
	// so /proc/<pid> still holds the final figures.
	for errors.Is(waitExit(pid), syscall.EINTR) {
	}
	if kib := child.PeakRSS(pid); kib > 0 {
		p.peakRSS = kib
	}
	if cpu := procCPU(pid); cpu > 0 {
		p.ownCPU = cpu
	}
	close(stop)
	<-sampled
	err := cmd.Wait()
	p.wall = time.Since(p.spawn)
	p.code = exitCode(err)
	if st := cmd.ProcessState; st != nil {
		p.totalCPU = st.UserTime() + st.SystemTime()
	}
	mu.Lock()
	p.output = outBuf.String()
	mu.Unlock()
	return p, nil
}

type writerFunc func([]byte) (int, error)

func (w writerFunc) Write(p []byte) (int, error) { return w(p) }

func exitCode(err error) int {
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		return ee.ExitCode()
	}
	return -1
}

// procCPU is the process's own user + system time, without its children's.
func procCPU(pid int) time.Duration {
	p, _ := child.ReadProcStat(pid)
	return p.CPU
}

func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	return strings.Join(f[:3], " ")
}

func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// msList lists durations in milliseconds; signed, with a sign.
func msList(ds []time.Duration) string { return msFormat(ds, "%.1f") }

func signedMsList(ds []time.Duration) string { return msFormat(ds, "%+.0f") }

func msFormat(ds []time.Duration, format string) string {
	if len(ds) == 0 {
		return "none"
	}
	var out []string
	for _, d := range ds {
		out = append(out, fmt.Sprintf(format, d.Seconds()*1000))
	}
	return strings.Join(out, ", ") + " ms"
}

func header(n int) string {
	var h []string
	for i := range n {
		h = append(h, fmt.Sprintf("run %d", i+1))
	}
	return strings.Join(h, "\t")
}

func list(ds []time.Duration) string {
	var s []string
	for _, d := range ds {
		s = append(s, fmt.Sprintf("%.3f", d.Seconds()))
	}
	return strings.Join(s, ", ") + " s"
}

func clip(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

func mib(kib int) string { return fmt.Sprintf("%.1f MiB", float64(kib)/1024) }

func yes(ok bool) string {
	if ok {
		return "yes"
	}
	return "NO"
}

func numCPU() int {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return 0
	}
	return strings.Count(string(b), "processor\t:")
}
