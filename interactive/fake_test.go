package interactive

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	"golang.org/x/term"

	"github.com/flowerhq/flower/handoffwriter"
	"github.com/flowerhq/flower/transcript"
)

// The test binary doubles as a fake interactive harness (as os/exec's tests
// do): with FLOWER_FAKE_INTERACTIVE=1 it reads keys from its pty the way the
// real harness does (package doc), writes its state file and a transcript,
// and answers prompts from a script. It exists for what the real harness
// cannot be made to do on cue: crash, overflow, write a bad handoff.
func TestMain(m *testing.M) {
	if os.Getenv("FLOWER_FAKE_INTERACTIVE") == "1" {
		if slices.Contains(os.Args[1:], "-p") {
			os.Exit(fakeProbe())
		}
		os.Exit(fakeHarness())
	}
	os.Exit(m.Run())
}

// fakeScript is one generation's behaviour.
type fakeScript struct {
	// Replies answer the working prompts in order (the last one repeats).
	Replies []fakeReply
	// Writing answers the handoff prompt.
	Writing string
	// CrashAfter makes the process exit with status 3 after this long.
	CrashAfter time.Duration
	// LoseTyped: a prompt typed with this in it never reaches the session
	// (keys lost on their way into the input).
	LoseTyped string
	// SlowTyped: a prompt typed with this in it shows up in the
	// transcript only after SlowBy.
	SlowTyped string
	SlowBy    time.Duration
	// CommandFor: a slash command keeps the harness busy this long, the
	// keys typed meanwhile are lost, and the command is put back into the
	// input as it ends (as a /compact the hook blocked is).
	CommandFor time.Duration
	// ExitTakes: ending on Ctrl-C twice takes this long (the real
	// harness's shut-down takes a few hundred milliseconds).
	ExitTakes time.Duration
	// WritingTakes: the handoff prompt is answered this long after it
	// was submitted.
	WritingTakes time.Duration
	// PasteOnAfter: the screen turns bracketed paste on (and reads keys)
	// only this long after start; the keys sent before are lost, as the
	// real harness loses them early in its start-up.
	PasteOnAfter time.Duration
}

type fakeReply struct {
	Context  int
	Tool     bool // the reply calls a tool: the turn runs until Esc
	Overflow bool // the API said the prompt is too long
	// Before, when set, is the context of a round that comes first (a
	// tool call answered at once): the session's first round is then not
	// already at the threshold.
	Before int
	// NoTurnEnd: the turn ends on its own, busy then idle, but its
	// transcript has no turn_duration line (as when background work runs).
	NoTurnEnd bool
}

// fakeRecord is what the fake leaves in FAKE_DIR for the test.
type fakeRecord struct {
	Prompts []string // submitted prompts, in order, with the files they mention
	Typed   []string // the prompts as typed
	Input   string   // what sat in the input when it exited
	// ExitedByKeys: it exited on Ctrl-C twice, as a person ends it.
	ExitedByKeys bool
	// Escs counts the Esc keys it read.
	Escs int
	// Commands are the slash commands submitted, in order.
	Commands []string
	// Started and Exited: when it started, and when it exited on keys
	// (Unix nanoseconds; Exited 0 otherwise); Wrote: when it answered the
	// handoff prompt; PasteOn: when it turned bracketed paste on.
	Started, Exited, Wrote, PasteOn int64
}

// fakeProbe is the fake started in stream-json mode, as Session.Probe
// starts the harness: it answers the context-usage request as the real one
// does before any turn (a 200K window, auto-compact as the environment
// says) and exits when its input ends.
func fakeProbe() int {
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		var msg struct {
			Type      string `json:"type"`
			RequestID string `json:"request_id"`
			Request   struct {
				Subtype string `json:"subtype"`
			} `json:"request"`
		}
		if json.Unmarshal(in.Bytes(), &msg) != nil || msg.Type != "control_request" {
			continue
		}
		resp := map[string]any{}
		if msg.Request.Subtype == "get_context_usage" {
			resp = map[string]any{"totalTokens": 1000, "maxTokens": 200000, "isAutoCompactEnabled": os.Getenv("DISABLE_AUTO_COMPACT") != "1"}
		}
		b, _ := json.Marshal(map[string]any{"type": "control_response", "response": map[string]any{"subtype": "success", "request_id": msg.RequestID, "response": resp}})
		fmt.Printf("%s\n", b)
	}
	return 0
}

