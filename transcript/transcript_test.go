package transcript

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"
)

func readAll(t *testing.T, lr *LineReader) (lines []string, skipped []*LineError) {
	t.Helper()
	for {
		line, err := lr.Next()
		var le *LineError
		switch {
		case err == nil:
			lines = append(lines, string(line))
		case errors.As(err, &le):
			skipped = append(skipped, le)
		case errors.Is(err, io.EOF):
			return lines, skipped
		default:
			t.Fatalf("Next: %v", err)
		}
	}
}

func TestLineReader(t *testing.T) {
	big := strings.Repeat("x", 5<<20) // 5 MiB: far past bufio.Scanner's default
	tests := []struct {
		name    string
		in      string
		max     int
		want    []string
		skipped []int64 // sizes of skipped lines
	}{
		{"empty", "", 0, nil, nil},
		{"two lines", "a\nb\n", 0, []string{"a", "b"}, nil},
		{"crlf", "a\r\nb\r\n", 0, []string{"a", "b"}, nil},
		{"last line without newline", "a\nb", 0, []string{"a", "b"}, nil},
		{"empty lines kept", "\n\na\n", 0, []string{"", "", "a"}, nil},
		{"multi-megabyte line", "s\n" + big + "\ne\n", 0, []string{"s", big, "e"}, nil},
		{"over the limit is skipped, next line still read", "s\n" + strings.Repeat("y", 100) + "\ne\n", 10, []string{"s", "e"}, []int64{100}},
		{"over the limit at EOF", "s\n" + strings.Repeat("y", 100), 10, []string{"s"}, []int64{100}},
		{"exactly at the limit", strings.Repeat("z", 10) + "\n", 10, []string{strings.Repeat("z", 10)}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, r := range []io.Reader{strings.NewReader(tt.in), iotest.OneByteReader(strings.NewReader(tt.in))} {
				if len(tt.in) > 1<<20 {
					if _, ok := r.(*strings.Reader); !ok {
						continue // one byte at a time is too slow for 5 MiB
					}
				}
				lines, skipped := readAll(t, NewLineReader(r, tt.max))
				if len(lines) != len(tt.want) {
					t.Fatalf("got %d lines, want %d", len(lines), len(tt.want))
				}
				for i := range lines {
					if lines[i] != tt.want[i] {
						t.Errorf("line %d: got %.20q (len %d), want %.20q (len %d)", i, lines[i], len(lines[i]), tt.want[i], len(tt.want[i]))
					}
				}
				if len(skipped) != len(tt.skipped) {
					t.Fatalf("skipped %d lines, want %d", len(skipped), len(tt.skipped))
				}
				for i, le := range skipped {
					if le.Size != tt.skipped[i] || !errors.Is(le, ErrLineTooLong) {
						t.Errorf("skipped[%d] = %v, want size %d and ErrLineTooLong", i, le, tt.skipped[i])
					}
				}
			}
		})
	}
}

func TestLineReaderReadError(t *testing.T) {
	boom := errors.New("boom")
	lr := NewLineReader(io.MultiReader(strings.NewReader("a\npartial"), iotest.ErrReader(boom)), 0)
	if line, err := lr.Next(); err != nil || string(line) != "a" {
		t.Fatalf("first line: %q, %v", line, err)
	}
	if _, err := lr.Next(); !errors.Is(err, boom) {
		t.Fatalf("want the read error, got %v", err)
	}
	if _, err := lr.Next(); !errors.Is(err, io.EOF) {
		t.Fatalf("after an error the reader is done, got %v", err)
	}
}

