package main

import (
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/flowerhq/flower/levers"
)

func secs(d time.Duration) string { return fmt.Sprintf("%.3f s", d.Seconds()) }

// report prints every figure taken, each run on its own, beside the goal
// it is held to.
func report(w io.Writer, c config, f figures) {
	cold := median(f.bare)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "load average (1, 5, 15 min)\tbefore %s, after %s, %d cores\n", f.load0, f.load1, numCPU())
	fmt.Fprintf(tw, "bare harness\t%s\n", strings.Join(bareArgsShown(), " "))
	_, scrubOn, scrubWhy := levers.Scrub(os.Environ())
	scrub := "off (" + scrubWhy + ")"
	if scrubOn {
		scrub = "on, as flower switches it on: " + levers.ScrubKey + "=1"
	}
	fmt.Fprintf(tw, "the harness's key scrub, for both\t%s\n", scrub)
	if len(f.jobs) > 0 {
		fmt.Fprintf(tw, "job\t3 generations of instant Bash rounds, --window 200000; the writing turn answers after %v\n", c.writing)
		startRows(tw, f.bare, f.starts)
		jobRows(tw, cold, f.jobs)
		if f.floor != nil {
			floorRows(tw, cold, *f.floor)
		}
	}
	if f.soak != nil {
		soakRows(tw, *f.soak)
		if f.soakErr != nil {
			first, _, _ := strings.Cut(f.soakErr.Error(), "\n")
			fmt.Fprintf(tw, "the soak went wrong\t%s\n", first)
		}
	}
	if f.idle != nil {
		fmt.Fprintln(tw)
		fmt.Fprintf(tw, "flower's CPU while the harness waits %s on the model\t%.4f %% (%.1f ms of %s)\t≤ 0.05 %%\t%s\n", secs(c.slow),
			100*f.idle.share(), float64(f.idle.cpu)/1e6, secs(f.idle.wait), yes(f.idle.share() <= 0.0005))
	}
	if f.tui != nil {
		tuiRows(tw, *f.tui)
	}
	streamRows(tw, f.rss)
	tw.Flush()
}

// bareArgsShown is the bare harness's command line with the settings'
// JSON left out.
func bareArgsShown() []string {
	var out []string
	for _, a := range bareArgs() {
		if strings.HasPrefix(a, "--settings=") {
			a = "--settings=<flower's compaction levers>"
		}
		out = append(out, a)
	}
	return out
}

func startRows(tw io.Writer, bare, starts []time.Duration) {
	fmt.Fprintf(tw, "bare harness: spawn → first request\t%s (median %s)\n", list(bare), secs(median(bare)))
	var diffs []time.Duration
	for i := range starts {
		diffs = append(diffs, starts[i]-bare[i])
	}
	added := median(diffs)
	fmt.Fprintf(tw, "flower, one-turn task: spawn → first request\t%s (median %s)\n", list(starts), secs(median(starts)))
	fmt.Fprintf(tw, "what flower adds to a cold start (each pair; median)\t%s; %+.0f ms\t≤ +20 ms\t%s\n",
		signedMsList(diffs), ms(added), yes(added <= 20*time.Millisecond))
}

