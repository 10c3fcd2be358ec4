// Package harness owns one running Claude Code process in stream-json mode:
// writing user turns and control requests to its stdin, turning its stdout
// into transcript events, and stopping it — gracefully first, forcefully
// after a bounded wait. A new generation is a new Process; a Process is
// never reused.
//
// The process itself is a child.Process: nothing of a harness outlives its
// Process or the program that started it, whatever its tools do to their
// session, group or environment (package child).
//
// What the package relies on of the harness is in DESIGN.md «Harness facts»
// («Stream-json», «Interrupt», «Result lines»); how a harness is stopped
// and why nothing outlives flower, in «Signals and orphans».
package harness

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/tidwall/gjson"

	"github.com/flowerhq/flower/child"
	"github.com/flowerhq/flower/envinject"
	"github.com/flowerhq/flower/front"
	"github.com/flowerhq/flower/transcript"
)

// StreamArgs are the arguments that put the harness in supervised mode.
// With --replay-user-messages the harness echoes each user line as it takes
// it, which is how the engine learns that a prompt sent while a turn ran
// went into that turn (DESIGN.md «Queued cut»).
var StreamArgs = []string{"-p", "--input-format", "stream-json", "--output-format", "stream-json", "--verbose", "--replay-user-messages"}

// DefaultGrace bounds each stage of stopping a harness (stdin closed →
// SIGINT → SIGKILL) when no grace is given.
const DefaultGrace = child.DefaultGrace

// EnvTag is set in the harness's environment, unique to its Process
// (child.EnvTag).
const EnvTag = child.EnvTag

// ErrExited is returned by writes and control requests once the harness has
// exited.
var ErrExited = front.ErrExited

// Config says how to start one harness process.
type Config struct {
	Path   string   // the claude executable
	Args   []string // pass-through arguments, after StreamArgs
	Model  string   // --model, when set
	Resume string   // --resume <session id>, when set
	Dir    string   // working directory
	Env    []string // the complete environment (see package envinject)
	Logger *slog.Logger
	// Grace bounds each stage of Stop (stdin closed → SIGINT → SIGKILL).
	// Zero means 5 seconds.
	Grace time.Duration
	// MaxLine bounds one stdout line (transcript.DefaultMaxLine when zero).
	MaxLine int
	// Exact: Args are the whole argument list, as a client of the harness
	// gave it (an Agent SDK relay); StreamArgs, Model and Resume are not
	// added.
	Exact bool
}

// Argv returns the arguments the harness is started with (without the
// executable).
func (c Config) Argv() []string {
	if c.Exact {
		return append([]string(nil), c.Args...)
	}
	args := append([]string(nil), StreamArgs...)
	if c.Model != "" {
		args = append(args, "--model", c.Model)
	}
	if c.Resume != "" {
		args = append(args, "--resume", c.Resume)
	}
	return append(args, c.Args...)
}

// secretFlags carry JSON (or files of it) that may hold credentials: an
// MCP server's env or headers, a settings file's env, an agent's MCP
// servers. Their values never reach a log or a screen. --mcp-config takes
// several values; so does any flag here, as far as LoggedArgs is concerned.
var secretFlags = map[string]bool{"--mcp-config": true, "--managed-settings": true, "--settings": true, "--agents": true}

// LoggedArgs returns args fit for a log or a screen: every value of a flag
// that may carry credentials is replaced by its size (all of the values that
// follow it up to the next flag, since such a flag may take several), and
// every other argument that is a URL is masked as envinject.RedactURL masks
// one: gateways and plugin hosts carry tokens in paths and queries
// (DESIGN.md «Secrets on screen and in logs»).
func LoggedArgs(args []string) []string {
	out := append([]string(nil), args...)
	secret := false // the values after a secret flag, up to the next flag
	for i, a := range out {
		name, value, inline := strings.Cut(a, "=")
		isFlag := strings.HasPrefix(a, "-") && a != "-"
		switch {
		case isFlag && secretFlags[name]:
			secret = true
			if inline {
				out[i] = name + "=" + size(value)
			}
		case isFlag:
			secret = false
			if inline && looksLikeURL(value) {
				out[i] = name + "=" + envinject.RedactURL(value)
			}
		case secret:
			out[i] = size(a)
		case looksLikeURL(a):
			out[i] = envinject.RedactURL(a)
		}
	}
	return out
}

func size(value string) string { return "<" + strconv.Itoa(len(value)) + " bytes>" }

// looksLikeURL: scheme://…, the shape RedactURL takes apart.
func looksLikeURL(s string) bool {
	scheme, rest, ok := strings.Cut(s, "://")
	return ok && scheme != "" && rest != "" && !strings.ContainsAny(scheme, " /\t\n")
}

