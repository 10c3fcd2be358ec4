package transcript

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"time"

	"github.com/flowerhq/flower/logfollow"
)

// An interactive harness has no stdout flower can read: its screen belongs to
// the person. What it says of the session goes to a transcript file instead,
// appended line by line as the session runs (DESIGN.md «Transcript file»):
//
//	<config dir>/projects/<Slug(cwd)>/<session id>.jsonl
//
// Its lines are the stream-json records' cousins: "user" and "assistant"
// (with message.usage), "system" (subtype "turn_duration" closes a turn that
// ended on its own), bookkeeping lines ("mode", "last-prompt", "attachment",
// "api-request", …), and a final "cost-state" with totalCostUSD when the
// harness exits. The session id is spelled "sessionId", and a subagent's
// lines carry "isSidechain": true (2.1.328 writes them to a separate file
// under <session id>/subagents/, so the main file holds the main thread).

// ConfigDir is where the harness keeps its state for a child environment
// env (KEY=VALUE entries, later ones winning): $CLAUDE_CONFIG_DIR when set,
// else $HOME/.claude. It is "" when neither is known.
func ConfigDir(env []string) string {
	var home, conf string
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		switch k {
		case "HOME":
			home = v
		case "CLAUDE_CONFIG_DIR":
			conf = v
		}
	}
	switch {
	case conf != "":
		return conf
	case home != "":
		return filepath.Join(home, ".claude")
	}
	return ""
}

// Slug is the name of a working directory's transcript folder: every
// character other than an ASCII letter or digit becomes "-" (observed:
// /tmp/explore/my.dir_x → -tmp-explore-my-dir-x).
func Slug(cwd string) string {
	b := []byte(cwd)
	for i, c := range b {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9') {
			b[i] = '-'
		}
	}
	return string(b)
}

// ProjectDir is the folder holding the transcripts of sessions run in cwd.
func ProjectDir(configDir, cwd string) string {
	return filepath.Join(configDir, "projects", Slug(cwd))
}

// FilePath is the transcript of one session run in cwd.
func FilePath(configDir, cwd, sessionID string) string {
	return filepath.Join(ProjectDir(configDir, cwd), sessionID+".jsonl")
}

// DefaultPoll is how often a Follower looks at its file even when fsnotify
// says nothing: a watch can be missed (the folder did not exist yet, an
// editor-style replace), a poll cannot.
const DefaultPoll = 250 * time.Millisecond

// FollowOptions configure a Follower. The zero value is usable.
type FollowOptions struct {
	// Poll is the fallback polling interval (DefaultPoll when zero).
	Poll time.Duration
	// MaxLine bounds one line (DefaultMaxLine when zero); longer lines are
	// skipped and counted.
	MaxLine int
	// Logger receives the lines skipped (discarded when nil).
	Logger *slog.Logger
}

// Follower tails one transcript file as the harness appends to it, from its
// first line, and decodes each complete line. The file and its folder may
// not exist yet when following starts. The following itself is
// logfollow's, flower's one file follower (truncation, replacement, a file
// that appears later, bounded lines, never through a link); the consumer
// reads Events.
type Follower struct {
	path   string
	events chan Event
	done   chan struct{}
	err    error // valid after done is closed

	// owned by the following goroutine
	log     *slog.Logger
	lines   int
	skipped int
}

// Follow starts following path until ctx is done. Events are delivered in
// file order on Events, which is closed when following stops.
func Follow(ctx context.Context, path string, opts FollowOptions) (*Follower, error) {
	f := &Follower{
		path:   path,
		log:    opts.Logger,
		events: make(chan Event, 256),
		done:   make(chan struct{}),
	}
	if opts.Poll <= 0 {
		opts.Poll = DefaultPoll
	}
	if opts.MaxLine <= 0 {
		opts.MaxLine = DefaultMaxLine
	}
	if f.log == nil {
		f.log = slog.New(slog.DiscardHandler)
	}
	go f.run(ctx, opts)
	return f, nil
}

// Path is the file being followed.
func (f *Follower) Path() string { return f.path }

// Events delivers the decoded lines. Lines that are not JSON objects are
// skipped. Each Event's Raw is its own copy.
func (f *Follower) Events() <-chan Event { return f.events }

// Done is closed when following has stopped and Events is closed.
func (f *Follower) Done() <-chan struct{} { return f.done }

// Err is why following stopped (ctx's error, or a read error); valid after
// Done is closed.
func (f *Follower) Err() error {
	<-f.done
	return f.err
}

func (f *Follower) run(ctx context.Context, opts FollowOptions) {
	defer func() {
		close(f.events)
		close(f.done)
	}()
	// Sends give up only a while after ctx is done: lines the harness wrote
	// before the end still reach a consumer that cancels once the harness
	// exited and reads Events until it is closed (logfollow looks once more
	// when ctx is done), while a consumer that stopped reading cannot hold
	// the goroutine for long.
	stop, cancelStop := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelStop()
	go func() {
		select {
		case <-ctx.Done():
			t := time.NewTimer(finalDrain)
			defer t.Stop()
			select {
			case <-t.C:
			case <-stop.Done():
			}
			cancelStop()
		case <-stop.Done():
		}
	}()
	err := logfollow.Follow(ctx, f.path, logfollow.Options{
		Poll:    opts.Poll,
		MaxLine: opts.MaxLine,
		Skipped: func(n int) []byte {
			f.lines++
			f.skipped++
			f.log.Warn("transcript line too long; skipped", "path", f.path, "line", f.lines, "bytes", n)
			return nil
		},
	}, func(line []byte) error { return f.send(stop, line) })
	switch {
	case err != nil && (ctx.Err() == nil || stop.Err() == nil):
		f.err = fmt.Errorf("follow transcript: %w", err)
	default:
		f.err = ctx.Err()
	}
}

// finalDrain bounds how long lines are still delivered after the context
// is done.
const finalDrain = 2 * time.Second

func (f *Follower) send(ctx context.Context, line []byte) error {
	f.lines++
	line = bytes.TrimSuffix(line, []byte("\r"))
	if len(bytes.TrimSpace(line)) == 0 {
		return nil
	}
	ev, err := Decode(bytes.Clone(line))
	if err != nil {
		f.skipped++
		f.log.Warn("transcript line is not JSON; skipped", "path", f.path, "line", f.lines, "bytes", len(line))
		return nil
	}
	select {
	case f.events <- ev:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("nobody read line %d: %w", f.lines, ctx.Err())
	}
}
