// Command e2ebench measures what a handoff costs end to end (`make
// bench-e2e`): the real harness and the flower binary against the scripted
// Messages API on 127.0.0.1 (package scriptedapi), side by side in one run,
// printed as one table. It is a measurement, not a test: it prints figures
// and the goals they are held to, and the machine's load with them, since
// figures taken on a loaded machine say more about the machine.
//
// The job is three generations of instant Bash tool rounds under
// --window 200000 (handoffs at 150k). Times are read off the scripted
// server's clock: when a request arrived, when its answer was written in
// full. Flower's own CPU and peak RSS are read from /proc while it runs;
// the CPU of the whole job (flower and every harness it waited for) from
// its rusage. The stream figures run flower on the fake harness of package
// harnesstest (this binary, re-executed), which writes a stream of 64 KiB
// tool-result lines of the given size.
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
	"text/tabwriter"
	"time"

	"github.com/flowerhq/flower/child"
	"github.com/flowerhq/flower/handoffwriter"
	"github.com/flowerhq/flower/harness/harnesstest"
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
	streams         []int
	writing         time.Duration
	verbose         bool
}

func run(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("e2ebench", flag.ContinueOnError)
	var c config
	fs.StringVar(&c.flower, "flower", "bin/flower", "the flower binary")
	fs.StringVar(&c.harness, "harness", os.Getenv("FLOWER_HARNESS"), "the claude executable (FLOWER_HARNESS)")
	fs.IntVar(&c.bare, "bare", 7, "cold starts of the bare harness and of flower, in pairs, to take the medians of (at least 5)")
	fs.IntVar(&c.runs, "runs", 3, "flower jobs of three generations")
	streams := fs.String("streams", "10,500", "stream sizes in MB for flower's RSS")
	keep := fs.Bool("keep", false, "keep the workspaces and run dirs (flower.log) and say where")
	fs.BoolVar(&c.verbose, "v", false, "print each job's requests with their times")
	fs.DurationVar(&c.writing, "writing", 3*time.Second, "how long the scripted writing turn takes to answer (a real one writes ~1k tokens: 10 s or more)")
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

	var bare, starts []time.Duration
	if c.runs > 0 {
		if bare, starts, err = b.starts(ctx); err != nil {
			return fmt.Errorf("cold starts: %w", err)
		}
	}
	var jobs []jobFigures
	for i := range c.runs {
		j, err := b.job(ctx, i)
		if err != nil {
			return fmt.Errorf("flower job %d: %w", i+1, err)
		}
		jobs = append(jobs, j)
	}
	var rss []streamFigures
	for _, mb := range c.streams {
		r, err := b.stream(ctx, mb)
		if err != nil {
			return fmt.Errorf("stream of %d MB: %w", mb, err)
		}
		rss = append(rss, r)
	}
	report(out, c, bare, starts, jobs, rss, load0, loadavg())
	return nil
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
		cmd := exec.CommandContext(ctx, b.harness, "-p", "--input-format", "stream-json", "--output-format", "stream-json", "--verbose", "--allowedTools", "Bash")
		cmd.Dir = b.dir("bare")
		cmd.Env = append(b.env(srv), "DISABLE_AUTO_COMPACT=1")
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
			append(b.env(srv), "FLOWER_HARNESS="+b.harness))
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

// script is the job: each generation works in instant Bash rounds up to
// the threshold, its writing turn answers a complete handoff, and the
// third generation finishes.
type script struct {
	mu       sync.Mutex
	gen, i   int
	crossing map[int]bool // request seqs whose reply crossed the threshold
	tools    map[int]bool // request seqs answered with a tool call, not crossing
	writing  time.Duration
}

func usage(ctx int) scriptedapi.Usage {
	return scriptedapi.Usage{InputTokens: 100, CacheReadInputTokens: ctx - 100, OutputTokens: 50}
}