func fakeHarness() int {
	dir := os.Getenv("FAKE_DIR")
	var scripts []fakeScript
	if err := json.Unmarshal([]byte(os.Getenv("FAKE_SCRIPT")), &scripts); err != nil || len(scripts) == 0 {
		fmt.Fprintln(os.Stderr, "fake: bad FAKE_SCRIPT:", err)
		return 2
	}
	gen := fakeBump(filepath.Join(dir, "gen"))
	sc := scripts[min(gen, len(scripts)-1)]
	fmt.Printf("fake harness, generation %d\r\n", gen+1)
	if sc.CrashAfter > 0 {
		time.Sleep(sc.CrashAfter)
		fmt.Fprintln(os.Stderr, "fake: crashing")
		return 3
	}
	started := time.Now()
	cwd, _ := os.Getwd()
	conf := transcript.ConfigDir(os.Environ())
	f := &fake{
		sc: sc, sid: fmt.Sprintf("fake-%d-%d", gen+1, os.Getpid()), gen: gen,
		record: filepath.Join(dir, fmt.Sprintf("record-%d.json", gen+1)),
		state:  filepath.Join(conf, "sessions", strconv.Itoa(os.Getpid())+".json"),
	}
	f.path = transcript.FilePath(conf, cwd, f.sid)
	_ = os.MkdirAll(filepath.Dir(f.state), 0o755)
	_ = os.MkdirAll(filepath.Dir(f.path), 0o755)
	// Like the real harness, it names its session in its state file
	// before its screen reads keys.
	f.setState("idle")
	time.Sleep(sc.PasteOnAfter)
	if old, err := term.MakeRaw(0); err == nil {
		defer term.Restore(0, old)
	}
	if t, err := unix.IoctlGetTermios(0, ioctlGetTermios); err == nil {
		_ = unix.IoctlSetTermios(0, ioctlSetTermiosFlush, t) // what was sent before is lost
	}
	// Like the real harness, it turns bracketed paste on once it reads
	// keys, and draws on the alternate screen.
	fmt.Print(pasteModeOn + "\x1b[?1049h")
	f.rec.Started, f.rec.PasteOn = started.UnixNano(), time.Now().UnixNano()
	// Say the pty's size whenever it changes, for the resize test, and
	// once now: a change made before the signal was listened for raises
	// no second signal when the same size is set again.
	winch := make(chan os.Signal, 1)
	signal.Notify(winch, syscall.SIGWINCH)
	winch <- syscall.SIGWINCH
	go func() {
		for range winch {
			if w, h, err := term.GetSize(0); err == nil {
				fmt.Printf("size %dx%d\r\n", w, h)
			}
		}
	}()
	defer os.Remove(f.state)
	for i, a := range os.Args {
		if a == "--" && i+1 < len(os.Args) {
			f.submit(os.Args[i+1])
		}
	}
	return f.keys()
}

func fakeBump(path string) int {
	b, _ := os.ReadFile(path)
	n, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	_ = os.WriteFile(path, []byte(strconv.Itoa(n+1)), 0o644)
	return n
}

type fake struct {
	sc     fakeScript
	sid    string
	gen    int
	path   string // transcript
	state  string
	record string

	mu      sync.Mutex
	rec     fakeRecord
	replies int
	msgs    int
	busy    bool
	input   string
	in      chan []byte // the keys, as read
}

// drop loses the keys read so far and not yet taken.
func (f *fake) drop() {
	for {
		select {
		case <-f.in:
		default:
			return
		}
	}
}

func (f *fake) setState(status string) {
	b, _ := json.Marshal(map[string]any{"sessionId": f.sid, "status": status, "pid": os.Getpid()})
	_ = os.WriteFile(f.state, b, 0o644)
}

