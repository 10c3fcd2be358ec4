package integration_test

import (
	"fmt"
	"math/rand"
	"slices"
	"time"

	"github.com/flowerhq/flower/scriptedapi"
)

// faultKind is one kind of fault the campaign injects.
type faultKind string

const (
	faultKillFlower  faultKind = "SIGKILL flower"
	faultTermFlower  faultKind = "SIGTERM flower"
	faultKillHarness faultKind = "SIGKILL harness"
	faultEditNotes   faultKind = "edit notes at launch"
	faultAPI500      faultKind = "API 500"
	faultAPI529      faultKind = "API 529"
	faultAPIReset    faultKind = "API reset"
	faultAPIStall    faultKind = "API stall"
	faultAPIOverflow faultKind = "API overflow 400"
	// faultAPIRateLimit is an API key's rate limit (429, retry-after 1 s):
	// the harness retries it itself; three in a row reach flower, which
	// waits it out and sends the same session on (DESIGN.md «Unattended:
	// limits, budget, deadline»).
	faultAPIRateLimit faultKind = "API 429 rate limit"
	// faultAPIUsageLimit is a subscription's usage limit (429 with the
	// unified headers, status rejected, reset 2 s ahead). The harness
	// reads it only as a subscriber's, and does not retry it: a round
	// whose plan holds it runs the harness with an OAuth token instead of
	// the API key (newRound). flower waits until the reset and sends the
	// same session on (DESIGN.md «Unattended: limits, budget, deadline»).
	faultAPIUsageLimit faultKind = "API usage limit"
)

// faultKinds lists every kind in the order the summary prints them.
var faultKinds = []faultKind{faultKillFlower, faultTermFlower, faultKillHarness, faultEditNotes,
	faultAPI500, faultAPI529, faultAPIReset, faultAPIStall, faultAPIOverflow, faultAPIRateLimit, faultAPIUsageLimit}

// api reports whether the scripted API injects the fault (rather than the
// campaign, from outside flower).
func (k faultKind) api() bool {
	switch k {
	case faultAPI500, faultAPI529, faultAPIReset, faultAPIStall, faultAPIOverflow, faultAPIRateLimit, faultAPIUsageLimit:
		return true
	}
	return false
}

// reply is the scripted API's answer for an API fault.
func (k faultKind) reply() scriptedapi.Reply {
	switch k {
	case faultAPI500:
		return scriptedapi.ServerError()
	case faultAPI529:
		return scriptedapi.Overloaded()
	case faultAPIReset:
		return scriptedapi.Reply{Text: "this answer is cut off by a reset", Usage: usage(30_000), Fault: scriptedapi.FaultReset}
	case faultAPIStall:
		return scriptedapi.Reply{Text: "this answer stalls after a few words", Usage: usage(30_000), Fault: scriptedapi.FaultStall}
	case faultAPIOverflow:
		return scriptedapi.Overflow(250_123, 200_000)
	case faultAPIRateLimit:
		return scriptedapi.RateLimited(time.Second, time.Time{})
	case faultAPIUsageLimit:
		return scriptedapi.UsageLimited(time.Now().Add(2 * time.Second))
	}
	panic("not an API fault: " + string(k))
}

// fault is one planned fault of a round.
type fault struct {
	kind faultKind
	// at is the main-thread request ordinal that triggers the fault: the
	// first request an API fault breaks, or the count after which a
	// process fault is injected (delay later). An edit uses freeze
	// instead.
	at    int
	times int // API faults: how many requests in a row
	// writing, when set, triggers a process fault at the writing-th
	// handoff-writing request instead: the writing turn and the launch
	// window after it are short, and a count of requests seldom lands
	// in them.
	writing int
	delay   time.Duration // process faults: the wait after the trigger
	// freeze is the 1-based handoff file write an edit follows.
	freeze int

	// What happened.
	hits int // API faults: requests answered with it
	// API faults: the session and the request seq of the last request
	// answered with it, and of the first.
	session           string
	firstSeq, lastSeq int
	// process faults: when injected.
	injectedAt time.Time
	injected   bool   // process faults and edits
	note       string // why it was not injected, or what it hit
}

