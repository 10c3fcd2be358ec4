package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/creack/pty"

	"github.com/flowerhq/flower/handoffwriter"
	"github.com/flowerhq/flower/levers"
	"github.com/flowerhq/flower/scriptedapi"
)

// tuiFigures: the interactive front's switch beside the harness's own
// screen started bare with a prompt.
type tuiFigures struct {
	bare     []time.Duration // bare screen: spawn → first request
	switches []time.Duration // flower -i: writing answer → successor's first request
}

// tui takes b.tuis pairs: a bare screen started with a prompt on its
// command line (as flower starts a successor's), and flower -i on a job of
// two generations, alternating which goes first.
func (b *bench) tui(ctx context.Context) (tuiFigures, error) {
	var f tuiFigures
	for i := range b.tuis {
		for k := range 2 {
			if (i+k)%2 == 0 {
				d, err := b.bareScreen(ctx)
				if err != nil {
					return f, fmt.Errorf("bare screen: %w", err)
				}
				f.bare = append(f.bare, d)
			} else {
				d, err := b.screenSwitch(ctx)
				if err != nil {
					return f, fmt.Errorf("flower -i: %w", err)
				}
				f.switches = append(f.switches, d)
			}
		}
	}
	return f, nil
}

// screenHome is a HOME past the harness's first-run screens: onboarding
// done, the workspace trusted, the API key approved (its last 20
// characters, as the harness stores it).
func (b *bench) screenHome(ws string) (string, error) {
	home := b.dir("home")
	key := scriptedapi.APIKey
	if len(key) > 20 {
		key = key[len(key)-20:]
	}
	cfg, _ := json.Marshal(map[string]any{
		"hasCompletedOnboarding": true,
		"customApiKeyResponses":  map[string]any{"approved": []string{key}, "rejected": []string{}},
		"projects":               map[string]any{ws: map[string]any{"hasTrustDialogAccepted": true}},
	})
	return home, os.WriteFile(filepath.Join(home, ".claude.json"), cfg, 0o600)
}

// screenEnv is env with HOME replaced and a terminal named.
func screenEnv(env []string, home string) []string {
	var out []string
	for _, kv := range env {
		if !strings.HasPrefix(kv, "HOME=") {
			out = append(out, kv)
		}
	}
	return append(out, "HOME="+home, "TERM=xterm-256color")
}

var toolFlags = []string{"--permission-mode", "dontAsk", "--allowedTools", "Bash"}

// bareScreen starts the harness's own screen as flower's interactive front
// starts a successor: flower's compaction levers, the prompt on the
// command line; from spawn to its first request.
func (b *bench) bareScreen(ctx context.Context) (time.Duration, error) {
	srv, err := scriptedapi.Start(scriptedapi.Harmless)
	if err != nil {
		return 0, err
	}
	defer srv.Close()
	ws := b.dir("bare-screen")
	home, err := b.screenHome(ws)
	if err != nil {
		return 0, err
	}
	args := append(levers.Args(toolFlags, levers.Own{}, levers.BlockOnly), "--", "Say ok.")
	cmd := exec.CommandContext(ctx, b.harness, args...)
	cmd.Dir = ws
	cmd.Env = bareEnv(screenEnv(b.env(srv), home))
	spawn := time.Now()
	stop, err := startInPTY(cmd)
	if err != nil {
		return 0, err
	}
	defer stop()
	r, err := waitRequest(srv, func(r scriptedapi.Request) bool { return r.Kind == scriptedapi.KindMain })
	if err != nil {
		return 0, err
	}
	return r.Time.Sub(spawn), nil
}

// screenSwitch runs flower -i on a job of two generations in a pty: the
// writing turn's answer → the successor's first request.
func (b *bench) screenSwitch(ctx context.Context) (time.Duration, error) {
	s := &script{gens: 2, crossing: map[int]bool{}, tools: map[int]bool{}, writing: b.writing}
	srv, err := scriptedapi.Start(s.reply)
	if err != nil {
		return 0, err
	}
	defer srv.Close()
	ws := b.dir("screen")
	home, err := b.screenHome(ws)
	if err != nil {
		return 0, err
	}
	args := append([]string{"-i", "-C", ws, "--run-dir", filepath.Join(ws, "run"), "--window", "200000",
		"Append lines to work.txt until done.", "--"}, toolFlags...)
	cmd := exec.CommandContext(ctx, b.flower, args...)
	cmd.Env = append(screenEnv(b.env(srv), home), "FLOWER_HARNESS="+b.harness)
	stop, err := startInPTY(cmd)
	if err != nil {
		return 0, err
	}
	defer stop()
	var writing scriptedapi.Request
	next, err := waitRequest(srv, func(r scriptedapi.Request) bool {
		if r.Kind == scriptedapi.KindMain && strings.Contains(r.LastUserText, handoffwriter.PromptTag) {
			writing = r
		}
		return writing.Seq > 0 && !writing.Answered.IsZero() && r.Kind == scriptedapi.KindMain && r.SessionID != writing.SessionID && r.Seq > writing.Seq
	})
	if err != nil {
		return 0, err
	}
	return next.Time.Sub(writing.Answered), nil
}

// waitRequest waits up to two minutes for a request ok picks, looking at
// every request again each time (what it saw may have been answered since).
func waitRequest(srv *scriptedapi.Server, ok func(scriptedapi.Request) bool) (scriptedapi.Request, error) {
	for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		for _, r := range srv.Requests() {
			if ok(r) {
				return r, nil
			}
		}
	}
	return scriptedapi.Request{}, errors.New("no such request within 2 minutes")
}

// startInPTY starts cmd in a 120×40 pty, leading its own session, reads
// the screen it draws, and returns what ends it: SIGTERM to its group, and
// SIGKILL after 5 s.
func startInPTY(cmd *exec.Cmd) (stop func(), err error) {
	f, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 40, Cols: 120})
	if err != nil {
		return nil, err
	}
	go func() { _, _ = io.Copy(io.Discard, f) }()
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	return func() {
		pgid := cmd.Process.Pid
		_ = syscall.Kill(-pgid, syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(5 * time.Second):
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
			<-exited
		}
		_ = syscall.Kill(-pgid, syscall.SIGKILL) // what it left behind
		f.Close()
	}, nil
}
