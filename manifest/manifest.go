// Package manifest owns <run_dir>/manifest.json, the run's bookkeeping
// (DESIGN.md «Manifest», «Receipts»): one StepResult per step with its
// attempts, burned sessions, latest session, context, accumulated cost,
// errors (including degraded handoffs) and one Generation per session, so
// that from this file alone a person can tell how many generations a step
// burned and what each cost. A Manifest is not safe for concurrent use; one
// goroutine owns it.
package manifest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/flowerhq/flower/atomicfile"
	"github.com/flowerhq/flower/safefile"
)

// FileName is the manifest's name inside the run directory.
const FileName = "manifest.json"

// MaxSize caps a manifest.json that Load reads (DESIGN.md «Input caps»): a
// run of a thousand generations with a task at its cap stays far below it.
const MaxSize = 16 << 20

// Version is the manifest format this package writes and reads.
const Version = 1

// Step statuses.
const (
	StatusRunning         = "running"
	StatusSucceeded       = "succeeded"
	StatusFailed          = "failed"
	StatusGenerationLimit = "generation_limit"
	StatusInterrupted     = "interrupted"
	// StatusAuthFailed: the API refused the credentials (401 or 403)
	// after a retry; the step stopped, its session kept for continue.
	StatusAuthFailed = "auth_failed"
	// StatusUntrusted: a file the harness reads changed under the run
	// (DESIGN.md «Trust store»); the step stopped before the next harness
	// started, its session kept for continue once the person looked.
	StatusUntrusted = "workspace_changed"
	// StatusUnreachable: the API endpoint refused the connection or its
	// name did not resolve, before any request of the run went through;
	// the step stopped at once, for continue once it is fixed.
	StatusUnreachable = "unreachable"
)

// Where a step's context window figure came from.
const (
	WindowFromFlag    = "flag"
	WindowFromHarness = "harness"
	WindowFromModel   = "model name"
)

// Why a generation was cut.
const (
	ReasonThreshold = "threshold"
	ReasonOverflow  = "overflow"
	// ReasonCompaction: the harness compacted the context although
	// handoff had switched auto-compact off; the compacted context is not
	// trusted, so the session hands off at the next boundary.
	ReasonCompaction = "compaction"
	// ReasonLost: the machine running the generation was lost (a remote
	// worker stopped heartbeating); nothing could be asked of its session.
	ReasonLost = "lost"
	// ReasonCompactBlocked: compaction was asked for (a /compact, or the
	// harness's second automatic attempt in a session) and flower's hook
	// blocked it; a handoff takes its place (DESIGN.md «Compaction asked for»).
	ReasonCompactBlocked = "compact_blocked"
	// ReasonRequested: a handoff was asked for (flower handoff now, or the
	// interactive key; DESIGN.md «Handoff on request»).
	ReasonRequested = "requested"
)

// ErrUnsupportedVersion is wrapped by Load when the file was written by a
// newer flower.
var ErrUnsupportedVersion = errors.New("unsupported manifest version")