func (f *fault) String() string {
	switch {
	case f.kind == faultEditNotes:
		return fmt.Sprintf("%s after write %d", f.kind, f.freeze)
	case f.kind.api():
		return fmt.Sprintf("%s ×%d at request %d", f.kind, f.times, f.at)
	}
	if f.writing > 0 {
		return fmt.Sprintf("%s %v after writing turn %d", f.kind, f.delay, f.writing)
	}
	return fmt.Sprintf("%s %v after request %d", f.kind, f.delay, f.at)
}

// moment orders faults roughly by when they come: a writing turn comes
// after about six requests of its generation.
func (f *fault) moment() int {
	if f.writing > 0 {
		return 6 * f.writing
	}
	return f.at
}

// done reports whether the fault took effect.
func (f *fault) done() bool { return f.injected || f.hits > 0 }

// chaosRequests is about how many main-thread requests a round's job makes
// without faults: two generations of five working requests and a writing
// turn, then four to finish.
const chaosRequests = 16

// chaosLate is a main-thread request of the last session (the one that
// finishes the job) in a round without faults.
const chaosLate = 13

// lateFront is a front on which some kinds of fault must come late: after
// them the round goes on another way (an interactive step continues
// headless), and the faults before them should meet this front.
type lateFront interface {
	late(k faultKind) bool
}

// planRound draws a round's faults from rng: n distinct kinds the front
// takes, each at a random moment. API faults get request ordinals that do
// not overlap, so each breaks what it was planned to break.
func planRound(rng *rand.Rand, fr front, n int) []*fault {
	var kinds []faultKind
	for _, k := range faultKinds {
		if fr.takes(k) {
			kinds = append(kinds, k)
		}
	}
	rng.Shuffle(len(kinds), func(i, j int) { kinds[i], kinds[j] = kinds[j], kinds[i] })
	kinds = kinds[:min(n, len(kinds))]
	var plan []*fault
	used := map[int]bool{}
	for _, k := range kinds {
		f := &fault{kind: k}
		switch {
		case k == faultEditNotes:
			f.freeze = 1 + rng.Intn(2)
		case k.api():
			f.times = 1
			switch k {
			case faultAPI500, faultAPI529, faultAPIRateLimit:
				// The harness retries twice (CLAUDE_CODE_MAX_RETRIES=2),
				// and gives up on the third 529 in a row by itself: three
				// in a row reach flower, fewer do not.
				f.times = 1 + rng.Intn(3)
			case faultAPIReset:
				f.times = 1 + rng.Intn(2)
			}
			// A free run of ordinals, with one spare after it for the
			// harness's own retry.
			for tries := 0; ; tries++ {
				at := 1 + rng.Intn(chaosRequests)
				free := true
				for i := at; i <= at+f.times; i++ {
					free = free && !used[i]
				}
				if free || tries > 50 {
					f.at = at
					break
				}
			}
			for i := f.at; i <= f.at+f.times; i++ {
				used[i] = true
			}
		default:
			f.at = 1 + rng.Intn(chaosRequests-1)
			if rng.Intn(2) == 0 {
				// The writing reply takes chaosWriting; the launch
				// window follows it.
				f.writing = 1 + rng.Intn(2)
				f.at = 0
			}
			f.delay = time.Duration(rng.Intn(1500)) * time.Millisecond
		}
		if l, ok := fr.(lateFront); ok && l.late(k) {
			f.writing, f.at = 0, max(f.at, chaosLate)
		}
		plan = append(plan, f)
	}
	slices.SortStableFunc(plan, func(a, b *fault) int { return a.moment() - b.moment() })
	return plan
}
