package integration_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/flowerhq/flower/child"
	"github.com/flowerhq/flower/handoff"
	"github.com/flowerhq/flower/handoffwriter"
	flowerharness "github.com/flowerhq/flower/harness"
	"github.com/flowerhq/flower/manifest"
	"github.com/flowerhq/flower/policy"
	"github.com/flowerhq/flower/scriptedapi"
)

// watcher samples the run's files and processes while it runs: the
// manifest must always be valid JSON, the notes file whole or absent, and
// an archive file, once seen, never change. It also records every version
// of the notes file (to trace what a successor was given), makes the
// person's edits, and collects the harness tags a reaper carries.
type watcher struct {
	r        *round
	manifest string
	notes    string
	archive  string

	mu       sync.Mutex
	versions map[string]string // sha256 → content of the notes file
	mine     map[string]bool   // sha256 of the versions this campaign wrote
	archived map[string]string // path → sha256
	tags     map[string]bool   // FLOWER_HARNESS_TAG values seen
	writes   int               // versions flower wrote
	edits    []*edit
	samples  int

	quit, done chan struct{}
	once       sync.Once
}

// edit is a person's edit of the notes file.
type edit struct {
	fault    *fault
	from, to string // sha256 before and after
	mark     string
	at       time.Time
}

func newWatcher(r *round) *watcher {
	return &watcher{r: r,
		manifest: manifest.Path(r.runDir),
		notes:    filepath.Join(r.ws, ".flower", "notes", "交接-"+chaosStep+".md"),
		archive:  filepath.Join(r.ws, ".flower", "notes", "archive", "交接"),
		versions: map[string]string{}, mine: map[string]bool{}, archived: map[string]string{}, tags: map[string]bool{},
		quit: make(chan struct{}), done: make(chan struct{})}
}

func (w *watcher) start() {
	go func() {
		defer close(w.done)
		tick := time.NewTicker(15 * time.Millisecond)
		defer tick.Stop()
		for i := 0; ; i++ {
			select {
			case <-w.quit:
				w.sample(true)
				return
			case <-tick.C:
				w.sample(i%6 == 0)
			}
		}
	}()
}

func (w *watcher) stop() {
	w.once.Do(func() { close(w.quit) })
	<-w.done
}

func (w *watcher) sample(procs bool) {
	r := w.r
	w.mu.Lock()
	w.samples++
	w.mu.Unlock()
	if b, err := os.ReadFile(w.manifest); err == nil && !json.Valid(b) {
		r.breach("manifest.json is always valid JSON", "read %d bytes that are not JSON: %q", len(b), clip(string(b), 200))
	}
	if b, err := os.ReadFile(w.notes); err == nil {
		w.notesVersion(b)
	} else if !os.IsNotExist(err) {
		r.breach("the notes file is whole or absent", "read: %v", err)
	}
	w.checkArchive()
	if procs {
		for _, p := range runProcs(r.marker) {
			if p.tag != "" {
				w.mu.Lock()
				w.tags[p.tag] = true
				w.mu.Unlock()
			}
		}
	}
}

func (w *watcher) notesVersion(b []byte) {
	r := w.r
	if h := handoffwriter.Parse(string(b)); !h.Complete() {
		r.breach("the notes file is whole or absent", "it lacks %v:\n%s", h.Missing(), clip(string(b), 400))
		return
	}
	sum := handoff.Digest(b)
	w.mu.Lock()
	if _, seen := w.versions[sum]; seen {
		w.mu.Unlock()
		return
	}
	w.versions[sum] = string(b)
	if w.mine[sum] {
		w.mu.Unlock()
		return
	}
	w.writes++
	var f *fault
	for _, pf := range r.plan {
		if pf.kind == faultEditNotes && pf.freeze == w.writes && !pf.injected {
			f = pf
		}
	}
	w.mu.Unlock()
	if f != nil {
		w.edit(f, b, sum)
	}
}