// Process is one running harness. Events arrive on Events until the harness
// exits; then Events is closed and Done is closed once Wait has returned.
type Process struct {
	c      *child.Process
	log    *slog.Logger
	grace  time.Duration
	stdin  *os.File
	stdout *pipeReader

	writeMu sync.Mutex

	events chan transcript.Event
	done   chan struct{}
	exited chan struct{} // closed when Wait has returned
	err    error         // Wait's result, valid after exited

	stderr *tail

	mu        sync.Mutex
	pending   map[string]chan transcript.Event
	fired     map[string]bool // interrupts sent, whose answers nobody reads
	nextID    int
	skipped   int
	warming   bool // Warm's blank turn has not ended yet: its lines are dropped
	drainOnce sync.Once
}

// Start starts the harness. The context bounds the process's life: when it
// is cancelled the group gets SIGINT, then SIGKILL after the grace period.
func Start(ctx context.Context, cfg Config) (*Process, error) {
	// Our own pipes, so that Wait never closes the read end under the
	// reader (every line the harness wrote is read before Events closes),
	// and never waits for a descendant that holds one open.
	pipes, err := newPipes()
	if err != nil {
		return nil, err
	}
	c, err := child.Start(ctx, child.Config{
		Path: cfg.Path, Args: cfg.Argv(), Dir: cfg.Dir, Env: cfg.Env,
		Stdin: pipes.inR, Stdout: pipes.outW, Stderr: pipes.errW,
		CancelSignal: syscall.SIGINT, Grace: cfg.Grace, Logger: cfg.Logger,
	})
	// The child holds its own copies now.
	pipes.closeChildEnds()
	if err != nil {
		pipes.closeOurEnds()
		return nil, fmt.Errorf("start harness: %w", err)
	}
	log, grace := c.Logger(), c.Grace()
	p := &Process{
		c:       c,
		log:     log,
		grace:   grace,
		stdin:   pipes.inW,
		stdout:  newPipeReader(pipes.outR),
		events:  make(chan transcript.Event),
		done:    make(chan struct{}),
		exited:  make(chan struct{}),
		stderr:  newTail(16 << 10),
		pending: map[string]chan transcript.Event{},
		fired:   map[string]bool{},
	}
	log.Debug("harness started", "pid", c.PID(), "args", LoggedArgs(cfg.Argv()), "containment", c.Containment())
	if trace != nil {
		trace.start(time.Now(), c.PID())
	}

	q := newQueue()
	readerDone := make(chan struct{})
	stderrDone := make(chan struct{})
	go p.read(cfg.MaxLine, q, readerDone)
	go q.pump(p.events)
	go func() {
		defer close(stderrDone)
		defer pipes.errR.Close()
		_, _ = io.Copy(p.stderr, pipes.errR)
	}()
	go func() {
		// Once the harness and all it left are gone, nothing holds its
		// output open: what it wrote to stderr is read before the exit is
		// told, since the reason for it is there.
		<-c.Done()
		for _, done := range []chan struct{}{stderrDone, readerDone} {
			select {
			case <-done:
			case <-time.After(grace):
				// Something flower could not reach holds the pipe: stop
				// waiting for it.
				log.Warn("harness output still open after all it started was killed", "pid", c.PID())
				p.stdout.Close()
				pipes.errR.Close()
				<-done
			}
			if done == stderrDone {
				p.err = c.Err()
				close(p.exited)
				log.Debug("harness exited", "pid", c.PID(), "err", p.err)
			}
		}
		p.stdin.Close()
		p.failPending()
		close(p.done)
	}()
	return p, nil
}

// pipes are a harness's standard files, both ends.
type pipes struct{ inR, inW, outR, outW, errR, errW *os.File }

func newPipes() (*pipes, error) {
	var p pipes
	var err error
	if p.inR, p.inW, err = os.Pipe(); err != nil {
		return nil, fmt.Errorf("stdin pipe: %w", err)
	}
	if p.outR, p.outW, err = os.Pipe(); err != nil {
		p.closeChildEnds()
		p.closeOurEnds()
		return nil, fmt.Errorf("stdout pipe: %w", err)
	}
	if p.errR, p.errW, err = os.Pipe(); err != nil {
		p.closeChildEnds()
		p.closeOurEnds()
		return nil, fmt.Errorf("stderr pipe: %w", err)
	}
	return &p, nil
}

func (p *pipes) closeChildEnds() { closeAll(p.inR, p.outW, p.errW) }
func (p *pipes) closeOurEnds()   { closeAll(p.inW, p.outR, p.errR) }

func closeAll(fs ...*os.File) {
	for _, f := range fs {
		if f != nil {
			f.Close()
		}
	}
}

// PID returns the harness's process id (which is also its process group id).
func (p *Process) PID() int { return p.c.PID() }

