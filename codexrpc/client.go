// Package codexrpc owns speaking `codex app-server`: JSON-RPC lines on the
// process's stdin and stdout. It starts the process, runs the handshake,
// offers the requests a front sends (thread/start, turn/start,
// turn/interrupt), decodes the notifications a front needs into plain Go
// values (notify.go), and knows how to hold Codex's own compaction off
// (hold.go). What the names, fields and the hold are on the pinned Codex
// is in docs/DESIGN.md «Codex facts»; schema_test.go holds the names to
// the schema the installed binary generates.
package codexrpc

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"log/slog"
	"os"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/flowerhq/flower/child"
)

// Config says how to start the app-server.
type Config struct {
	// Binary is the codex executable.
	Binary string
	// Home is CODEX_HOME: where config.toml is read and state is kept;
	// "" leaves the environment's (Codex's default: ~/.codex).
	Home string
	// Dir is the process's working directory.
	Dir string
	// Overrides are "key=value" settings, each passed as -c: they
	// outrank the config.toml in Home.
	Overrides []string
	// Args are more arguments of app-server's (a person's own -c
	// settings), after Overrides: a later -c of the same key wins.
	Args []string
	// BaseEnv is the process's environment (the parent's when nil); Env
	// is appended to it.
	BaseEnv []string
	Env     []string
	// Log receives what the client skips (non-JSON lines, unanswerable
	// requests) and the process's stderr; nil discards it.
	Log io.Writer
	// Grace bounds each stage of Close (child.DefaultGrace when zero);
	// Logger receives package child's log of the process.
	Grace  time.Duration
	Logger *slog.Logger
	// Screen: the connection is the Codex CLI's own screen's, attached
	// with Client.Screen; Start runs no handshake, the screen's is the
	// connection's (screen.go).
	Screen bool
}

// Client is one running app-server.
type Client struct {
	proc  *child.Process
	stdin *os.File
	log   *log.Logger
	// queue holds the notifications read and not yet taken: reading
	// stdout (answers to calls included) never waits on the caller.
	queue    Queue
	notes    chan Notification
	pumpOnce sync.Once
	done     chan struct{}
	wmu      sync.Mutex
	mu       sync.Mutex
	nextID   int
	calls    map[int]chan response
	err      error // why the read loop ended
	// turnSandbox is every turn's sandboxPolicy (SetTurnSandbox).
	turnSandbox map[string]any
	// version is Codex's, as its initialize answer said ("" until then).
	version string
	// screen is the screen the connection is shared with (screen.go); nil
	// for a connection of flower's alone.
	screen *screen
}

type response struct {
	Result json.RawMessage
	Error  *RPCError
}

// RPCError is a JSON-RPC error answer.
type RPCError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

func (e *RPCError) Error() string {
	return fmt.Sprintf("codex app-server error %d: %s", e.Code, e.Message)
}

// Start starts `codex app-server` and runs initialize / initialized. The
// process is a child of package child's: nothing it starts (the commands
// of its turns) outlives it, or flower however flower ends.
func Start(ctx context.Context, cfg Config) (*Client, error) {
	args := []string{"app-server"}
	for _, o := range cfg.Overrides {
		args = append(args, "-c", o)
	}
	env := cfg.BaseEnv
	if env == nil {
		env = os.Environ()
	}
	env = append([]string(nil), env...)
	if cfg.Home != "" {
		env = append(env, "CODEX_HOME="+cfg.Home)
	}
	env, err := SandboxEnv(append(env, cfg.Env...))
	if err != nil {
		return nil, err
	}
	logw := cfg.Log
	if logw == nil {
		logw = io.Discard
	}
	var p pipes
	if err := p.open(); err != nil {
		return nil, fmt.Errorf("codex app-server pipes: %w", err)
	}
	proc, err := child.Start(context.Background(), child.Config{Path: cfg.Binary, Args: append(args, cfg.Args...), Dir: cfg.Dir,
		Env: env, Stdin: p.inR, Stdout: p.outW, Stderr: p.errW, CancelSignal: syscall.SIGTERM,
		Grace: cfg.Grace, Logger: cfg.Logger})
	p.closeChildEnds()
	if err != nil {
		p.closeOurEnds()
		return nil, fmt.Errorf("start codex app-server: %w", err)
	}
	go func() { _, _ = io.Copy(logw, p.errR); _ = p.errR.Close() }()
	c := &Client{proc: proc, stdin: p.inW, log: log.New(logw, "codexrpc: ", 0),
		done: make(chan struct{}), calls: map[int]chan response{}}
	go c.read(p.outR)
	if cfg.Screen {
		c.screen = newScreen()
		return c, nil
	}
	if err := c.handshake(ctx); err != nil {
		_ = c.Close()
		return nil, err
	}
	return c, nil
}