// edit is what a person does in the launch window: a line added under
// the next heading, saved as editors do (a new file renamed over the old,
// so the watcher never reads half of it).
func (w *watcher) edit(f *fault, b []byte, from string) {
	r := w.r
	mark := fmt.Sprintf("PERSON-EDIT-%d-%d", r.seed, f.freeze)
	heading := handoffwriter.Sections[3].Heading() + "\n"
	s := string(b)
	if !strings.Contains(s, heading) {
		f.note = "no next heading to edit under"
		return
	}
	s = strings.Replace(s, heading, heading+"\n"+mark+": check the archive before appending.\n", 1)
	tmp := filepath.Join(r.ws, ".chaos-edit")
	to := handoff.Digest([]byte(s))
	w.mu.Lock()
	w.mine[to] = true
	w.versions[to] = s
	w.mu.Unlock()
	if err := os.WriteFile(tmp, []byte(s), 0o644); err != nil {
		f.note = "write: " + err.Error()
		return
	}
	if err := os.Rename(tmp, w.notes); err != nil {
		f.note = "rename: " + err.Error()
		return
	}
	f.injected = true
	f.note = "after write " + strconv.Itoa(f.freeze)
	w.mu.Lock()
	w.edits = append(w.edits, &edit{fault: f, from: from, to: to, mark: mark, at: time.Now()})
	w.mu.Unlock()
	r.note("injected %s: %s", f.kind, mark)
}

func (w *watcher) checkArchive() {
	r := w.r
	ents, err := os.ReadDir(w.archive)
	if err != nil && !os.IsNotExist(err) {
		r.breach("archives are never overwritten", "list: %v", err)
		return
	}
	present := map[string]bool{}
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".") {
			continue // a temp file, not yet an archive (atomicfile.CopyNew)
		}
		p := filepath.Join(w.archive, e.Name())
		b, err := os.ReadFile(p)
		if err != nil {
			continue // being renamed into place
		}
		present[p] = true
		sum := handoff.Digest(b)
		w.mu.Lock()
		old, seen := w.archived[p]
		if !seen {
			w.archived[p] = sum
		}
		w.mu.Unlock()
		if seen && old != sum {
			r.breach("archives are never overwritten", "%s changed", filepath.Base(p))
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for p := range w.archived {
		if !present[p] {
			r.breach("archives are never overwritten", "%s vanished", filepath.Base(p))
		}
	}
}

func (w *watcher) harnessTags() map[string]bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return maps.Clone(w.tags)
}

// runProc is one process as /proc shows it.
type runProc struct {
	pid, ppid int
	comm, exe string
	env       []byte
	start     int64  // its start time, in clock ticks since boot
	tag       string // its FLOWER_HARNESS_TAG
	reaperTag string // the tag a flower guard guards (child.GuardName)
}

func (p runProc) hasEnv(kv string) bool {
	return bytes.Contains(append([]byte{0}, p.env...), append(append([]byte{0}, kv...), 0)) ||
		bytes.HasSuffix(p.env, []byte(kv))
}

// allProcs lists the live (not zombie) processes this user can read.
func allProcs() []runProc {
	var out []runProc
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		dir := "/proc/" + e.Name()
		stat, err := os.ReadFile(dir + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid …: comm may hold spaces and parentheses.
		i := bytes.LastIndexByte(stat, ')')
		if i < 0 {
			continue
		}
		fields := strings.Fields(string(stat[i+1:]))
		if len(fields) < 2 || fields[0] == "Z" || fields[0] == "X" {
			continue
		}
		p := runProc{pid: pid, comm: string(stat[bytes.IndexByte(stat, '(')+1 : i])}
		p.ppid, _ = strconv.Atoi(fields[1])
		if len(fields) > 19 {
			p.start, _ = strconv.ParseInt(fields[19], 10, 64) // field 22, starttime
		}
		p.exe, _ = os.Readlink(dir + "/exe")
		p.env, _ = os.ReadFile(dir + "/environ")
		for _, kv := range bytes.Split(p.env, []byte{0}) {
			if v, ok := bytes.CutPrefix(kv, []byte(flowerharness.EnvTag+"=")); ok {
				p.tag = string(v)
			}
		}
		if cmd, err := os.ReadFile(dir + "/cmdline"); err == nil {
			args := strings.Split(strings.TrimRight(string(cmd), "\x00"), "\x00")
			if i := slices.Index(args, child.GuardName); i >= 0 && i+1 < len(args) {
				p.reaperTag = args[i+1]
			}
		}
		out = append(out, p)
	}
	return out
}