// Events delivers every decoded stdout record in order. Control responses to
// requests made with Control or Request are delivered to their caller, and
// those to Interrupt are dropped: Events carries the answers to requests
// someone else wrote to stdin (WriteLine) only. The
// channel is closed after the last line.
func (p *Process) Events() <-chan transcript.Event { return p.events }

// Drained returns a channel that receives, once every byte the harness
// wrote to stdout before the call has been read, how many records Events
// had been given by then: those include every record the harness wrote
// before the call. What the harness wrote before it ran a hook is so
// known to be read, however far behind the reader was (DESIGN.md «Inbox»).
func (p *Process) Drained() <-chan int { return p.stdout.Drained() }

// Done is closed when the harness has exited and its output has been read.
func (p *Process) Done() <-chan struct{} { return p.done }

// Err returns how the harness exited. Valid after Done is closed.
func (p *Process) Err() error { return p.err }

// Stderr returns the last part of what the harness wrote to stderr, its
// URLs masked (envinject.RedactURLs): it goes into errors, the manifest and
// the log, and an error may quote the endpoint, token and all.
func (p *Process) Stderr() string { return envinject.RedactURLs(p.stderr.String()) }

// Skipped returns how many stdout lines were not JSON (or too long) and were
// skipped.
func (p *Process) Skipped() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.skipped
}

// Warm readies a harness started before its first prompt is known: it
// sends a blank prompt, which the harness turns down without a request to
// the API ("Blank prompt … nothing was sent to the model") after running
// much of what a first prompt runs. Its first real prompt then reaches the
// API sooner: 180 ms instead of 215 ms, median of 8 against 8 on harness
// 2.1.328 (DESIGN.md «Warm successor»). What the harness says about the
// blank turn (its init, its notice, its result) is dropped here, so the
// session's first turn is the first prompt's, as without it. A line of any
// other kind ends the dropping: a harness that answered a blank prompt
// differently loses nothing of its real turns.
func (p *Process) Warm() error {
	p.mu.Lock()
	p.warming = true
	p.mu.Unlock()
	return p.SendUser(" ")
}

// warmLine reports whether ev belongs to Warm's blank turn.
func (p *Process) warmLine(ev *transcript.Event) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.warming {
		return false
	}
	switch {
	case ev.Kind == transcript.KindResult:
		p.warming = false
		return true
	case ev.Kind == transcript.KindInit, ev.Kind == transcript.KindSystem,
		ev.Kind == transcript.KindUser && ev.Replay: // 2.1.328 does not replay a blank prompt; one that did would not end the dropping
		return true
	}
	p.warming = false
	return false
}

// SendUser writes one user turn.
func (p *Process) SendUser(text string) error {
	return p.writeJSON(map[string]any{
		"type":    "user",
		"message": map[string]any{"role": "user", "content": text},
	})
}

// Interrupt asks the harness to stop the running turn at the next message
// boundary, as Ctrl-C does (DESIGN.md «Interrupt»). It does not wait: the
// turn's result record arrives on Events.
func (p *Process) Interrupt() error {
	id := p.newRequestID()
	p.mu.Lock()
	p.fired[id] = true
	p.mu.Unlock()
	return p.writeJSON(controlRequest(id, "interrupt"))
}

// Control sends a control request and waits for its response payload.
func (p *Process) Control(ctx context.Context, subtype string) (gjson.Result, error) {
	return p.Request(ctx, map[string]any{"subtype": subtype})
}

// Request sends a control request with the given body (its "request"
// object, which names the subtype) and waits for its response payload. The
// response is the caller's: it never reaches Events.
func (p *Process) Request(ctx context.Context, request any) (gjson.Result, error) {
	subtype := gjson.GetBytes(mustJSON(request), "subtype").String()
	id := p.newRequestID()
	ch := make(chan transcript.Event, 1)
	p.mu.Lock()
	p.pending[id] = ch
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		delete(p.pending, id)
		p.mu.Unlock()
	}()
	if err := p.writeJSON(map[string]any{"type": "control_request", "request_id": id, "request": request}); err != nil {
		return gjson.Result{}, err
	}
	select {
	case ev, ok := <-ch:
		if !ok {
			return gjson.Result{}, fmt.Errorf("control %s: %w", subtype, p.exitedError())
		}
		if ev.ControlError != "" {
			return gjson.Result{}, fmt.Errorf("control %s: %s", subtype, ev.ControlError)
		}
		return ev.Response, nil
	case <-ctx.Done():
		return gjson.Result{}, fmt.Errorf("control %s: %w", subtype, ctx.Err())
	}
}

// WriteLine writes one line, as a client of the harness gave it, to its
// stdin; a newline is added.
func (p *Process) WriteLine(line []byte) error {
	return p.write(append(append([]byte(nil), line...), '\n'))
}