// Lines shaped as the real harness 2.1.328 prints them (DESIGN.md
// «Stream-json»).
const (
	initLine      = `{"type":"system","subtype":"init","session_id":"s-1","model":"claude-haiku-4-5","cwd":"/w","tools":["Bash","Task"],"claude_code_version":"2.1.328"}`
	mainLine      = `{"type":"assistant","message":{"id":"msg_1","model":"claude-haiku-4-5","content":[{"type":"text","text":"working"},{"type":"tool_use","id":"toolu_1","name":"Bash","input":{"command":"ls"}}],"usage":{"input_tokens":10,"cache_creation_input_tokens":200,"cache_read_input_tokens":150000,"output_tokens":7}},"parent_tool_use_id":null,"session_id":"s-1"}`
	mainLineDup   = `{"type":"assistant","message":{"id":"msg_1","model":"claude-haiku-4-5","content":[{"type":"text","text":"more"}],"usage":{"input_tokens":10,"cache_creation_input_tokens":200,"cache_read_input_tokens":150000,"output_tokens":9}},"parent_tool_use_id":null,"session_id":"s-1"}`
	subagentLine  = `{"type":"assistant","message":{"id":"msg_2","model":"claude-haiku-4-5","content":[{"type":"text","text":"sub"}],"usage":{"input_tokens":5,"cache_creation_input_tokens":0,"cache_read_input_tokens":190000,"output_tokens":1}},"parent_tool_use_id":"toolu_9","session_id":"s-1"}`
	syntheticLine = `{"type":"assistant","message":{"id":"msg_3","model":"<synthetic>","content":[{"type":"text","text":"Prompt is too long"}],"usage":{"input_tokens":0,"output_tokens":0}},"parent_tool_use_id":null,"session_id":"s-1","error":"invalid_request","is_api_error_message":true,"api_error_status":400}`
	interruptLine = `{"type":"user","message":{"role":"user","content":[{"type":"text","text":"[Request interrupted by user for tool use]"}]},"parent_tool_use_id":null,"session_id":"s-1"}`
	resultLine    = `{"type":"result","subtype":"success","is_error":false,"result":"done","session_id":"s-1","total_cost_usd":0.25,"num_turns":3,"usage":{},"modelUsage":{"claude-haiku-4-5":{"contextWindow":200000},"claude-x":{"contextWindow":1000}},"terminal_reason":"completed"}`
	overflowLine  = `{"type":"result","subtype":"success","is_error":true,"result":"Prompt is too long","session_id":"s-1","total_cost_usd":0.5,"num_turns":1,"terminal_reason":"prompt_too_long"}`
	controlLine   = `{"type":"control_response","response":{"subtype":"success","request_id":"r2","response":{"totalTokens":188000,"maxTokens":200000,"isAutoCompactEnabled":false}}}`
	controlErr    = `{"type":"control_response","response":{"subtype":"error","request_id":"r3","error":"unknown subtype"}}`
)

func TestDecode(t *testing.T) {
	tests := []struct {
		line  string
		check func(t *testing.T, ev Event)
	}{
		{initLine, func(t *testing.T, ev Event) {
			if ev.Kind != KindInit || ev.SessionID != "s-1" || ev.Model != "claude-haiku-4-5" {
				t.Errorf("init: %+v", ev)
			}
		}},
		{mainLine, func(t *testing.T, ev Event) {
			if ev.Kind != KindAssistant || !ev.MainThread() || ev.Synthetic() || ev.MessageID != "msg_1" {
				t.Errorf("assistant: %+v", ev)
			}
			if ev.Usage.Context() != 150210 || ev.Usage.OutputTokens != 7 {
				t.Errorf("usage %+v", ev.Usage)
			}
			if ev.Text != "working" || len(ev.ToolUses) != 1 || ev.ToolUses[0].Name != "Bash" || ev.ToolUses[0].Input != `{"command":"ls"}` {
				t.Errorf("content: %q %+v", ev.Text, ev.ToolUses)
			}
		}},
		{subagentLine, func(t *testing.T, ev Event) {
			if ev.MainThread() || ev.ParentToolUseID != "toolu_9" {
				t.Errorf("subagent: %+v", ev)
			}
		}},
		{syntheticLine, func(t *testing.T, ev Event) {
			if !ev.Synthetic() || !ev.APIError || ev.Text != "Prompt is too long" {
				t.Errorf("synthetic: %+v", ev)
			}
		}},
		{interruptLine, func(t *testing.T, ev Event) {
			if ev.Kind != KindUser || !ev.Interrupted {
				t.Errorf("interrupt: %+v", ev)
			}
		}},
		{resultLine, func(t *testing.T, ev Event) {
			if ev.Kind != KindResult || ev.IsError || ev.TotalCostUSD != 0.25 || ev.NumTurns != 3 || ev.TerminalReason != "completed" || ev.ContextWindow != 200000 || ev.Result != "done" {
				t.Errorf("result: %+v", ev)
			}
		}},
		{overflowLine, func(t *testing.T, ev Event) {
			if !ev.IsError || ev.TerminalReason != "prompt_too_long" {
				t.Errorf("overflow: %+v", ev)
			}
		}},
		{controlLine, func(t *testing.T, ev Event) {
			if ev.Kind != KindControlResponse || ev.RequestID != "r2" || ev.ControlError != "" || ev.Response.Get("maxTokens").Int() != 200000 || ev.Response.Get("isAutoCompactEnabled").Bool() {
				t.Errorf("control: %+v", ev)
			}
		}},
		{controlErr, func(t *testing.T, ev Event) {
			if ev.RequestID != "r3" || ev.ControlError != "unknown subtype" {
				t.Errorf("control error: %+v", ev)
			}
		}},
		{`{"type":"stream_event","event":{}}`, func(t *testing.T, ev Event) {
			if ev.Kind != KindOther || ev.Type != "stream_event" {
				t.Errorf("other: %+v", ev)
			}
		}},
	}
	for _, tt := range tests {
		ev, err := Decode([]byte(tt.line))
		if err != nil {
			t.Fatalf("Decode(%.40s): %v", tt.line, err)
		}
		tt.check(t, ev)
	}
}