// runProcs lists the live processes carrying marker in their environment.
func runProcs(marker string) []runProc {
	var out []runProc
	for _, p := range allProcs() {
		if p.hasEnv(marker) {
			out = append(out, p)
		}
	}
	return out
}

// apiSessions returns the sessions the API saw, in order of their first
// request, and breaches the rule that no request goes to an older session
// than the newest.
func (r *round) apiSessions() []string {
	var order []string
	newest := -1
	for _, q := range r.srv.Requests() {
		if q.SessionID == "" {
			continue
		}
		i := slices.Index(order, q.SessionID)
		if i < 0 {
			order = append(order, q.SessionID)
			i = len(order) - 1
		}
		if i < newest {
			r.breach("no request goes to an older session than the newest",
				"request %d went to session %s after session %s had started", q.Seq, q.SessionID, order[newest])
		}
		newest = max(newest, i)
	}
	return order
}

// checkState checks the invariants that hold whenever flower is not
// running: the manifest loads, its sessions match the API's, the notes
// file and archives are intact, and the key is in no file.
func (r *round) checkState(cause string) *manifest.StepResult {
	r.watch.sample(false)
	st := r.loadStep()
	api := r.apiSessions()
	r.keyInNoFile()
	if st == nil {
		return nil
	}
	rec := append(slices.Clone(st.Retired), st.SessionID)
	if st.SessionID == "" {
		rec = rec[:len(rec)-1]
	}
	if slices.Contains(st.Retired, st.SessionID) && st.SessionID != "" {
		r.breach("session_id is never a retired session", "%s (%s)", st.SessionID, cause)
	}
	last := -1
	for _, s := range api {
		i := slices.Index(rec, s)
		switch {
		case i < 0:
			r.breach("the manifest's sessions are the API's", "the API saw session %s, the manifest has retired %q and session_id %q (%s)", s, st.Retired, st.SessionID, cause)
		case i < last:
			r.breach("the manifest's sessions are the API's", "session %s is recorded before %s but the API saw it after (%s)", s, rec[last], cause)
		default:
			last = i
		}
	}
	if st.Status == manifest.StatusSucceeded && (len(api) == 0 || st.SessionID != api[len(api)-1]) {
		r.breach("the manifest's sessions are the API's", "session_id %s is not the newest session the API saw (%q)", st.SessionID, api)
	}
	return st
}

// finish checks the end state and gathers the round's figures.
func (r *round) finish() *roundResult {
	r.model.mainRequests() // the model's writes happen before what follows
	res := &roundResult{seed: r.seed, faults: r.plan, runs: r.runs, took: time.Since(r.start)}
	st := r.checkState("at the end")
	api := r.apiSessions()
	res.sessions = len(api)
	if len(api) < 3 {
		r.breach("the job needs at least three sessions", "the API saw %d", len(api))
	}
	if st != nil {
		res.generations = len(st.Generations)
		for _, g := range st.Generations {
			how := "no handoff"
			if h := g.Handoff; h != nil {
				how = fmt.Sprintf("handoff %s, %s", h.Reason, h.Outcome)
				if h.Degraded {
					how += " (" + h.Why + ")"
				}
			}
			r.note("generation %d: session %s, %s", g.N, clip(g.SessionID, 8), how)
		}
		for _, e := range st.Errors {
			r.note("error recorded: %s", clip(e, 200))
		}
		if st.Status != manifest.StatusSucceeded {
			r.breach("the step ends succeeded", "status %s", st.Status)
		}
		if n := len(st.Generations); n > policy.DefaultMaxGenerations {
			r.breach("the step ends within max_generations", "%d generations", n)
		}
		r.checkSuccessors(st, res)
		r.checkLimits(st)
	}
	r.mu.Lock()
	res.broken = slices.Clone(r.broken)
	r.mu.Unlock()
	return res
}