// pipes are the app-server's standard files: the child's ends go to
// child.Start, which keeps its own copies; ours stay open until we close
// them, so that every line written is read.
type pipes struct{ inR, inW, outR, outW, errR, errW *os.File }

func (p *pipes) open() error {
	var err error
	if p.inR, p.inW, err = os.Pipe(); err != nil {
		return err
	}
	if p.outR, p.outW, err = os.Pipe(); err != nil {
		p.inR.Close()
		p.inW.Close()
		return err
	}
	if p.errR, p.errW, err = os.Pipe(); err != nil {
		p.closeChildEnds()
		p.inW.Close()
		p.outR.Close()
		return err
	}
	return nil
}

func (p *pipes) closeChildEnds() {
	for _, f := range []*os.File{p.inR, p.outW, p.errW} {
		if f != nil {
			f.Close()
		}
	}
}

func (p *pipes) closeOurEnds() {
	for _, f := range []*os.File{p.inW, p.outR, p.errR} {
		if f != nil {
			f.Close()
		}
	}
}

func (c *Client) handshake(ctx context.Context) error {
	info := map[string]any{"clientInfo": map[string]string{"name": "flower", "title": "flower", "version": "0"}}
	var res json.RawMessage
	if err := c.Call(ctx, MethodInitialize, info, &res); err != nil {
		return err
	}
	c.initialized(res)
	return c.send(map[string]any{"method": MethodInitialized})
}

// Next returns the next notification in order, waiting for one until ctx
// is done; one that is there already is returned even then. Once the
// process's stdout has ended and every notification was taken, it returns
// io.EOF.
func (c *Client) Next(ctx context.Context) (Notification, error) { return c.queue.Next(ctx) }

// Notifications delivers every notification in order on a channel, closed
// when the process's stdout ends: Next as a channel, for a caller that
// selects. A client is read one way or the other, not both.
func (c *Client) Notifications() <-chan Notification {
	c.pumpOnce.Do(func() {
		c.notes = make(chan Notification)
		go func() {
			defer close(c.notes)
			for {
				n, err := c.Next(context.Background())
				if err != nil {
					return
				}
				c.notes <- n
			}
		}()
	})
	return c.notes
}

// Done is closed when the process's stdout ends; Err then says why.
func (c *Client) Done() <-chan struct{} { return c.done }

// Err is why the read loop ended (nil while it runs, io.EOF at a clean end).
func (c *Client) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// Close ends the process: stdin is closed, which ends a healthy
// app-server, then its group gets SIGTERM and SIGKILL, a grace apart; it
// returns once the process and everything it started are gone.
func (c *Client) Close() error {
	c.proc.Stop(c.stdin.Close, syscall.SIGTERM, syscall.SIGKILL)
	<-c.done
	return nil
}

// Exited is closed once the process has exited; ExitErr is then its
// exit status (nil for 0).
func (c *Client) Exited() <-chan struct{} { return c.proc.Exited() }

// ExitErr is the process's exit status, valid once Exited is closed.
func (c *Client) ExitErr() error { return c.proc.Err() }

// Call sends a request and waits for its answer, decoded into result
// when result is not nil.
func (c *Client) Call(ctx context.Context, method string, params, result any) error {
	ch := make(chan response, 1)
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return fmt.Errorf("codex app-server %s: %w", method, c.err)
	}
	id := c.nextID
	c.nextID++
	c.calls[id] = ch
	c.mu.Unlock()
	if err := c.send(map[string]any{"method": method, "id": idPrefix + strconv.Itoa(id), "params": params}); err != nil {
		return err
	}
	select {
	case r, ok := <-ch:
		if !ok {
			return fmt.Errorf("codex app-server %s: %w", method, c.Err())
		}
		if r.Error != nil {
			return fmt.Errorf("%s: %w", method, r.Error)
		}
		if result == nil {
			return nil
		}
		if err := json.Unmarshal(r.Result, result); err != nil {
			return fmt.Errorf("codex app-server %s answer: %w", method, err)
		}
		return nil
	case <-ctx.Done():
		c.mu.Lock()
		delete(c.calls, id)
		c.mu.Unlock()
		return fmt.Errorf("codex app-server %s: %w", method, ctx.Err())
	}
}

func (c *Client) send(msg any) error {
	b, err := json.Marshal(msg)
	if err != nil {
		return fmt.Errorf("encode codex app-server message: %w", err)
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if _, err := c.stdin.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("write codex app-server: %w", err)
	}
	return nil
}
