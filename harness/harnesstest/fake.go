// Package harnesstest provides a fake harness for tests of the faults the
// real one cannot be made to show: garbage output, a crash in the middle of a
// line, a process that ignores SIGINT, a turn that never ends. A test binary
// becomes the fake by calling Main from TestMain; the test then starts its
// own executable (os.Args[0]) with the environment from Env.
package harnesstest

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// EnvMode selects the fake's behaviour; EnvContext sets the main-thread
// context it reports per turn ("150000" or a comma list, one per turn, the
// last repeating).
const (
	EnvMode    = "FLOWER_FAKE_HARNESS"
	EnvContext = "FLOWER_FAKE_CONTEXT"
)

// The modes.
const (
	ModeStream       = "stream"         // well-behaved: one assistant message and a result per user turn
	ModeGarbage      = "garbage"        // like stream, with non-JSON lines and stderr noise between records
	ModeCrashMidLine = "crash-mid-line" // first turn: half a JSON line, then exit 3
	ModeExitEarly    = "exit-early"     // exit 1 before any output
	ModeIgnoreSIGINT = "ignore-sigint"  // ignores SIGINT/SIGTERM and stdin EOF; runs until SIGKILL
	ModeHangTurn     = "hang-turn"      // starts a turn and never finishes it, ignoring interrupts
	ModeGrandchild   = "grandchild"     // like stream, but leaves a child holding stdout open on exit
	ModeHugeLine     = "huge-line"      // like stream, with a 50 MB line before each result
)

// GroupAlive reports whether any process of the group is still running.
// Zombies do not count: whether someone reaps them is up to the machine's
// init, not to the code under test.
func GroupAlive(pgid int) bool {
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid pgrp …; comm may hold spaces and parentheses.
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) >= 3 && f[0] != "Z" && f[2] == strconv.Itoa(pgid) {
			return true
		}
	}
	return false
}

// Env returns the environment that makes a re-executed test binary run the
// fake in the given mode.
func Env(mode string, extra ...string) []string {
	return append(append(os.Environ(), EnvMode+"="+mode), extra...)
}

// Main runs the fake if this process was started as one, and then exits.
// Call it first thing in TestMain; it returns at once otherwise.
func Main() {
	mode := os.Getenv(EnvMode)
	if mode == "" {
		return
	}
	os.Exit(run(mode))
}

type fake struct {
	mode    string
	out     *bufio.Writer
	session string
	turn    int
	ctx     []int
	cost    float64
}

func run(mode string) int {
	f := &fake{mode: mode, out: bufio.NewWriterSize(os.Stdout, 1<<16), session: "fake-" + strconv.Itoa(os.Getpid())}
	for _, s := range strings.Split(os.Getenv(EnvContext), ",") {
		if n, err := strconv.Atoi(strings.TrimSpace(s)); err == nil {
			f.ctx = append(f.ctx, n)
		}
	}
	switch mode {
	case ModeExitEarly:
		fmt.Fprintln(os.Stderr, "fake harness: refusing to start")
		return 1
	case ModeIgnoreSIGINT:
		signal.Ignore(syscall.SIGINT, syscall.SIGTERM)
		fmt.Println(`{"type":"system","subtype":"init","session_id":"` + f.session + `","model":"fake"}`)
		for {
			time.Sleep(time.Hour)
		}
	case ModeGrandchild:
		// The child inherits stdout and outlives us unless its group is killed.
		cmd := exec.Command("sleep", "300")
		cmd.Stdout = os.Stdout
		_ = cmd.Start()
	}
	in := bufio.NewReaderSize(os.Stdin, 1<<20)
	for {
		line, err := in.ReadBytes('\n')
		if len(line) > 0 {
			if code, stop := f.handle(line); stop {
				return code
			}
		}
		if err != nil {
			return 0
		}
	}
}

func (f *fake) emit(v any) {
	b, _ := json.Marshal(v)
	f.out.Write(b)
	f.out.WriteByte('\n')
	if f.mode == ModeGarbage {
		f.out.WriteString("this is not json {\n")
		fmt.Fprintln(os.Stderr, "fake harness: some stderr noise")
	}
	f.out.Flush()
}

func (f *fake) context() int {
	if len(f.ctx) == 0 {
		return 1000
	}
	i := max(f.turn-1, 0)
	if i >= len(f.ctx) {
		i = len(f.ctx) - 1
	}
	return f.ctx[i]
}

func (f *fake) handle(line []byte) (code int, stop bool) {
	var msg struct {
		Type      string `json:"type"`
		RequestID string `json:"request_id"`
		Request   struct {
			Subtype string `json:"subtype"`
		} `json:"request"`
		Message struct {
			Content string `json:"content"`
		} `json:"message"`
	}
	if err := json.Unmarshal(line, &msg); err != nil {
		fmt.Fprintln(os.Stderr, "fake harness: bad input line:", err)
		return 0, false
	}
	switch msg.Type {
	case "control_request":
		resp := map[string]any{}
		if msg.Request.Subtype == "get_context_usage" {
			resp = map[string]any{"totalTokens": f.context(), "maxTokens": 200000, "isAutoCompactEnabled": os.Getenv("DISABLE_AUTO_COMPACT") != "1"}
		}
		f.emit(map[string]any{"type": "control_response", "response": map[string]any{"subtype": "success", "request_id": msg.RequestID, "response": resp}})
	case "user":
		f.turn++
		f.emit(map[string]any{"type": "system", "subtype": "init", "session_id": f.session, "model": "fake"})
		switch f.mode {
		case ModeCrashMidLine:
			f.out.WriteString(`{"type":"assistant","message":{"id":"msg_`)
			f.out.Flush()
			return 3, true
		case ModeHangTurn:
			signal.Ignore(syscall.SIGINT)
			time.Sleep(time.Hour)
		case ModeHugeLine:
			f.out.WriteString(`{"type":"user","message":{"role":"user","content":"` + strings.Repeat("x", 50<<20) + `"},"parent_tool_use_id":null}` + "\n")
		}
		ctx := f.context()
		f.emit(map[string]any{
			"type": "assistant", "session_id": f.session, "parent_tool_use_id": nil,
			"message": map[string]any{
				"id": "msg_" + strconv.Itoa(f.turn), "model": "fake",
				"content": []any{map[string]any{"type": "text", "text": "echo: " + msg.Message.Content}},
				"usage":   map[string]any{"input_tokens": 0, "cache_creation_input_tokens": 0, "cache_read_input_tokens": ctx, "output_tokens": 5},
			},
		})
		f.cost += 0.01
		f.emit(map[string]any{"type": "result", "subtype": "success", "is_error": false, "result": "echo: " + msg.Message.Content,
			"session_id": f.session, "total_cost_usd": f.cost, "num_turns": 1, "terminal_reason": "completed"})
	}
	return 0, false
}