func jobRows(tw io.Writer, cold time.Duration, jobs []jobFigures) {
	fmt.Fprintln(tw, "what\t"+header(len(jobs))+"\tgoal\tmet")
	row := func(what, goal string, ok func(j jobFigures) bool, cell func(j jobFigures) string) {
		var cells []string
		met := true
		for _, j := range jobs {
			cells = append(cells, cell(j))
			met = met && ok(j)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", what, strings.Join(cells, "\t"), goal, yes(met))
	}
	always := func(jobFigures) bool { return true }
	row("switch gap per handoff (writing answer → successor's request)", fmt.Sprintf("≤ 0.2 × cold = %s", secs(cold/5)),
		func(j jobFigures) bool { return slices.Max(j.gaps) <= cold/5 },
		func(j jobFigures) string {
			return list(j.gaps) + fmt.Sprintf(" (%.2f×)", median(j.gaps).Seconds()/cold.Seconds())
		})
	row("flower's share of it (writing result read → successor's prompt written)", "≤ 10 ms",
		func(j jobFigures) bool { return len(j.shares) > 0 && slices.Max(j.shares) <= 10*time.Millisecond },
		func(j jobFigures) string { return msList(j.shares) })
	row("generation 1 of the job: flower spawn → first request", "(the pairs above are the measure)", always,
		func(j jobFigures) string {
			return fmt.Sprintf("%s (cold %+.0f ms)", secs(j.firstRequest), ms(j.firstRequest-cold))
		})
	row("cut: reply over the threshold → writing request", "≤ 1 × tool round trip",
		func(j jobFigures) bool { return slices.Max(j.cuts) <= median(j.rtts) },
		func(j jobFigures) string { return list(j.cuts) })
	row("tool round trips (same session; median)", "", always,
		func(j jobFigures) string { return fmt.Sprintf("%s; %s", list(j.rtts), secs(median(j.rtts))) })
	row("flower's reaction: the crossing reply's line read → the cut written", "< 2 ms",
		func(j jobFigures) bool { return len(j.reactions) > 0 && slices.Max(j.reactions) < 2*time.Millisecond },
		func(j jobFigures) string { return msList(j.reactions) })
	row("count_tokens requests flower adds (bursts, sessions)", "≤ one burst per run", func(j jobFigures) bool { return j.bursts <= 1 && j.ctSessions <= 1 },
		func(j jobFigures) string { return fmt.Sprintf("%d (%d, %d)", j.countTokens, j.bursts, j.ctSessions) })
	row("count_tokens on the critical path", "none", func(j jobFigures) bool { return j.ctCritical == 0 },
		func(j jobFigures) string { return strconv.Itoa(j.ctCritical) })
	row("other requests: the job's own / writing turns / other", "writing turns only", func(j jobFigures) bool { return j.extra == 0 && j.writing == 2 },
		func(j jobFigures) string { return fmt.Sprintf("%d / %d / %d", j.jobRequests, j.writing, j.extra) })
	row("flower's CPU, share of the job's", "≤ 2 %", func(j jobFigures) bool { return j.cpuShare <= 0.02 },
		func(j jobFigures) string { return fmt.Sprintf("%.2f %% (%s)", 100*j.cpuShare, secs(j.ownCPU)) })
	row("flower's peak RSS", "≤ 20 MiB", func(j jobFigures) bool { return j.peakRSS <= 20<<10 },
		func(j jobFigures) string { return mib(j.peakRSS) })
	row("degraded handoffs", "none", func(j jobFigures) bool { return len(j.degraded) == 0 },
		func(j jobFigures) string { return strconv.Itoa(len(j.degraded)) })
	row("job wall time", "", always, func(j jobFigures) string { return secs(j.wall) })
}

// floorRows: the bare harness driven as flower drives it, by a driver that
// takes no time: what the switch gap and the cut cannot go under.
func floorRows(tw io.Writer, cold time.Duration, f floorFigures) {
	fmt.Fprintf(tw, "the bare harness's own floor, driven as flower drives it (%d sessions)\n", len(f.warm))
	fmt.Fprintf(tw, "  warmed with a blank prompt, idle 2 s: prompt → request (under the switch gap)\t%s (median %s, %.2f× cold)\n",
		list(f.warm), secs(median(f.warm)), median(f.warm).Seconds()/cold.Seconds())
	fmt.Fprintf(tw, "  prompt queued as the reply's tool call is read: reply → request (under the cut)\t%s (median %s, %.2f× its tool round trip)\n",
		list(f.cuts), secs(median(f.cuts)), median(f.cuts).Seconds()/median(f.rtts).Seconds())
	fmt.Fprintf(tw, "  its tool round trips (median)\t%s; %s\n", list(f.rtts), secs(median(f.rtts)))
}

// soakRows: the soak's handoffs, all of them, and whether they stay flat
// from its first half to its second.
func soakRows(tw io.Writer, j jobFigures) {
	fmt.Fprintln(tw)
	fmt.Fprintf(tw, "soak\t%d generations of instant Bash rounds, a writing turn that answers at once; %s wall\n", j.generations, secs(j.wall))
	fmt.Fprintf(tw, "degraded handoffs\t%d of %d%s\tnone\t%s\n", len(j.degraded), len(j.gaps), why(j.degraded), yes(len(j.degraded) == 0))
	half := func(name string, ds []time.Duration, goal string, ok bool) {
		a, b := ds[:len(ds)/2], ds[len(ds)/2:]
		fmt.Fprintf(tw, "%s: median 1st half / 2nd half; every one\t%s / %s; %s\t%s\t%s\n", name, secs(median(a)), secs(median(b)), list(ds), goal, yes(ok))
	}
	flat := func(ds []time.Duration) bool {
		return len(ds) < 2 || median(ds[len(ds)/2:]) <= median(ds[:len(ds)/2])*5/4
	}
	if len(j.gaps) > 0 {
		half("switch gap", j.gaps, "flat (2nd ≤ 1.25 × 1st)", flat(j.gaps))
	}
	if len(j.cuts) > 0 {
		half("cut", j.cuts, fmt.Sprintf("≤ 1 × tool round trip (%s)", secs(median(j.rtts))), slices.Max(j.cuts) <= median(j.rtts))
	}
	fmt.Fprintf(tw, "flower's reaction, every handoff\t%s\t< 2 ms\t%s\n", msList(j.reactions), yes(len(j.reactions) > 0 && slices.Max(j.reactions) < 2*time.Millisecond))
	fmt.Fprintf(tw, "flower's share of each switch\t%s\t≤ 10 ms\t%s\n", msList(j.shares), yes(len(j.shares) > 0 && slices.Max(j.shares) <= 10*time.Millisecond))
	fmt.Fprintf(tw, "flower's CPU, share of the soak's\t%.2f %% (%s)\t≤ 2 %%\t%s\n", 100*j.cpuShare, secs(j.ownCPU), yes(j.cpuShare <= 0.02))
}

func why(degraded []string) string {
	if len(degraded) == 0 {
		return ""
	}
	return " (" + strings.Join(degraded, "; ") + ")"
}

func tuiRows(tw io.Writer, t tuiFigures) {
	fmt.Fprintln(tw)
	bare, sw := median(t.bare), median(t.switches)
	fmt.Fprintf(tw, "bare screen with a prompt: spawn → first request\t%s (median %s)\n", list(t.bare), secs(bare))
	fmt.Fprintf(tw, "flower -i switch: writing answer → successor's request\t%s (median %s, %.2f× bare)\tno slower than bare\t%s\n",
		list(t.switches), secs(sw), sw.Seconds()/bare.Seconds(), yes(sw <= bare))
}

func streamRows(tw io.Writer, rss []streamFigures) {
	if len(rss) == 0 {
		return
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
}

func ms(d time.Duration) float64 { return d.Seconds() * 1000 }