func (f *fake) line(v map[string]any) {
	v["sessionId"] = f.sid
	v["version"] = fakeVersion
	b, _ := json.Marshal(v)
	fh, err := os.OpenFile(f.path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return
	}
	fh.Write(append(b, '\n'))
	fh.Close()
}

func (f *fake) assistant(text string, ctx int, stop string) {
	f.msgs++
	f.line(map[string]any{"type": "assistant", "isSidechain": false, "message": map[string]any{
		"id": fmt.Sprintf("msg_%d_%d", f.gen, f.msgs), "model": "fake", "stop_reason": stop,
		"content": []any{map[string]any{"type": "text", "text": text}},
		"usage":   map[string]any{"input_tokens": 100, "cache_read_input_tokens": ctx - 100, "output_tokens": 5},
	}})
}

// fakeVersion is the version the fake writes on its transcript lines, as
// the real harness writes its own.
const fakeVersion = "0.0.0-fake"

func (f *fake) turnEnd() { f.line(map[string]any{"type": "system", "subtype": "turn_duration"}) }

func (f *fake) save() {
	f.rec.Input = f.input
	b, _ := json.Marshal(f.rec)
	// Renamed into place: a test reading it meanwhile never sees half.
	if os.WriteFile(f.record+".tmp", b, 0o644) == nil {
		_ = os.Rename(f.record+".tmp", f.record)
	}
}

// submit answers one prompt.
func (f *fake) submit(text string) {
	if text == "/clear" {
		// A new session in the same process, with a transcript of its own.
		f.sid += "-cleared"
		f.path = filepath.Join(filepath.Dir(f.path), f.sid+".jsonl")
		f.setState("idle")
		return
	}
	if strings.HasPrefix(text, "/") {
		// A slash command, as the real harness leaves one: a caveat, the
		// command's line, then its output as a local_command line (here
		// on its error stream, as a blocked /compact's).
		f.rec.Commands = append(f.rec.Commands, text)
		f.save()
		if f.sc.CommandFor > 0 {
			f.setState("busy")
			time.Sleep(f.sc.CommandFor)
			f.drop()
			defer func() {
				f.input = text
				f.setState("idle")
			}()
		}
		f.line(map[string]any{"type": "user", "isSidechain": false, "isMeta": true, "message": map[string]any{"role": "user",
			"content": "<local-command-caveat>The command below was run directly in Claude Code.</local-command-caveat>"}})
		f.line(map[string]any{"type": "user", "isSidechain": false, "message": map[string]any{"role": "user",
			"content": "<command-name>" + text + "</command-name>\n<command-message>" + text[1:] + "</command-message>\n<command-args></command-args>"}})
		f.line(map[string]any{"type": "system", "subtype": "local_command", "isSidechain": false,
			"content": "<local-command-stderr>" + text + " blocked by a hook</local-command-stderr>"})
		return
	}
	if f.sc.LoseTyped != "" && strings.Contains(text, f.sc.LoseTyped) {
		return
	}
	if f.sc.SlowTyped != "" && strings.Contains(text, f.sc.SlowTyped) {
		time.Sleep(f.sc.SlowBy)
	}
	f.rec.Typed = append(f.rec.Typed, text)
	f.line(map[string]any{"type": "user", "isSidechain": false, "message": map[string]any{"role": "user", "content": text}})
	fmt.Printf("> %.40q\r\n", text)
	text += f.attach(text)
	f.rec.Prompts = append(f.rec.Prompts, text)
	f.save()
	if strings.Contains(text, handoffwriter.PromptTag) {
		time.Sleep(f.sc.WritingTakes)
		f.rec.Wrote = time.Now().UnixNano()
		f.save()
		f.assistant(f.sc.Writing, 156_000, "end_turn")
		f.turnEnd()
		return
	}
	r := f.sc.Replies[min(f.replies, len(f.sc.Replies)-1)]
	f.replies++
	if r.Before > 0 {
		f.assistant("looking around", r.Before, "tool_use")
	}
	switch {
	case r.Overflow:
		f.line(map[string]any{"type": "assistant", "isApiErrorMessage": true, "error": "invalid_request", "message": map[string]any{
			"id": "synthetic", "model": "<synthetic>", "content": []any{map[string]any{"type": "text", "text": "Prompt is too long"}},
			"usage": map[string]any{"input_tokens": 0}}})
	case r.Tool:
		f.assistant("running a tool", r.Context, "tool_use")
		f.busy = true
		f.setState("busy")
	case r.NoTurnEnd:
		f.setState("busy")
		f.assistant("done with that", r.Context, "end_turn")
		f.setState("idle")
	default:
		f.assistant("done with that", r.Context, "end_turn")
		f.turnEnd()
	}
}