// checkSuccessors: each generation's first request carries the task (the
// first generation, or a fresh start before any handoff), or the doing and
// next of the handoff it succeeds (with the person's edit when that was
// what was launched), or a degraded handoff whose reason is in errors.
func (r *round) checkSuccessors(st *manifest.StepResult, res *roundResult) {
	first := map[string]scriptedapi.Request{}
	for _, q := range r.srv.Requests() {
		if _, ok := first[q.SessionID]; !ok && isMain(&q) {
			first[q.SessionID] = q
		}
	}
	var last *manifest.HandoffRecord
	lastGen := 0
	for i := range st.Generations {
		g := &st.Generations[i]
		if q, ok := first[g.SessionID]; ok && g.SessionID != "" {
			r.checkSuccessor(st, g, q, last, lastGen, res)
		}
		if g.Handoff != nil {
			last, lastGen = g.Handoff, i
		}
	}
}

func (r *round) checkSuccessor(st *manifest.StepResult, g *manifest.Generation, q scriptedapi.Request, rec *manifest.HandoffRecord, recGen int, res *roundResult) {
	what := "every successor starts from its predecessor's handoff"
	if rec == nil {
		if !strings.Contains(q.AllText, chaosTaskMark) {
			r.breach(what, "generation %d (no handoff before it) did not get the task", g.N)
		}
		return
	}
	var want []string
	r.watch.mu.Lock()
	doc, seen := r.watch.versions[rec.SHA256Written]
	// The edit must reach the successor when the launch read it back
	// (the receipt's hash), or when flower was stopped before the launch
	// and the run that started the successor read the file after the
	// edit (flower continue starts it from the file as it is then).
	var ed *edit
	for _, e := range r.watch.edits {
		if e.from == rec.SHA256Written && (e.to == rec.SHA256Launched || rec.SHA256Launched == "" && e.at.Before(r.runStartedBefore(q.Time))) {
			ed = e
		}
	}
	r.watch.mu.Unlock()
	switch {
	case seen:
		want = handoffMarks(doc)
	case rec.Degraded:
		want = []string{handoffwriter.DegradedMarker}
	default:
		// The file came and went between two samples: the marks of the
		// predecessor's last writing reply.
		r.model.mu.Lock()
		best := 0
		for ord, s := range r.model.written {
			if s == st.Generations[recGen].SessionID && ord > best {
				best = ord
			}
		}
		r.model.mu.Unlock()
		want = []string{fmt.Sprintf("DOING-MARK-%d", best), fmt.Sprintf("NEXT-MARK-%d", best)}
	}
	if len(want) == 0 {
		r.breach(what, "generation %d's handoff (%s) carries no marks", recGen+1, clip(doc, 300))
	}
	if ed != nil {
		want = append(want, ed.mark)
		if strings.Contains(q.AllText, ed.mark) {
			res.edits++
		}
	}
	for _, m := range want {
		if !strings.Contains(q.AllText, m) {
			r.breach(what, "generation %d's first request (seq %d) lacks %q of generation %d's handoff", g.N, q.Seq, m, recGen+1)
		}
	}
	if rec.Degraded {
		res.degraded = append(res.degraded, fmt.Sprintf("seed %d generation %d: %s", r.seed, g.N, rec.Why))
		if !slices.Contains(st.Errors, "交接降级("+rec.Why+")") {
			r.breach(what, "generation %d's handoff is degraded (%s) but errors lack 交接降级(…) for it: %q", recGen+1, rec.Why, st.Errors)
		}
	}
}

