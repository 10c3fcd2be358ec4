// Package checkup owns the list of facts about the harness that flower
// relies on, and checks them on a real harness in seconds: each check
// starts the harness the way a run starts it (supervisor.Runtime.LaunchSpec:
// the same flags, environment and settings), with a HOME and a workspace of
// its own, against a scripted model on 127.0.0.1 (package scriptedapi), so
// it needs no key and sends nothing anywhere. flower doctor prints the
// results; the integration tests run the same list, so no fact is written
// down twice (DESIGN.md «Doctor»). CodexFacts are the same for the Codex
// CLI: its app-server against a scripted Responses API (scriptedresp).
package checkup

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/flowerhq/flower/demo"
	"github.com/flowerhq/flower/front"
	"github.com/flowerhq/flower/harness"
	"github.com/flowerhq/flower/scriptedapi"
	"github.com/flowerhq/flower/supervisor"
	"github.com/flowerhq/flower/transcript"
)

// Fact is one thing flower relies on the harness for.
type Fact struct {
	// Name says what must hold, in a few words.
	Name string
	// Section is the docs/DESIGN.md section that relies on it.
	Section string
	check   func(ctx context.Context, c *Checkup) (detail string, err error)
}

// Result is what a check found.
type Result struct {
	Fact Fact
	OK   bool
	// Detail is what was seen when the fact holds, and why it does not
	// otherwise.
	Detail string
	Took   time.Duration
}

// Line is the result as flower doctor prints it: one line, ✓ or ✗, the
// fact, the DESIGN.md section, and the detail.
func (r Result) Line() string {
	mark := "✓"
	if !r.OK {
		mark = "✗"
	}
	return fmt.Sprintf("%s %s (DESIGN.md «%s»): %s", mark, r.Fact.Name, r.Fact.Section, oneLine(r.Detail))
}

// Config says which harness to check, started as a run would start it.
type Config struct {
	// Harness is the executable.
	Harness string
	// Args are the pass-through flags a run would give it (after "--"):
	// for Codex, app-server's (-c key=value), after flower's own.
	Args []string
	// Env is the base environment. Whatever could carry a credential,
	// point the harness elsewhere or reach the person's own configuration
	// is dropped (demo.HarnessEnv; for Codex, codexEnv); each check gets a
	// HOME of its own (and Codex a CODEX_HOME).
	Env []string
	// Flower is the flower executable whose `hook precompact --codex`
	// the Codex checks give Codex as its PreCompact hook; without one the
	// hook's check fails.
	Flower string
	// Logger receives flower's log of each check's harness (discarded
	// when nil).
	Logger *slog.Logger
}

// Checkup runs checks on one harness. A check that needs an ordinary
// session of two turns shares one (basic).
type Checkup struct {
	cfg       Config
	basicOnce sync.Once
	basic     *basicRun
}

// New prepares a checkup of the harness cfg names.
func New(cfg Config) *Checkup {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Checkup{cfg: cfg}
}

// checkTimeout bounds one check: a harness start or two, a few turns, on a
// loaded machine.
const checkTimeout = 90 * time.Second

// Run runs facts, up to parallel at a time, and returns their results in
// the order of facts.
func (c *Checkup) Run(ctx context.Context, facts []Fact, parallel int) []Result {
	out := make([]Result, len(facts))
	sem := make(chan struct{}, max(parallel, 1))
	var wg sync.WaitGroup
	for i, f := range facts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			out[i] = c.One(ctx, f)
		}()
	}
	wg.Wait()
	return out
}

// One runs one fact's check.
func (c *Checkup) One(ctx context.Context, f Fact) Result {
	ctx, cancel := context.WithTimeout(ctx, checkTimeout)
	defer cancel()
	start := time.Now()
	detail, err := f.check(ctx, c)
	r := Result{Fact: f, OK: err == nil, Detail: detail, Took: time.Since(start)}
	if err != nil {
		r.Detail = err.Error()
	}
	return r
}

// place is the HOME and workspace of one check, and its scripted model.
type place struct {
	root, home, workspace string
	srv                   *scriptedapi.Server
	env                   []string // the base environment given to the run
}

// newPlace makes a fresh HOME and workspace under a temporary directory and
// starts a scripted model; close removes both.
func (c *Checkup) newPlace(script scriptedapi.Script) (*place, error) {
	root, err := os.MkdirTemp("", "flower-doctor-")
	if err != nil {
		return nil, fmt.Errorf("temporary directory: %w", err)
	}
	// The harness reports its working directory resolved.
	if r, err := filepath.EvalSymlinks(root); err == nil {
		root = r
	}
	p := &place{root: root, home: filepath.Join(root, "home"), workspace: filepath.Join(root, "workspace")}
	for _, d := range []string{p.home, p.workspace} {
		if err := os.Mkdir(d, 0o755); err != nil {
			_ = os.RemoveAll(root)
			return nil, fmt.Errorf("temporary directory: %w", err)
		}
	}
	if p.srv, err = scriptedapi.Start(script); err != nil {
		_ = os.RemoveAll(root)
		return nil, fmt.Errorf("start the scripted model: %w", err)
	}
	p.env = demo.HarnessEnv(c.cfg.Env, p.home, p.srv.Env())
	return p, nil
}

func (p *place) close() {
	p.srv.Close()
	_ = os.RemoveAll(p.root)
}