func (s *script) reply(r *scriptedapi.Request) scriptedapi.Reply {
	if r.Kind != scriptedapi.KindMain {
		return scriptedapi.Harmless(r)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if strings.Contains(r.LastUserText, handoffwriter.PromptTag) {
		s.gen++
		s.i = 0
		return scriptedapi.Reply{Usage: usage(156_000), Delay: s.writing, Text: fmt.Sprintf("## 现在在做 (doing)\nGeneration %d appended lines to work.txt.\n\n"+
			"## 已定的事 (decided)\n- One line per round.\n\n## 走不通的 (deadends)\n(空)\n\n## 下一步 (next)\nAppend the next line.\n\n## 现场 (scene)\n- work.txt\n", s.gen)}
	}
	plan := []int{40_000, 80_000, 110_000, 135_000, 155_000}
	if s.gen == 2 {
		plan = []int{30_000, 35_000, 40_000}
	}
	s.i++
	if s.gen == 2 && s.i >= len(plan) {
		return scriptedapi.Reply{Text: "All done: the task is complete.", Usage: usage(40_000)}
	}
	// Past the threshold the work goes on until the cut lands.
	ctx := plan[min(s.i, len(plan))-1]
	if ctx >= 150_000 {
		s.crossing[r.Seq] = true
	} else {
		s.tools[r.Seq] = true
	}
	return scriptedapi.Reply{Text: "appending", Usage: usage(ctx), ToolUses: []scriptedapi.ToolUse{{Name: "Bash",
		Input: map[string]any{"command": "echo line >> work.txt", "description": "append a line"}}}}
}

type jobFigures struct {
	firstRequest time.Duration   // flower spawn → generation 1's first request
	gaps         []time.Duration // writing turn's answer → successor's first request
	cuts         []time.Duration // the reply over the threshold → the writing request
	toolRTT      time.Duration   // median: a tool call's answer → the request with its result
	rtts         []time.Duration
	countTokens  int
	bursts       int
	ctSessions   int
	ctCritical   int // count_tokens requests inside a critical interval
	writing      int
	jobRequests  int
	extra        int // requests neither the job's own nor writing turns
	cpuShare     float64
	ownCPU       time.Duration
	peakRSS      int // KiB
	wall         time.Duration
	generations  int
}

// job runs flower on the three-generation job and reads the figures off the
// server's records.
func (b *bench) job(ctx context.Context, n int) (jobFigures, error) {
	s := &script{crossing: map[int]bool{}, tools: map[int]bool{}, writing: b.writing}
	srv, err := scriptedapi.Start(s.reply)
	if err != nil {
		return jobFigures{}, err
	}
	defer srv.Close()
	ws := b.dir("job")
	args := []string{"-C", ws, "--run-dir", filepath.Join(ws, "run"), "--window", "200000", "-q",
		"Append lines to work.txt until done.", "--", "--allowedTools", "Bash"}
	p, err := b.flowerRun(ctx, args, append(b.env(srv), "FLOWER_HARNESS="+b.harness))
	if err != nil {
		return jobFigures{}, err
	}
	reqs := srv.Requests()
	if b.verbose {
		fmt.Printf("job %d flower spawned %s\n", n+1, p.spawn.UTC().Format("15:04:05.000"))
		for _, r := range reqs {
			fmt.Printf("job %d request %2d %s session %.8s arrived %s answered %s %q\n", n+1, r.Seq, r.Kind, r.SessionID,
				r.Time.UTC().Format("15:04:05.000"), r.Answered.UTC().Format("15:04:05.000"), clip(r.LastUserText, 40))
		}
	}
	var f jobFigures
	f.wall, f.ownCPU, f.peakRSS = p.wall, p.ownCPU, p.peakRSS
	if p.totalCPU > 0 {
		f.cpuShare = float64(p.ownCPU) / float64(p.totalCPU)
	}
	var main []scriptedapi.Request
	for _, r := range reqs {
		if r.Kind == scriptedapi.KindMain {
			main = append(main, r)
		}
	}
	if len(main) == 0 {
		return f, errors.New("no request reached the server")
	}
	f.firstRequest = main[0].Time.Sub(p.spawn)
	sessions := map[string]bool{}
	var critical [][2]time.Time
	critical = append(critical, [2]time.Time{p.spawn, main[0].Time})
	for i, r := range main {
		sessions[r.SessionID] = true
		switch {
		case strings.Contains(r.LastUserText, handoffwriter.PromptTag):
			f.writing++
			for k := i - 1; k >= 0; k-- {
				if s.crossing[main[k].Seq] {
					f.cuts = append(f.cuts, r.Time.Sub(main[k].Answered))
					critical = append(critical, [2]time.Time{main[k].Answered, r.Time})
					break
				}
			}
			for _, next := range main[i+1:] {
				if next.SessionID != r.SessionID {
					f.gaps = append(f.gaps, next.Time.Sub(r.Answered))
					critical = append(critical, [2]time.Time{r.Answered, next.Time})
					break
				}
			}
		default:
			f.jobRequests++
		}
		if s.tools[r.Seq] && i+1 < len(main) && main[i+1].SessionID == r.SessionID {
			f.toolRTTs(main[i+1].Time.Sub(r.Answered))
		}
	}
	f.generations = len(sessions)
	f.toolRTT = median(f.rtts)
	f.extra = len(reqs) - len(main) // side and subagent calls: the job makes none
	ct := srv.CountTokensRequests()
	f.countTokens = len(ct)
	ctSessions := map[string]bool{}
	var last time.Time
	for _, c := range ct {
		ctSessions[c.SessionID] = true
		if last.IsZero() || c.Time.Sub(last) > time.Second {
			f.bursts++
		}
		last = c.Time
		for _, iv := range critical {
			if !c.Time.Before(iv[0]) && !c.Time.After(iv[1]) {
				f.ctCritical++
			}
		}
	}
	f.ctSessions = len(ctSessions)
	if p.code != 0 {
		return f, fmt.Errorf("flower exited %d:\n%s", p.code, p.output)
	}
	if f.generations != 3 || len(f.gaps) != 2 || len(f.cuts) != 2 {
		return f, fmt.Errorf("want 3 generations and 2 handoffs, got %d sessions, %d gaps, %d cuts:\n%s", f.generations, len(f.gaps), len(f.cuts), p.output)
	}
	return f, nil
}

func (f *jobFigures) toolRTTs(d time.Duration) { f.rtts = append(f.rtts, d) }

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
	p, err := b.flowerRun(ctx, []string{"-C", ws, "--run-dir", filepath.Join(ws, "run"), "--window", "200000", "-q", "Stream."}, env)
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
func (b *bench) flowerRun(ctx context.Context, args, env []string) (flowerProc, error) {
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

func secs(d time.Duration) string { return fmt.Sprintf("%.3f s", d.Seconds()) }

func report(w io.Writer, c config, bare, starts []time.Duration, jobs []jobFigures, rss []streamFigures, load0, load1 string) {
	cold := median(bare)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "load average (1, 5, 15 min)\tbefore %s, after %s, %d cores\n", load0, load1, numCPU())
	fmt.Fprintf(tw, "job\t3 generations of instant Bash rounds, --window 200000; the writing turn answers after %v\n", c.writing)
	if len(jobs) > 0 {
		jobRows(tw, cold, bare, starts, jobs)
	}
	fmt.Fprintln(tw)
	fmt.Fprintln(tw, "stream through flower (fake harness)\tpeak RSS\twall\tgoal\tmet")
	lo, hi := 0, 0
	for i, r := range rss {
		if i == 0 || r.peakRSS < lo {
			lo = r.peakRSS
		}
		hi = max(hi, r.peakRSS)
		fmt.Fprintf(tw, "%d MB\t%s\t%s\t≤ 20 MiB\t%s\n", r.mb, mib(r.peakRSS), secs(r.wall), yes(r.peakRSS <= 20<<10))
	}
	if len(rss) > 1 {
		fmt.Fprintf(tw, "flat from %d MB to %d MB\t%+.1f %%\t\twithin 10 %%\t%s\n", rss[0].mb, rss[len(rss)-1].mb,
			100*float64(rss[len(rss)-1].peakRSS-rss[0].peakRSS)/float64(rss[0].peakRSS), yes(hi-lo <= lo/10))
	}
	tw.Flush()
}

func jobRows(tw io.Writer, cold time.Duration, bare, starts []time.Duration, jobs []jobFigures) {
	fmt.Fprintf(tw, "bare harness: spawn → first request\tmedian %s of %d (%s)\n", secs(cold), len(bare), list(bare))
	var diffs []time.Duration
	for i := range starts {
		diffs = append(diffs, starts[i]-bare[i])
	}
	added := median(diffs)
	fmt.Fprintf(tw, "flower, one-turn task: spawn → first request\tmedian %s of %d (%s)\n", secs(median(starts)), len(starts), list(starts))
	fmt.Fprintf(tw, "what flower adds to a cold start (median of the pairs' differences)\t%+.0f ms (%s)\t≤ +20 ms\t%s\n",
		added.Seconds()*1000, msList(diffs), yes(added <= 20*time.Millisecond))
	fmt.Fprintln(tw, "what\t"+header(len(jobs))+"\tgoal\tmet")
	row := func(what string, goal string, met bool, cell func(j jobFigures) string) {
		var cells []string
		for _, j := range jobs {
			cells = append(cells, cell(j))
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", what, strings.Join(cells, "\t"), goal, yes(met))
	}
	all := func(ok func(j jobFigures) bool) bool {
		for _, j := range jobs {
			if !ok(j) {
				return false
			}
		}
		return true
	}
	row("switch gap per handoff (writing answer → successor's request)", fmt.Sprintf("≤ 0.25 × cold = %s", secs(cold/4)),
		all(func(j jobFigures) bool { return slices.Max(j.gaps) <= cold/4 }),
		func(j jobFigures) string {
			return list(j.gaps) + fmt.Sprintf(" (%.2f×)", median(j.gaps).Seconds()/cold.Seconds())
		})
	row("generation 1 of the job: flower spawn → first request", "(the pairs above are the measure)", true,
		func(j jobFigures) string {
			return fmt.Sprintf("%s (cold %+.0f ms)", secs(j.firstRequest), (j.firstRequest-cold).Seconds()*1000)
		})
	row("cut: reply over the threshold → writing request", "≤ 2 × tool round trip",
		all(func(j jobFigures) bool { return slices.Max(j.cuts) <= 2*j.toolRTT }),
		func(j jobFigures) string { return list(j.cuts) })
	row("tool round trip (median, same session)", "", true, func(j jobFigures) string { return secs(j.toolRTT) })
	row("count_tokens requests flower adds (bursts, sessions)", "≤ one burst per run", all(func(j jobFigures) bool { return j.bursts <= 1 && j.ctSessions <= 1 }),
		func(j jobFigures) string { return fmt.Sprintf("%d (%d, %d)", j.countTokens, j.bursts, j.ctSessions) })
	row("count_tokens on the critical path", "none", all(func(j jobFigures) bool { return j.ctCritical == 0 }),
		func(j jobFigures) string { return strconv.Itoa(j.ctCritical) })
	row("other requests: the job's own / writing turns / other", "writing turns only", all(func(j jobFigures) bool { return j.extra == 0 && j.writing == 2 }),
		func(j jobFigures) string { return fmt.Sprintf("%d / %d / %d", j.jobRequests, j.writing, j.extra) })
	row("flower's CPU, share of the job's", "≤ 2 %", all(func(j jobFigures) bool { return j.cpuShare <= 0.02 }),
		func(j jobFigures) string { return fmt.Sprintf("%.2f %% (%s)", 100*j.cpuShare, secs(j.ownCPU)) })
	row("flower's peak RSS", "≤ 20 MiB", all(func(j jobFigures) bool { return j.peakRSS <= 20<<10 }),
		func(j jobFigures) string { return mib(j.peakRSS) })
	row("job wall time", "", true, func(j jobFigures) string { return secs(j.wall) })
}

func msList(ds []time.Duration) string {
	var out []string
	for _, d := range ds {
		out = append(out, fmt.Sprintf("%+.0f", d.Seconds()*1000))
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