// mention is a file mention in a prompt, as the real harness reads them:
// @"a path" or @path.
var mention = regexp.MustCompile(`@"([^"\n]+)"|@(/\S+)`)

// attach does what the real harness does with each file a prompt mentions:
// an attachment record in the transcript, and the file's text in what the
// model is sent (returned, to be answered with the prompt).
func (f *fake) attach(text string) string {
	var b strings.Builder
	for _, m := range mention.FindAllStringSubmatch(text, -1) {
		path := m[1] + m[2]
		data, err := os.ReadFile(path)
		if err != nil {
			continue // the real harness attaches nothing, and says nothing
		}
		f.line(map[string]any{"type": "attachment", "isSidechain": false, "attachment": map[string]any{"type": "file", "filename": path,
			"content": map[string]any{"type": "text", "file": map[string]any{"filePath": path, "content": string(data)}}}})
		b.WriteString("\n" + string(data))
	}
	return b.String()
}

// keys reads the pty like the real harness: bracketed pastes and keys
// typed go to the input, Enter submits, Esc interrupts, Ctrl-C clears or,
// twice in a row, exits.
func (f *fake) keys() int {
	f.in = make(chan []byte, 64)
	go func() {
		defer close(f.in)
		for {
			buf := make([]byte, 4096)
			n, err := os.Stdin.Read(buf)
			if n > 0 {
				f.in <- buf[:n]
			}
			if err != nil {
				return
			}
		}
	}()
	var data string
	paste := false
	var lastCtrlC time.Time
	for {
		b, ok := <-f.in
		if !ok {
			return 1
		}
		data += string(b)
		for data != "" {
			switch {
			case paste:
				i := strings.Index(data, pasteEnd)
				if i < 0 {
					f.input += data
					data = ""
					continue
				}
				f.input += data[:i]
				data, paste = data[i+len(pasteEnd):], false
			case strings.HasPrefix(data, pasteStart):
				data, paste = data[len(pasteStart):], true
			case data == keyEsc:
				data = ""
				f.rec.Escs++
				if f.busy {
					f.busy = false
					f.line(map[string]any{"type": "user", "isSidechain": false, "message": map[string]any{"role": "user",
						"content": []any{map[string]any{"type": "text", "text": "[Request interrupted by user for tool use]"}}}})
					f.setState("idle")
				}
			case data[0] == '\r':
				data = data[1:]
				if in := f.input; in != "" {
					f.input = ""
					f.submit(in)
				}
			case data[0] == 0x03:
				data = data[1:]
				switch {
				case f.input != "":
					f.input = ""
				case time.Since(lastCtrlC) < 800*time.Millisecond:
					time.Sleep(f.sc.ExitTakes)
					f.rec.ExitedByKeys, f.rec.Exited = true, time.Now().UnixNano()
					f.save()
					f.line(map[string]any{"type": "cost-state", "totalCostUSD": 0.25})
					// Like the real harness: off the alternate screen,
					// then a goodbye naming its session.
					fmt.Printf("\x1b[?1049lbye\r\nResume this session with:\r\nclaude --resume %s\r\n", f.sid)
					return 0
				}
				lastCtrlC = time.Now()
			default:
				f.input += data[:1]
				data = data[1:]
			}
		}
		f.save()
	}
}
