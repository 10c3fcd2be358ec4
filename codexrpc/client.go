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
	"io"
	"log"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/flowerhq/flower/child"
	"github.com/flowerhq/flower/rpcline"
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
	conn *rpcline.Conn
	log  *log.Logger
	// queue holds the notifications read and not yet taken: reading
	// stdout (answers to calls included) never waits on the caller.
	queue    Queue
	notes    chan Notification
	pumpOnce sync.Once
	mu       sync.Mutex
	// turnSandbox is every turn's sandboxPolicy (SetTurnSandbox).
	turnSandbox map[string]any
	// version is Codex's, as its initialize answer said ("" until then).
	version string
	// screen is the screen the connection is shared with (screen.go); nil
	// for a connection of flower's alone.
	screen *screen
}

// RPCError is a JSON-RPC error answer.
type RPCError = rpcline.Error

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
	lg := log.New(logw, "codexrpc: ", 0)
	conn, stdout, err := rpcline.Start(child.Config{Path: cfg.Binary, Args: append(args, cfg.Args...), Dir: cfg.Dir,
		Env: env, Grace: cfg.Grace, Logger: cfg.Logger}, logw,
		rpcline.Options{Peer: "codex app-server", IDPrefix: idPrefix, Log: lg})
	if err != nil {
		return nil, err
	}
	c := &Client{conn: conn, log: lg}
	if cfg.Screen {
		c.screen = newScreen()
	}
	go conn.Serve(stdout, c.dispatch, c.queue.Close)
	if cfg.Screen {
		return c, nil
	}
	if err := c.handshake(ctx); err != nil {
		_ = c.Close()
		return nil, err
	}
	return c, nil
}

func (c *Client) handshake(ctx context.Context) error {
	info := map[string]any{"clientInfo": map[string]string{"name": "flower", "title": "flower", "version": "0"}}
	var res json.RawMessage
	if err := c.Call(ctx, MethodInitialize, info, &res); err != nil {
		return err
	}
	c.initialized(res)
	return c.conn.Notify(MethodInitialized, nil)
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
func (c *Client) Done() <-chan struct{} { return c.conn.Done() }

// Err is why the read loop ended (nil while it runs, io.EOF at a clean end).
func (c *Client) Err() error { return c.conn.Err() }

// Close ends the process: stdin is closed, which ends a healthy
// app-server, then its group gets SIGTERM and SIGKILL, a grace apart; it
// returns once the process and everything it started are gone.
func (c *Client) Close() error { return c.conn.Close() }

// Exited is closed once the process has exited; ExitErr is then its
// exit status (nil for 0).
func (c *Client) Exited() <-chan struct{} { return c.conn.Exited() }

// ExitErr is the process's exit status, valid once Exited is closed.
func (c *Client) ExitErr() error { return c.conn.ExitErr() }

// Call sends a request and waits for its answer, decoded into result
// when result is not nil.
func (c *Client) Call(ctx context.Context, method string, params, result any) error {
	return c.conn.Call(ctx, method, params, result)
}