// write puts a file under the workspace (or, with home, under HOME).
func (p *place) write(home bool, rel, content string) error {
	dir := p.workspace
	if home {
		dir = p.home
	}
	path := filepath.Join(dir, rel)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, []byte(content), 0o644)
}

// spec is how a run in p would start its harness: supervisor.Runtime
// decides the flags, environment and settings, exactly as for a run.
func (c *Checkup) spec(p *place) (front.Spec, front.Launcher, error) {
	rt, err := supervisor.New(supervisor.Options{
		Workspace: p.workspace, RunDir: filepath.Join(p.root, "run"), Front: harness.Headless{},
		HarnessPath: c.cfg.Harness, HarnessArgs: c.cfg.Args, Env: p.env, Logger: c.cfg.Logger,
	})
	if err != nil {
		return front.Spec{}, nil, fmt.Errorf("set up the run: %w", err)
	}
	return rt.LaunchSpec("doctor"), rt.Launcher(), nil
}

// session is one headless harness started as a run starts it.
type session struct {
	s    front.Session
	seen []transcript.Event
	env  []string
	dir  string
}

// start starts the harness of p the way a run does (the headless front),
// with first as its first prompt, unless first is "" (then nothing is sent
// yet).
func (c *Checkup) start(ctx context.Context, p *place) (*session, error) {
	spec, launcher, err := c.spec(p)
	if err != nil {
		return nil, err
	}
	// A prompt now, so the front starts a plain session (an empty one
	// would be warmed as a successor is); Begin sends it when asked.
	spec.Prompt = "-"
	s, err := launcher.Launch(ctx, spec)
	if err != nil {
		return nil, fmt.Errorf("start the harness: %w", err)
	}
	return &session{s: s, env: spec.Env, dir: spec.Dir}, nil
}

// begin starts a harness as start does, in a place of its own whose model
// is script, and sends it prompt as its first turn; end stops the harness
// and removes the place.
func (c *Checkup) begin(ctx context.Context, script scriptedapi.Script, prompt string) (p *place, s *session, end func(), err error) {
	if p, err = c.newPlace(script); err != nil {
		return nil, nil, nil, err
	}
	if s, err = c.start(ctx, p); err != nil {
		p.close()
		return nil, nil, nil, err
	}
	end = func() { s.stop(); p.close() }
	if err := s.s.Send(front.Turn{Kind: front.TurnWork, Prompt: prompt}); err != nil {
		end()
		return nil, nil, nil, fmt.Errorf("send a turn: %w", err)
	}
	return p, s, end, nil
}

// turn sends text as a new turn and returns the records through its result.
func (s *session) turn(ctx context.Context, text string) ([]transcript.Event, error) {
	if err := s.s.Send(front.Turn{Kind: front.TurnWork, Prompt: text}); err != nil {
		return nil, fmt.Errorf("send a turn: %w", err)
	}
	return s.until(ctx, "the turn's result", func(ev *transcript.Event) bool { return ev.Kind == transcript.KindResult })
}

// until reads records until match accepts one, and returns them all. The
// checks are of the harness's own lines, so they read the front's Output
// facts, each a line as the harness wrote it.
func (s *session) until(ctx context.Context, what string, match func(*transcript.Event) bool) ([]transcript.Event, error) {
	var got []transcript.Event
	for {
		f, err := s.s.Next(ctx)
		switch {
		case ctx.Err() != nil:
			return got, fmt.Errorf("no %s in time: %w", what, ctx.Err())
		case err != nil:
			return got, fmt.Errorf("the harness ended before %s: %s", what, s.s.Exit().Why)
		}
		out, isLine := f.(front.Output)
		if !isLine {
			continue
		}
		ev, err := transcript.Decode(out.Raw)
		if err != nil {
			continue
		}
		s.seen = append(s.seen, ev)
		got = append(got, ev)
		if match(&ev) {
			return got, nil
		}
	}
}

func (s *session) stop() { s.s.Stop() }

// probe asks the harness's own view of its context (get_context_usage).
func (s *session) probe(ctx context.Context) (string, error) {
	pr, ok := s.s.(front.Prober)
	if !ok {
		return "", errors.New("the front cannot ask the context-usage request")
	}
	r, err := pr.Probe(ctx)
	if err != nil {
		return "", err
	}
	return r.Raw, nil
}

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 400 {
		s = s[:400] + "…"
	}
	return s
}

// LaunchArgs are the flags a run in a fresh workspace would give the
// harness (supervisor.Runtime.LaunchSpec): what the checks start it with.
func (c *Checkup) LaunchArgs() ([]string, error) {
	p, err := c.newPlace(scriptedapi.Sequence())
	if err != nil {
		return nil, err
	}
	defer p.close()
	spec, _, err := c.spec(p)
	if err != nil {
		return nil, err
	}
	return spec.Args, nil
}

// HoldsCompactionOff reports whether a run gives the harness flower's own
// --settings (DESIGN.md «Compaction levers»): without it the two facts of
// compaction cannot hold.
func (c *Checkup) HoldsCompactionOff() (bool, error) {
	args, err := c.LaunchArgs()
	if err != nil {
		return false, err
	}
	for _, a := range args {
		if strings.HasPrefix(a, "--settings") {
			return true, nil
		}
	}
	return false, nil
}

// CompactionFacts are the facts that need flower's compaction levers.
var CompactionFacts = []string{FactHostileEnv, FactPreCompact}
