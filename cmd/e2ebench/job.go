package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/flowerhq/flower/handoffwriter"
	"github.com/flowerhq/flower/manifest"
	"github.com/flowerhq/flower/scriptedapi"
)

// threshold is where the job's handoffs happen: 3/4 of --window 200000.
const threshold = 150_000

// script is the job: each generation works in instant Bash rounds up to
// the threshold, its writing turn answers a complete handoff, and the
// last generation finishes.
type script struct {
	mu       sync.Mutex
	gens     int // generations of the job
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
	last := s.gen == s.gens-1
	plan := []int{40_000, 80_000, 110_000, 135_000, 155_000}
	if last {
		plan = []int{30_000, 35_000, 40_000}
	}
	s.i++
	if last && s.i >= len(plan) {
		return scriptedapi.Reply{Text: "All done: the task is complete.", Usage: usage(40_000)}
	}
	// Past the threshold the work goes on until the cut lands.
	ctx := plan[min(s.i, len(plan))-1]
	if ctx >= threshold {
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
	rtts         []time.Duration // a tool call's answer → the request with its result
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
	degraded     []string // why, for each degraded handoff (the manifest's word)
	traced
}

// job runs flower on a job of gens generations and reads the figures off
// the server's records, flower's trace and its manifest.
func (b *bench) job(ctx context.Context, n, gens int, writing time.Duration) (jobFigures, error) {
	s := &script{gens: gens, crossing: map[int]bool{}, tools: map[int]bool{}, writing: writing}
	srv, err := scriptedapi.Start(s.reply)
	if err != nil {
		return jobFigures{}, err
	}
	defer srv.Close()
	ws := b.dir("job")
	run, trace := filepath.Join(ws, "run"), filepath.Join(ws, "trace")
	args := []string{"-C", ws, "--run-dir", run, "--window", "200000", "--max-generations", strconv.Itoa(gens + 1), "-q",
		"Append lines to work.txt until done.", "--", "--allowedTools", "Bash"}
	p, err := b.flowerRun(ctx, args, append(b.env(srv), "FLOWER_HARNESS="+b.harness, "FLOWER_TRACE="+trace), nil)
	if err != nil {
		return jobFigures{}, err
	}
	reqs := srv.Requests()
	if b.verbose {
		printRequests(n, p, reqs)
	}
	f := jobFigures{wall: p.wall, ownCPU: p.ownCPU, peakRSS: p.peakRSS}
	if p.totalCPU > 0 {
		f.cpuShare = float64(p.ownCPU) / float64(p.totalCPU)
	}
	critical, err := f.fromRequests(s, reqs, p.spawn)
	if err != nil {
		return f, err
	}
	f.fromCountTokens(srv.CountTokensRequests(), critical)
	f.traced, err = readTrace(trace)
	if err != nil {
		return f, err
	}
	if f.degraded, err = degradedHandoffs(run); err != nil {
		return f, err
	}
	if p.code != 0 {
		return f, fmt.Errorf("flower exited %d:\n%s", p.code, p.output)
	}
	if f.generations != gens || len(f.gaps) != gens-1 || len(f.cuts) != gens-1 {
		return f, fmt.Errorf("want %d generations and %d handoffs, got %d sessions, %d gaps, %d cuts:\n%s",
			gens, gens-1, f.generations, len(f.gaps), len(f.cuts), p.output)
	}
	return f, nil
}

func printRequests(n int, p flowerProc, reqs []scriptedapi.Request) {
	fmt.Printf("job %d flower spawned %s\n", n+1, p.spawn.UTC().Format("15:04:05.000"))
	for _, r := range reqs {
		fmt.Printf("job %d request %2d %s session %.8s arrived %s answered %s %q\n", n+1, r.Seq, r.Kind, r.SessionID,
			r.Time.UTC().Format("15:04:05.000"), r.Answered.UTC().Format("15:04:05.000"), clip(r.LastUserText, 40))
	}
}

// fromRequests reads the switch gaps, the cuts and the tool round trips
// off the main-thread requests; it returns the critical intervals (start,
// cuts, switches), where a count_tokens request would delay the job.
func (f *jobFigures) fromRequests(s *script, reqs []scriptedapi.Request, spawn time.Time) ([][2]time.Time, error) {
	var main []scriptedapi.Request
	for _, r := range reqs {
		if r.Kind == scriptedapi.KindMain {
			main = append(main, r)
		}
	}
	if len(main) == 0 {
		return nil, errors.New("no request reached the server")
	}
	f.firstRequest = main[0].Time.Sub(spawn)
	sessions := map[string]bool{}
	critical := [][2]time.Time{{spawn, main[0].Time}}
	for i, r := range main {
		sessions[r.SessionID] = true
		if !strings.Contains(r.LastUserText, handoffwriter.PromptTag) {
			f.jobRequests++
			if s.tools[r.Seq] && i+1 < len(main) && main[i+1].SessionID == r.SessionID {
				f.rtts = append(f.rtts, main[i+1].Time.Sub(r.Answered))
			}
			continue
		}
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
	}
	f.generations = len(sessions)
	f.extra = len(reqs) - len(main) // side and subagent calls: the job makes none
	return critical, nil
}

// fromCountTokens counts the count_tokens requests, their bursts and
// sessions, and those inside a critical interval.
func (f *jobFigures) fromCountTokens(ct []scriptedapi.CountTokensRequest, critical [][2]time.Time) {
	f.countTokens = len(ct)
	sessions := map[string]bool{}
	var last time.Time
	for _, c := range ct {
		sessions[c.SessionID] = true
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
	f.ctSessions = len(sessions)
}

// degradedHandoffs lists why each degraded handoff of the run degraded.
func degradedHandoffs(runDir string) ([]string, error) {
	m, err := manifest.Load(manifest.Path(runDir))
	if err != nil {
		return nil, err
	}
	var why []string
	for _, st := range m.Steps {
		for _, g := range st.Generations {
			if g.Handoff != nil && g.Handoff.Degraded {
				why = append(why, g.Handoff.Why)
			}
		}
	}
	return why, nil
}