// limitWords are what an error or a degraded handoff's reason says when a
// limit caused it.
var limitWords = []string{"rate limit", "rate_limit", "hit your", "usage limit", "429"}

// checkLimits: a limit is waited out, not failed (DESIGN.md «Unattended:
// limits, budget, deadline»). On every front no attempt is counted for
// one, no handoff is degraded for one, and after a limit that reached
// flower the session it hit sends the next request (on the interactive
// front once the person typed on) — unless a process fault landed while
// the limit was answered or flower waited. On the headless front the wait is recorded in that
// session's generation.
func (r *round) checkLimits(st *manifest.StepResult) {
	for _, e := range st.Errors {
		if strings.HasPrefix(e, "attempt ") && containsAny(e, limitWords) {
			r.breach("no attempt is counted for a limit", "%s", clip(e, 200))
		}
	}
	for _, g := range st.Generations {
		if h := g.Handoff; h != nil && h.Degraded && containsAny(h.Why, limitWords) {
			r.breach("no handoff is degraded for a limit", "generation %d: %s", g.N, h.Why)
		}
	}
	oauth := strings.HasPrefix(r.key, "sk-ant-oat01-")
	for _, f := range r.plan {
		var kind string
		switch {
		case f.kind == faultAPIUsageLimit && f.hits > 0:
			kind = "usage_limit"
		case f.kind == faultAPIRateLimit && f.hits == 3 && !oauth:
			// Three in a row reach flower: the harness retries two.
			kind = "rate_limit"
		default:
			continue
		}
		// A process fault from the limit's first answer on: a harness
		// killed between two of its answers never passed the limit on
		// (the next one retried the rest itself), and one killed while
		// flower waited leaves the wait to the next flower.
		q0, ok0 := r.requestBySeq(f.firstSeq)
		q, ok := r.requestBySeq(f.lastSeq)
		if !ok || !ok0 || r.processFaultNear(q0.Time, q.Time.Sub(q0.Time)+5*time.Second) {
			r.note("limit: %s not checked: a process fault landed while the limit was answered or flower waited", f)
			continue
		}
		i := slices.IndexFunc(st.Generations, func(g manifest.Generation) bool { return g.SessionID == f.session })
		if i < 0 {
			r.breach("a limit is waited out in the same session", "%s hit session %s, which no generation records", f, f.session)
			continue
		}
		if r.front.name() == "headless" && !slices.ContainsFunc(st.Generations[i].LimitWaits, func(w manifest.LimitWait) bool { return w.Kind == kind }) {
			r.breach("a limit is waited out in the same session", "%s: generation %d records no %s wait (%+v)", f, i+1, kind, st.Generations[i].LimitWaits)
		}
		for _, n := range r.srv.Requests() {
			if n.Seq > f.lastSeq && isMain(&n) {
				if n.SessionID != f.session {
					r.breach("a limit is waited out in the same session", "%s hit session %s; the next request (seq %d) went to %s", f, f.session, n.Seq, n.SessionID)
				} else {
					r.note("limit: %s waited out in generation %d; seq %d went on in the same session %s %.1fs later",
						f, i+1, n.Seq, clip(f.session, 8), n.Time.Sub(q.Time).Seconds())
				}
				break
			}
		}
	}
}

func containsAny(s string, words []string) bool {
	for _, w := range words {
		if strings.Contains(s, w) {
			return true
		}
	}
	return false
}

func (r *round) requestBySeq(seq int) (scriptedapi.Request, bool) {
	for _, q := range r.srv.Requests() {
		if q.Seq == seq {
			return q, true
		}
	}
	return scriptedapi.Request{}, false
}

// processFaultNear reports whether a process fault was injected within d
// after t.
func (r *round) processFaultNear(t time.Time, d time.Duration) bool {
	for _, f := range r.plan {
		if f.injected && !f.injectedAt.Before(t) && f.injectedAt.Sub(t) < d {
			return true
		}
	}
	return false
}
