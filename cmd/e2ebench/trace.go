package main

import (
	"bufio"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
)

// traced is what flower's line trace (FLOWER_TRACE, package harness) says
// of flower's own time: each moment is stamped in flower as it read a
// harness's line or wrote one to its stdin.
type traced struct {
	// reactions: the line of the reply over the threshold that flower
	// acted on read → the cut written to the same harness: the writing
	// prompt queued, at the reply's tool-call line (the reply's first
	// line, its text's, comes before it), or the interrupt, at the
	// reply's first line.
	reactions []time.Duration
	// shares: the writing turn's result read → the successor's first
	// prompt written: flower's own part of a switch.
	shares []time.Duration
}

type traceLine struct {
	at       time.Time
	pid      int
	dir      string // start, out, in
	typ, sub string
	size     int
	context  int
	tools    int
}

func readTrace(path string) (traced, error) {
	f, err := os.Open(path)
	if err != nil {
		return traced{}, err
	}
	defer f.Close()
	var lines []traceLine
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		w := strings.Fields(sc.Text())
		if len(w) < 3 {
			continue
		}
		ns, _ := strconv.ParseInt(w[0], 10, 64)
		l := traceLine{at: time.Unix(0, ns), dir: w[2]}
		l.pid, _ = strconv.Atoi(w[1])
		if len(w) >= 6 {
			l.typ, l.sub = w[3], w[4]
			l.size, _ = strconv.Atoi(w[5])
		}
		if len(w) >= 7 {
			l.context, _ = strconv.Atoi(w[6])
		}
		if len(w) >= 8 {
			l.tools, _ = strconv.Atoi(w[7])
		}
		lines = append(lines, l)
	}
	// Each line is stamped before it is written: two goroutines' lines
	// may land out of order.
	slices.SortStableFunc(lines, func(a, b traceLine) int { return a.at.Compare(b.at) })
	return fromTrace(lines), sc.Err()
}

// fromTrace pairs the moments of each generation (a harness, in the order
// flower started them) with its successor's.
func fromTrace(lines []traceLine) traced {
	var pids []int
	for _, l := range lines {
		if l.dir == "start" {
			pids = append(pids, l.pid)
		}
	}
	var t traced
	for i, pid := range pids[:max(len(pids)-1, 0)] {
		cross := first(lines, func(l traceLine) bool {
			return l.pid == pid && l.dir == "out" && l.typ == "assistant" && l.context >= threshold
		}, time.Time{})
		if !cross.IsZero() {
			if r, ok := reaction(lines, pid, cross); ok {
				t.reactions = append(t.reactions, r)
			}
		}
		end := last(lines, func(l traceLine) bool { return l.pid == pid && l.dir == "out" && l.typ == "result" })
		// The successor's first prompt: not a warm-up's blank one.
		next := pids[i+1]
		if prompt := first(lines, func(l traceLine) bool {
			return l.pid == next && l.dir == "in" && l.typ == "user" && l.size > 80
		}, end); !end.IsZero() && !prompt.IsZero() {
			t.shares = append(t.shares, prompt.Sub(end))
		}
	}
	return t
}

// reaction is flower's time from the line of harness pid's reply over the
// threshold (first read at cross) that it cut on to the cut written: the
// writing prompt (a user line) at the reply's tool-call line, or the
// interrupt at its first line.
func reaction(lines []traceLine, pid int, cross time.Time) (time.Duration, bool) {
	cut := first(lines, func(l traceLine) bool {
		return l.pid == pid && l.dir == "in" && (l.sub == "interrupt" || l.typ == "user")
	}, cross)
	if cut.IsZero() {
		return 0, false
	}
	from := cross
	if l := lineAt(lines, pid, cut); l.typ == "user" {
		from = first(lines, func(l traceLine) bool {
			return l.pid == pid && l.dir == "out" && l.typ == "assistant" && l.tools > 0
		}, cross)
	}
	if from.IsZero() || from.After(cut) {
		return 0, false
	}
	return cut.Sub(from), true
}

// lineAt is harness pid's line written at t.
func lineAt(lines []traceLine, pid int, t time.Time) traceLine {
	for _, l := range lines {
		if l.pid == pid && l.dir == "in" && l.at.Equal(t) {
			return l
		}
	}
	return traceLine{}
}

// first is the time of the first line after from that ok picks.
func first(lines []traceLine, ok func(traceLine) bool, from time.Time) time.Time {
	for _, l := range lines {
		if !l.at.Before(from) && ok(l) {
			return l.at
		}
	}
	return time.Time{}
}

func last(lines []traceLine, ok func(traceLine) bool) time.Time {
	for _, l := range slices.Backward(lines) {
		if ok(l) {
			return l.at
		}
	}
	return time.Time{}
}
