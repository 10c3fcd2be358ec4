package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/flowerhq/flower/scriptedapi"
)

// floorFigures are what the bare harness itself takes for the two moves a
// switch is made of, when it is driven the way flower drives it by a
// driver that takes no time at all: the floor under flower's figures.
type floorFigures struct {
	// warm: a harness started early and readied with a blank prompt (as
	// harness.Process.Warm does), its first real prompt written → that
	// prompt's request. The floor of the headless switch gap.
	warm []time.Duration
	// cuts: the reply over the threshold answered → the next prompt
	// written as its tool call's line is read, into the running turn (as
	// flower's queued cut writes it) → the request that carries it beside
	// the tool's result. The floor of the cut.
	cuts []time.Duration
	// rtts: the same sessions' tool round trips, as the job counts them.
	rtts []time.Duration
}

// The floor session's script: instant Bash rounds, every floorRounds-th
// of them the one "over the threshold" (marked by its text), and an
// answer without a tool to the prompt after the cut.
const (
	floorRounds  = 4
	floorCrosses = "crossing"
	floorPrompt  = "Write the handoff."
)

// floor takes b.bare bare sessions, each warmed, prompted after a pause as
// long as a writing turn, and cut once.
func (b *bench) floor(ctx context.Context) (floorFigures, error) {
	var mu sync.Mutex
	rounds := map[string]int{}
	srv, err := scriptedapi.Start(func(r *scriptedapi.Request) scriptedapi.Reply {
		if r.Kind != scriptedapi.KindMain {
			return scriptedapi.Harmless(r)
		}
		if strings.Contains(r.LastUserText, floorPrompt) {
			return scriptedapi.Reply{Text: "written"}
		}
		mu.Lock()
		rounds[r.SessionID]++
		n := rounds[r.SessionID]
		mu.Unlock()
		text := "appending"
		if n == floorRounds {
			text = floorCrosses
		}
		return scriptedapi.Reply{Text: text, ToolUses: []scriptedapi.ToolUse{{Name: "Bash",
			Input: map[string]any{"command": "echo line >> work.txt", "description": "append a line"}}}}
	})
	if err != nil {
		return floorFigures{}, err
	}
	defer srv.Close()
	var f floorFigures
	for range b.bare {
		if err := b.floorSession(ctx, srv, &f); err != nil {
			return f, err
		}
	}
	return f, nil
}

func (b *bench) floorSession(ctx context.Context, srv *scriptedapi.Server, f *floorFigures) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute) // a hang guard
	defer cancel()
	cmd := b.bareHarness(ctx, srv, "floor")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	defer func() {
		stdin.Close()
		_ = cmd.Wait()
	}()
	lines := bufio.NewReaderSize(stdout, 1<<20)
	// until reads lines until one holds every one of want.
	until := func(want ...string) (string, error) {
		for {
			l, err := lines.ReadString('\n')
			if err != nil {
				return "", fmt.Errorf("bare harness: its output ended before %q: %w", want, err)
			}
			if all(l, want) {
				return l, nil
			}
		}
	}
	send := func(line string) { _, _ = io.WriteString(stdin, line+"\n") }
	user := func(text string) string {
		line, _ := json.Marshal(map[string]any{"type": "user", "message": map[string]any{"role": "user", "content": text}})
		return string(line)
	}
	// The blank prompt: the harness turns it down without a request.
	send(user(" "))
	if _, err := until(`"type":"result"`); err != nil {
		return err
	}
	time.Sleep(2 * time.Second) // a successor waits out the writing turn
	before := len(srv.Requests())
	prompted := time.Now()
	send(user("Append lines to work.txt."))
	if _, err := until(`"type":"assistant"`, floorCrosses); err != nil {
		return err
	}
	if _, err := until(`"type":"assistant"`, `"tool_use"`); err != nil {
		return err
	}
	send(user(floorPrompt))
	if _, err := until(`"type":"result"`); err != nil {
		return err
	}
	var main []scriptedapi.Request
	for _, r := range srv.Requests()[before:] {
		if r.Kind == scriptedapi.KindMain {
			main = append(main, r)
		}
	}
	// A prompt written after the harness built the request that follows
	// the crossing round's tool result rides the one after, as in a job.
	if len(main) < floorRounds+1 || !strings.Contains(main[len(main)-1].LastUserText, floorPrompt) {
		return errors.New("bare harness: the floor session's requests are not the script's")
	}
	f.warm = append(f.warm, main[0].Time.Sub(prompted))
	for i := 1; i < floorRounds; i++ {
		f.rtts = append(f.rtts, main[i].Time.Sub(main[i-1].Answered))
	}
	f.cuts = append(f.cuts, main[len(main)-1].Time.Sub(main[floorRounds-1].Answered))
	return nil
}

func all(s string, subs []string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}