// Manifest is the content of manifest.json.
type Manifest struct {
	Version   int       `json:"version"`
	RunDir    string    `json:"run_dir"`
	Workspace string    `json:"workspace"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
	// HarnessKind names the harness the run was started on ("claude",
	// "codex"; empty for a run of a flower before there was a choice),
	// so that continue and rerun go on on the same one.
	HarnessKind string `json:"harness_kind,omitempty"`
	// Probe is the harness's answer to the context-usage request, asked
	// once per run and reused by every later session and continuation
	// (DESIGN.md «Window from the harness»); nil until a session answered
	// or the request failed.
	Probe *Probe `json:"probe,omitempty"`
	// Steps is the last member, so that a save writes each step after the
	// rest (encode.go).
	Steps []*StepResult `json:"steps"`

	// enc is what the last save encoded, kept for the next (encode.go).
	enc encoder
}

// Probe is what the harness said of its context when asked once per run
// (get_context_usage): the window, the start-up floor of a session (system
// prompt, tools and skills, without messages) and whether auto-compact is
// on, for the model it answered for. When the request failed or timed out,
// Fallback says why and what is in force instead; the figures are then
// zero.
type Probe struct {
	Model     string    `json:"model,omitempty"`
	SessionID string    `json:"session_id,omitempty"`
	At        time.Time `json:"at"`
	// Seconds is how long the answer took.
	Seconds            float64 `json:"seconds"`
	Window             int     `json:"window,omitempty"`
	Floor              int     `json:"floor,omitempty"`
	AutoCompactEnabled *bool   `json:"auto_compact_enabled,omitempty"`
	Fallback           string  `json:"fallback,omitempty"`
}

// StepResult is one step's record.
type StepResult struct {
	Name   string `json:"name"`
	Task   string `json:"task"`
	Status string `json:"status"`
	// Attempts counts failed attempts only; a handoff is not one.
	Attempts int `json:"attempts"`
	// Retired lists the session ids this step burned, in order.
	Retired []string `json:"retired"`
	// SessionID is the latest successor, never a burned session: it is what
	// continuation resumes (DESIGN.md «Continuation»).
	SessionID string `json:"session_id"`
	// Context is the main thread's context size in the last round
	// (DESIGN.md «Context meter»).
	Context      int    `json:"context"`
	Window       int    `json:"window"`
	WindowSource string `json:"window_source"`
	// CostUSD and NumTurns accumulate over retries and generations.
	CostUSD  float64 `json:"cost_usd"`
	NumTurns int     `json:"num_turns"`
	// Errors includes one 交接降级(<why>) entry per degraded handoff
	// (DESIGN.md «Degraded handoff»).
	Errors      []string `json:"errors"`
	HandoffPath string   `json:"handoff_path,omitempty"`
	// TaskPath is the workbench file the task was frozen to at the step's
	// start (a person may edit it; successors read it). Without a workbench
	// it is empty and Task is the only copy. TaskSHA256 is the sha256 of
	// the task as given (compare the receipts' task_sha256).
	TaskPath   string     `json:"task_path,omitempty"`
	TaskSHA256 string     `json:"task_sha256,omitempty"`
	StartedAt  time.Time  `json:"started_at"`
	EndedAt    *time.Time `json:"ended_at,omitempty"`
	Model      string     `json:"model,omitempty"`
	// BudgetUSD and Deadline are the step's bounds, when it has them
	// (DESIGN.md «Unattended: limits, budget, deadline»).
	BudgetUSD float64    `json:"budget_usd,omitempty"`
	Deadline  *time.Time `json:"deadline,omitempty"`
	// Generations is the last member, so that a save writes each one
	// after the rest of the step (encode.go).
	Generations []Generation `json:"generations"`
}

// Generation is one session's share of a step.
type Generation struct {
	N         int        `json:"n"` // 1-based
	SessionID string     `json:"session_id"`
	StartedAt time.Time  `json:"started_at"`
	EndedAt   *time.Time `json:"ended_at,omitempty"`
	CostUSD   float64    `json:"cost_usd"`
	NumTurns  int        `json:"num_turns"`
	// Context is the main thread's context at the end, or at the cut.
	Context int `json:"context"`
	// Answered: the session's first request was answered, so its first
	// prompt is surely in its conversation. A continue resumes a session
	// that was named but never answered with that prompt again (DESIGN.md
	// «Continuation»).
	Answered bool `json:"answered,omitempty"`
	// What the harness said when this generation's session was asked
	// (get_context_usage, once per run: see Manifest.Probe): its window,
	// its start-up floor, and whether its auto-compact is on. Zero/nil in
	// the generations that reused the run's answer, and when it did not
	// answer.
	HarnessWindow      int   `json:"harness_window,omitempty"`
	StartFloor         int   `json:"start_floor,omitempty"`
	AutoCompactEnabled *bool `json:"auto_compact_enabled,omitempty"`
	// BlockedCompactions are the compactions flower's PreCompact hook
	// blocked in this generation (DESIGN.md «Compaction levers»), the first
	// MaxBlockedCompactions of them; BlockedCompactionsMore counts the rest.
	BlockedCompactions     []BlockedCompaction `json:"blocked_compactions,omitempty"`
	BlockedCompactionsMore int                 `json:"blocked_compactions_more,omitempty"`
	// Compactions are the compactions the harness did run in this
	// generation: with compact mode auto, or past every lever (DESIGN.md
	// «Compaction backstop»); the first MaxBlockedCompactions of them.
	Compactions []Compaction `json:"compactions,omitempty"`
	// LimitWaits are the waits for a rate or usage limit in this
	// generation (DESIGN.md «Unattended: limits, budget, deadline»).
	LimitWaits []LimitWait `json:"limit_waits,omitempty"`
	// Handoff says how this generation was cut; nil for the live or last one.
	Handoff *HandoffRecord `json:"handoff,omitempty"`
}

// MaxBlockedCompactions bounds the blocked compactions a generation lists.
const MaxBlockedCompactions = 32

// BlockedCompaction is one compaction the harness tried and flower's hook
// blocked.
type BlockedCompaction struct {
	At time.Time `json:"at"`
	// Trigger is the harness's: "manual" (a /compact) or "auto".
	Trigger string `json:"trigger"`
	// Context is the main thread's context when flower heard of it
	// (DESIGN.md «Context meter»).
	Context   int    `json:"context"`
	SessionID string `json:"session_id,omitempty"`
}

// Compaction is one compaction the harness ran (its compact_boundary line).
type Compaction struct {
	At      time.Time `json:"at"`
	Trigger string    `json:"trigger,omitempty"`
	// PreTokens and PostTokens are the harness's own figures of the
	// context before and after.
	PreTokens  int `json:"pre_tokens,omitempty"`
	PostTokens int `json:"post_tokens,omitempty"`
}

// AddCompaction records a compaction the harness ran in the current
// generation.
func (s *StepResult) AddCompaction(c Compaction) {
	if g := s.Current(); g != nil && len(g.Compactions) < MaxBlockedCompactions {
		g.Compactions = append(g.Compactions, c)
	}
}

// AddBlockedCompaction records a blocked compaction in the current
// generation (a step without one records nothing).
func (s *StepResult) AddBlockedCompaction(b BlockedCompaction) {
	g := s.Current()
	if g == nil {
		return
	}
	if len(g.BlockedCompactions) >= MaxBlockedCompactions {
		g.BlockedCompactionsMore++
		return
	}
	g.BlockedCompactions = append(g.BlockedCompactions, b)
}

// Outcomes of a handoff's writing turn.
const (
	OutcomeWritten        = "written"
	OutcomeWrittenOnRetry = "written on the second ask"
	OutcomeDegraded       = "degraded"
	OutcomeNoWritingTurn  = "no writing turn"
)

// How much of the task a successor's first prompt carried.
const (
	TaskCarriedWhole = "whole"
	// TaskCarriedPart: the first part, and where to read the rest.
	TaskCarriedPart = "first part"
)

// HandoffRecord describes one handoff from a generation to its successor.
type HandoffRecord struct {
	Reason         string   `json:"reason"` // ReasonThreshold, ReasonOverflow, ReasonCompaction, ReasonCompactBlocked, ReasonRequested or ReasonLost
	Context        int      `json:"context"`
	At             int      `json:"at"`
	Window         int      `json:"window"`
	Degraded       bool     `json:"degraded"`
	Why            string   `json:"why,omitempty"`
	Path           string   `json:"path,omitempty"`
	Sections       []string `json:"sections,omitempty"`
	WritingSeconds float64  `json:"writing_seconds"`
	WritingCostUSD float64  `json:"writing_cost_usd"`
	// SHA256Written and SHA256Launched differ when a person edited the
	// file between freezing and the successor's launch (DESIGN.md
	// «Launch from disk»).
	SHA256Written  string `json:"sha256_written,omitempty"`
	SHA256Launched string `json:"sha256_launched,omitempty"`
	// TaskSHA256 is the sha256 of the task as read for the successor's
	// first prompt (the file on disk, or Task without one); it differs from
	// the task as given when a person edited the file. TaskPath is where it
	// was read ("" when it came from the manifest) and TaskCarried says how
	// much of it went into the prompt: TaskCarriedWhole or TaskCarriedPart.
	// All three are empty when carrying is off.
	TaskSHA256  string `json:"task_sha256,omitempty"`
	TaskPath    string `json:"task_path,omitempty"`
	TaskCarried string `json:"task_carried,omitempty"`
	// WindowSource says where Window came from (flag, harness, model name).
	WindowSource string `json:"window_source,omitempty"`
	// CutFromBytes, when set, is how large the written document was before
	// it was cut to the cap for a handoff (DESIGN.md «Input caps»): the
	// file holds the cut document, marked.
	CutFromBytes int `json:"cut_from_bytes,omitempty"`
	// Outcome of the writing turn: OutcomeWritten, OutcomeWrittenOnRetry,
	// OutcomeDegraded, or OutcomeNoWritingTurn (overflow: the session could
	// not run another turn).
	Outcome string `json:"outcome,omitempty"`
}

// CorruptError is returned by Load for a file that exists but does not hold
// a manifest (empty, half-written, not JSON, not an object).
type CorruptError struct {
	Path string
	Err  error
}

// Error describes the failure; it is what a person sees.
func (e *CorruptError) Error() string {
	return fmt.Sprintf("manifest %s is corrupt: %v", e.Path, e.Err)
}

// Unwrap returns the underlying error, for errors.Is and errors.As.
func (e *CorruptError) Unwrap() error { return e.Err }

// Path is the manifest's path for a run directory.
func Path(runDir string) string {
	return filepath.Join(runDir, FileName)
}

// New returns an empty manifest for runDir, created at now.
func New(runDir, workspace string, now time.Time) *Manifest {
	return &Manifest{
		Version:   Version,
		RunDir:    runDir,
		Workspace: workspace,
		CreatedAt: now,
		UpdatedAt: now,
		Steps:     []*StepResult{},
	}
}

// Load reads the manifest at path. A missing file gives an error wrapping
// fs.ErrNotExist; a file that is not a manifest gives a *CorruptError; a
// file from a newer flower gives an error wrapping ErrUnsupportedVersion.
// Load keeps the RunDir recorded in the file. The file must be a regular
// file, not a link, of at most MaxSize bytes (a *safefile.Error otherwise);
// LoadBound also checks that it belongs where it was found.
func Load(path string) (*Manifest, error) {
	data, err := safefile.ReadFile(filepath.Dir(path), path, MaxSize, "a manifest")
	if err != nil {
		return nil, fmt.Errorf("load manifest: %w", err)
	}
	corrupt := func(err error) error { return &CorruptError{Path: path, Err: err} }
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, corrupt(errors.New("empty file"))
	}
	// Decoding into a pointer is how `null` shows up as nil instead of an
	// untouched zero Manifest.
	var m *Manifest
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, corrupt(err)
	}
	if m == nil {
		return nil, corrupt(errors.New("null instead of an object"))
	}
	switch {
	case m.Version > Version:
		return nil, fmt.Errorf("manifest %s has version %d, this flower reads up to %d: %w",
			path, m.Version, Version, ErrUnsupportedVersion)
	case m.Version < 1:
		return nil, corrupt(fmt.Errorf("missing or invalid version %d", m.Version))
	}
	for i, s := range m.Steps {
		if s == nil {
			return nil, corrupt(fmt.Errorf("steps[%d] is null", i))
		}
		s.normalize()
	}
	if m.Steps == nil {
		m.Steps = []*StepResult{}
	}
	return m, nil
}

// Save writes the manifest atomically to Path(m.RunDir), creating the run
// directory if needed, and sets UpdatedAt (and CreatedAt if unset).
func (m *Manifest) Save() error { return m.SaveIn(nil) }

// SaveIn is Save through dir, the run dir held open (atomicfile.OpenDir):
// the file is written in the folder dir holds, by name, with no walk of
// the path and no open of the folder. A nil dir, or one opened at another
// path than m.RunDir, is passed over, and so is one removed since it was
// opened: the save then goes by path, and makes the run dir again.
func (m *Manifest) SaveIn(dir *atomicfile.Dir) error {
	if m.RunDir == "" {
		return errors.New("save manifest: empty run dir")
	}
	now := time.Now().UTC()
	if m.CreatedAt.IsZero() {
		m.CreatedAt = now
	}
	if m.Version == 0 {
		m.Version = Version
	}
	m.UpdatedAt = now
	data, err := m.enc.encode(m)
	if err != nil {
		return fmt.Errorf("save manifest: %w", err)
	}
	// Private to the user: it holds the task and the errors of the run
	// (DESIGN.md «Durable or loud»).
	err = fs.ErrNotExist
	if dir != nil && dir.Path() == m.RunDir {
		err = dir.WriteFile(FileName, data, 0o600)
	}
	if errors.Is(err, fs.ErrNotExist) {
		err = m.write(data)
	}
	if err != nil {
		return fmt.Errorf("save manifest: %w", err)
	}
	return nil
}

// write writes data to Path(m.RunDir). The run dir is made only when it
// is missing: after the first save it is there, and a save costs no walk
// of its path.
func (m *Manifest) write(data []byte) error {
	err := atomicfile.WriteFile(Path(m.RunDir), data, 0o600)
	if errors.Is(err, fs.ErrNotExist) {
		if err = os.MkdirAll(m.RunDir, 0o755); err == nil {
			err = atomicfile.WriteFile(Path(m.RunDir), data, 0o600)
		}
	}
	return err
}

// Step returns the step called name, or nil.
func (m *Manifest) Step(name string) *StepResult {
	for _, s := range m.Steps {
		if s.Name == name {
			return s
		}
	}
	return nil
}

// EnsureStep returns the step called name, adding it (status running,
// started at now) if absent. An existing step is returned unchanged.
func (m *Manifest) EnsureStep(name, task string, now time.Time) *StepResult {
	if s := m.Step(name); s != nil {
		return s
	}
	s := &StepResult{
		Name:        name,
		Task:        task,
		Status:      StatusRunning,
		Retired:     []string{},
		Errors:      []string{},
		Generations: []Generation{},
		StartedAt:   now,
	}
	m.Steps = append(m.Steps, s)
	return s
}

// MarshalJSON writes Retired, Errors and Generations as [] rather than null
// even for a StepResult built by hand, so readers of manifest.json never
// have to tell "none" from "missing".
func (s StepResult) MarshalJSON() ([]byte, error) {
	type plain StepResult // drops this method, avoiding recursion
	s.normalize()
	return json.Marshal(plain(s))
}

func (s *StepResult) normalize() {
	if s.Retired == nil {
		s.Retired = []string{}
	}
	if s.Errors == nil {
		s.Errors = []string{}
	}
	if s.Generations == nil {
		s.Generations = []Generation{}
	}
}

// AddError records msg in the step's errors.
func (s *StepResult) AddError(msg string) {
	s.Errors = append(s.Errors, msg)
}

// DegradedError records, and returns, the entry for a degraded handoff:
// "交接降级(" + why + ")" (DESIGN.md «Degraded handoff»). The step does not
// fail because of it.
func (s *StepResult) DegradedError(why string) string {
	msg := "交接降级(" + why + ")"
	s.AddError(msg)
	return msg
}

// Retire records sessionID as burned. Empty ids and an immediate
// repeat of the last one are ignored, so callers may retire defensively.
func (s *StepResult) Retire(sessionID string) {
	if sessionID == "" {
		return
	}
	if n := len(s.Retired); n > 0 && s.Retired[n-1] == sessionID {
		return
	}
	s.Retired = append(s.Retired, sessionID)
}

// Current returns the last generation, or nil if none began. The pointer
// stays valid until the next BeginGeneration.
func (s *StepResult) Current() *Generation {
	if len(s.Generations) == 0 {
		return nil
	}
	return &s.Generations[len(s.Generations)-1]
}

// BeginGeneration starts generation N+1 at now. A previous generation still
// open is ended at now. sessionID may be "" when the harness has not yet
// reported it; SetSessionID fills it in later. Retiring the previous
// session is the caller's decision (a retry may resume it).
func (s *StepResult) BeginGeneration(sessionID string, now time.Time) *Generation {
	if g := s.Current(); g != nil && g.EndedAt == nil {
		end := now
		g.EndedAt = &end
	}
	s.Generations = append(s.Generations, Generation{
		N:         len(s.Generations) + 1,
		SessionID: sessionID,
		StartedAt: now,
	})
	if sessionID != "" {
		s.SessionID = sessionID
	}
	return s.Current()
}

// SetSessionID records the session the harness reported as the step's
// latest and as the current generation's, if one began.
func (s *StepResult) SetSessionID(id string) {
	if id == "" {
		return
	}
	s.SessionID = id
	if g := s.Current(); g != nil {
		g.SessionID = id
	}
}

// AddUsage adds cost and turns to both the step and the current generation,
// keeping the step's totals equal to the sum over its generations.
// Usage before any generation counts for the step only.
func (s *StepResult) AddUsage(costUSD float64, turns int) {
	if g := s.Current(); g != nil {
		s.AddUsageOf(g.N, costUSD, turns)
		return
	}
	s.CostUSD += costUSD
	s.NumTurns += turns
}

// AddUsageOf is AddUsage for generation n, which need not be the current
// one: a burned generation's harness may tell its cost as it exits, after
// its successor's generation began.
func (s *StepResult) AddUsageOf(n int, costUSD float64, turns int) {
	s.CostUSD += costUSD
	s.NumTurns += turns
	for i := range s.Generations {
		if g := &s.Generations[i]; g.N == n {
			g.CostUSD += costUSD
			g.NumTurns += turns
		}
	}
}

// SetContext records the main thread's context of the last round on both
// the step and the current generation.
func (s *StepResult) SetContext(tokens int) {
	s.Context = tokens
	if g := s.Current(); g != nil {
		g.Context = tokens
	}
}

// Finish sets the step's final status and end time, ending the current
// generation too if it is still open.
func (s *StepResult) Finish(status string, now time.Time) {
	s.Status = status
	end := now
	s.EndedAt = &end
	if g := s.Current(); g != nil && g.EndedAt == nil {
		gEnd := now
		g.EndedAt = &gEnd
	}
}
