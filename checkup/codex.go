package checkup

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/flowerhq/flower/codexrpc"
	"github.com/flowerhq/flower/scriptedresp"
)

// codexRun is the Codex app-server of one check: a CODEX_HOME and a
// workspace of its own under a temporary directory, a scripted Responses
// API on 127.0.0.1 (scriptedresp, with plugins off, so nothing else is
// reached), and one thread.
type codexRun struct {
	root   string
	api    *scriptedresp.Server
	client *codexrpc.Client
	thread string
	// hooked: hooks/list listed a hook given with -c, and the thread
	// trusts it (codexrpc.SessionHookTrust).
	hooked bool
	notes  []codexrpc.Notification
}

// startCodex starts the Codex CLI's app-server against script, with the
// person's config.toml settings personal and flower's overrides, and
// starts a thread as a run would.
func (c *Checkup) startCodex(ctx context.Context, script scriptedresp.Script, personal string, overrides []string) (*codexRun, error) {
	return c.startCodexIn(ctx, "workspace-write", script, personal, overrides)
}

// startCodexIn is startCodex with the thread's sandbox mode.
func (c *Checkup) startCodexIn(ctx context.Context, sandbox string, script scriptedresp.Script, personal string, overrides []string) (*codexRun, error) {
	root, err := os.MkdirTemp("", "flower-doctor-codex-")
	if err != nil {
		return nil, fmt.Errorf("temporary directory: %w", err)
	}
	r := &codexRun{root: root}
	home, work := filepath.Join(root, "home"), filepath.Join(root, "workspace")
	if err := mkdirs(home, work); err != nil {
		r.close()
		return nil, fmt.Errorf("temporary directory: %w", err)
	}
	if r.api, err = scriptedresp.Start(script); err != nil {
		r.close()
		return nil, fmt.Errorf("start the scripted model: %w", err)
	}
	if err := r.api.WriteCodexHome(home, personal); err != nil {
		r.close()
		return nil, err
	}
	r.client, err = codexrpc.Start(ctx, codexrpc.Config{Binary: c.cfg.Harness, Home: home, Dir: work,
		Overrides: overrides, Args: c.cfg.Args, BaseEnv: codexEnv(c.cfg.Env, home), Env: r.api.Env()})
	if err != nil {
		r.close()
		return nil, err
	}
	if err := r.startThread(ctx, work, sandbox); err != nil {
		r.close()
		return nil, err
	}
	return r, nil
}

// codexEnv is the environment of a check's Codex: parent (flower's own
// when nil) without what could carry a credential, point Codex at another
// endpoint or reach the person's own configuration, then HOME=home. A
// proxy goes too: with HTTP_PROXY set, Codex sent even its requests to
// 127.0.0.1 through it.
func codexEnv(parent []string, home string) []string {
	if parent == nil {
		parent = os.Environ()
	}
	var env []string
	for _, kv := range parent {
		k, _, _ := strings.Cut(kv, "=")
		switch up := strings.ToUpper(k); {
		case strings.HasPrefix(up, "OPENAI_"), strings.HasPrefix(up, "CODEX_"), strings.HasSuffix(up, "_PROXY"),
			up == "HOME", strings.HasPrefix(up, "XDG_"):
			continue
		}
		env = append(env, kv)
	}
	return append(env, "HOME="+home)
}

func (r *codexRun) startThread(ctx context.Context, work, sandbox string) error {
	trust, err := r.client.SessionHookTrust(ctx)
	if err != nil {
		return err
	}
	r.hooked = trust != nil
	r.thread, err = r.client.StartThread(ctx, codexrpc.ThreadOptions{Cwd: work, ApprovalPolicy: "never",
		Sandbox: sandbox, Config: trust})
	return err
}

func mkdirs(dirs ...string) error {
	for _, d := range dirs {
		if err := os.Mkdir(d, 0o755); err != nil {
			return err
		}
	}
	return nil
}

func (r *codexRun) close() {
	if r.client != nil {
		_ = r.client.Close()
	}
	if r.api != nil {
		_ = r.api.Close()
	}
	_ = os.RemoveAll(r.root)
}

// until reads notifications until match accepts one, and returns it.
func (r *codexRun) until(ctx context.Context, what string, match func(codexrpc.Notification) bool) (codexrpc.Notification, error) {
	for {
		select {
		case n, ok := <-r.client.Notifications():
			if !ok {
				return n, fmt.Errorf("codex app-server ended before %s: %v", what, r.client.Err())
			}
			r.notes = append(r.notes, n)
			if match(n) {
				return n, nil
			}
		case <-ctx.Done():
			return codexrpc.Notification{}, fmt.Errorf("no %s in time: %w", what, ctx.Err())
		}
	}
}

// turn runs a turn of text and returns how it ended.
func (r *codexRun) turn(ctx context.Context, text string) (codexrpc.TurnCompleted, error) {
	id, err := r.client.StartTurn(ctx, r.thread, text)
	if err != nil {
		return codexrpc.TurnCompleted{}, err
	}
	return r.completed(ctx, id)
}

// completed waits for the end of turn id.
func (r *codexRun) completed(ctx context.Context, id string) (codexrpc.TurnCompleted, error) {
	n, err := r.until(ctx, "end of the turn", func(n codexrpc.Notification) bool {
		tc, ok := n.Value.(codexrpc.TurnCompleted)
		return ok && tc.TurnID == id
	})
	if err != nil {
		return codexrpc.TurnCompleted{}, err
	}
	return n.Value.(codexrpc.TurnCompleted), nil
}

// seen are the decoded notifications of type T read so far.
func seen[T any](r *codexRun) []T {
	var out []T
	for _, n := range r.notes {
		if v, ok := n.Value.(T); ok {
			out = append(out, v)
		}
	}
	return out
}

// compactions counts the compaction requests that reached the model and
// the compaction items Codex reported.
func (r *codexRun) compactions() (requests, items int) {
	for _, q := range r.api.Requests() {
		if q.Compaction {
			requests++
		}
	}
	for _, it := range seen[codexrpc.Item](r) {
		if it.Started && it.Type == codexrpc.ItemContextCompaction {
			items++
		}
	}
	return requests, items
}