// CloseInput closes the harness's stdin: it finishes the running turn, if
// any, and exits.
func (p *Process) CloseInput() error {
	p.writeMu.Lock()
	defer p.writeMu.Unlock()
	return p.stdin.Close()
}

// Stop ends the harness: stdin is closed, then after the grace period the
// process group gets SIGINT, then SIGKILL (child.Process.Stop). It returns when the harness has
// exited and is safe to call more than once and concurrently. Events not
// read by the time Stop is called are discarded: nobody reads them, and a
// harness whose output waits to be read could not exit.
func (p *Process) Stop() {
	p.drainOnce.Do(func() {
		go func() {
			for range p.events {
			}
		}()
	})
	p.c.Stop(p.CloseInput, syscall.SIGINT, syscall.SIGKILL)
	<-p.done
}

// Kill sends SIGKILL at once to the harness and everything it started.
func (p *Process) Kill() { p.c.Kill() }

func (p *Process) newRequestID() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.nextID++
	return "flower-" + strconv.Itoa(p.nextID)
}

func controlRequest(id, subtype string) map[string]any {
	return map[string]any{
		"type":       "control_request",
		"request_id": id,
		"request":    map[string]any{"subtype": subtype},
	}
}

// writeTimeout bounds one stdin write: a harness that stops reading its
// input must not hang the supervisor.
const writeTimeout = 30 * time.Second

func (p *Process) writeJSON(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode stdin line: %w", err)
	}
	return p.write(append(b, '\n'))
}

func mustJSON(v any) []byte {
	if raw, ok := v.(json.RawMessage); ok {
		return raw
	}
	b, _ := json.Marshal(v)
	return b
}

func (p *Process) write(b []byte) error {
	select {
	case <-p.exited:
		return p.exitedError()
	default:
	}
	p.writeMu.Lock()
	defer p.writeMu.Unlock()
	_ = p.stdin.SetWriteDeadline(time.Now().Add(writeTimeout))
	if _, err := p.stdin.Write(b); err != nil {
		if errors.Is(err, os.ErrClosed) || errors.Is(err, syscall.EPIPE) {
			return p.exitedError()
		}
		return fmt.Errorf("write harness stdin: %w", err)
	}
	if trace != nil {
		trace.in(time.Now(), p.PID(), b)
	}
	return nil
}

// read turns stdout into events. It owns the stdout pipe.
func (p *Process) read(maxLine int, q *queue, done chan<- struct{}) {
	defer close(done)
	defer q.close()
	defer p.stdout.ended()
	defer p.stdout.Close()
	lr := transcript.NewLineReader(p.stdout, maxLine)
	for {
		line, err := lr.Next()
		var read time.Time
		if trace != nil {
			read = time.Now()
		}
		if errors.Is(err, io.EOF) {
			return
		}
		var le *transcript.LineError
		if errors.As(err, &le) {
			p.skip("line too long", "line", le.Line, "bytes", le.Size)
			continue
		}
		if err != nil {
			p.log.Warn("read harness stdout", "err", err)
			return
		}
		if len(line) == 0 {
			continue
		}
		if limit := cmp.Or(maxLine, transcript.DefaultMaxLine); len(line) >= limit/4*3 {
			// DESIGN.md «Input caps»: said before a longer one is skipped.
			p.log.Warn("a harness stdout line near its cap", "line", lr.Lines(), "bytes", len(line), "cap", limit)
		}
		// The event keeps the line: copied once from the reader's buffer,
		// and decoded in that copy.
		raw := append([]byte(nil), line...)
		ev, err := transcript.DecodeOwned(raw)
		if err != nil {
			p.skip("not JSON", "line", lr.Lines(), "preview", preview(line))
			continue
		}
		if trace != nil {
			trace.out(read, p.PID(), &ev, len(line))
		}
		if ev.Kind == transcript.KindControlResponse {
			p.mu.Lock()
			ch, ok := p.pending[ev.RequestID]
			fired := p.fired[ev.RequestID]
			delete(p.fired, ev.RequestID)
			p.mu.Unlock()
			if fired {
				continue // an interrupt's answer: nobody waits for it
			}
			if ok {
				select {
				case ch <- ev:
				default: // a duplicate response; the caller has one already
				}
				continue
			}
		}
		if p.warmLine(&ev) {
			continue
		}
		q.push(ev)
		p.stdout.counted()
	}
}

func (p *Process) skip(why string, attrs ...any) {
	p.mu.Lock()
	p.skipped++
	p.mu.Unlock()
	p.log.Warn("skipped harness output: "+why, attrs...)
}

func (p *Process) failPending() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for id, ch := range p.pending {
		close(ch)
		delete(p.pending, id)
	}
}

func preview(b []byte) string {
	const n = 120
	if len(b) > n {
		return string(b[:n]) + "…"
	}
	return string(b)
}