func TestDecodeRejectsNonObjects(t *testing.T) {
	for _, bad := range []string{"", "garbage", `{"type":"assistant"`, `[1,2]`, `"str"`, `42`, `null`, "\x00\xff"} {
		if _, err := Decode([]byte(bad)); !errors.Is(err, ErrNotJSON) {
			t.Errorf("Decode(%q) = %v, want ErrNotJSON", bad, err)
		}
		if _, err := DecodeOwned([]byte(bad)); !errors.Is(err, ErrNotJSON) {
			t.Errorf("DecodeOwned(%q) = %v, want ErrNotJSON", bad, err)
		}
	}
}

// DecodeOwned, which parses a line in place, reads every record as Decode
// does: the recorded stdout and transcript lines of testdata.
func TestDecodeOwnedAsDecode(t *testing.T) {
	files, _ := filepath.Glob("testdata/*.jsonl")
	more, _ := filepath.Glob("testdata/limits/*.jsonl")
	n := 0
	for _, f := range append(files, more...) {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range bytes.Split(data, []byte("\n")) {
			want, werr := Decode(line)
			got, gerr := DecodeOwned(bytes.Clone(line))
			if !errors.Is(gerr, werr) || !reflect.DeepEqual(got, want) {
				t.Fatalf("%s: DecodeOwned(%.80q) = %+v, %v; Decode: %+v, %v", f, line, got, gerr, want, werr)
			}
			n++
		}
	}
	if n < 10 {
		t.Fatalf("only %d lines read", n)
	}
}

// FuzzReader feeds arbitrary bytes through the line reader and the
// decoder: nothing may panic, every line is accounted for, and a line the
// decoder accepts is valid JSON.
func FuzzReader(f *testing.F) {
	for _, l := range []string{initLine, mainLine, subagentLine, syntheticLine, interruptLine, resultLine, overflowLine, controlLine, controlErr} {
		f.Add([]byte(l + "\n" + l[:len(l)/2]))
	}
	f.Add([]byte("garbage\n\n{}\n[]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		lr := NewLineReader(bytes.NewReader(data), 64)
		lines := 0
		for {
			line, err := lr.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			lines++
			if err != nil {
				if !errors.Is(err, ErrLineTooLong) {
					t.Fatalf("unexpected error %v", err)
				}
				continue
			}
			if len(line) > 64 {
				t.Fatalf("line of %d bytes passed a 64-byte limit", len(line))
			}
			ev, err := Decode(line)
			if err != nil {
				continue
			}
			_ = ev.Usage.Context()
		}
		if want := bytes.Count(data, []byte("\n")); lines < want || lines > want+1 {
			t.Fatalf("read %d lines from %d newlines", lines, want)
		}
	})
}
