package transcript

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"strings"
	"testing"
)

// stream is a harness stdout of n records, each assistant line followed by
// a tool result line of toolBytes bytes (tool results are what make lines
// long).
func stream(n, toolBytes int) []byte {
	var b bytes.Buffer
	result := `{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"` + strings.Repeat("x", toolBytes) + `"}]},"parent_tool_use_id":null,"session_id":"s-1"}`
	for i := 0; i < n; i++ {
		b.WriteString(mainLine)
		b.WriteByte('\n')
		b.WriteString(result)
		b.WriteByte('\n')
	}
	return b.Bytes()
}

// The reader flower uses against the standard library's ReadBytes (which
// allocates every line) on the same data.
func BenchmarkReadLines(b *testing.B) {
	for _, size := range []struct {
		name string
		tool int
	}{{"1KiB", 1 << 10}, {"1MiB", 1 << 20}} {
		data := stream(8, size.tool)
		b.Run("LineReader/"+size.name, func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				lr := NewLineReader(bytes.NewReader(data), 0)
				for {
					if _, err := lr.Next(); err == io.EOF {
						break
					}
				}
			}
		})
		b.Run("bufio.ReadBytes/"+size.name, func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				r := bufio.NewReader(bytes.NewReader(data))
				for {
					if _, err := r.ReadBytes('\n'); err == io.EOF {
						break
					}
				}
			}
		})
	}
}

// Decode (gjson, only the fields flower needs) against decoding the same
// fields with encoding/json.
func BenchmarkDecode(b *testing.B) {
	for _, size := range []struct {
		name string
		tool int
	}{{"assistant", 0}, {"toolresult-1MiB", 1 << 20}} {
		line := []byte(mainLine)
		if size.tool > 0 {
			line = bytes.TrimSpace(stream(1, size.tool)[len(mainLine)+1:])
		}
		b.Run("gjson/"+size.name, func(b *testing.B) {
			b.SetBytes(int64(len(line)))
			for b.Loop() {
				if _, err := Decode(line); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("encoding-json/"+size.name, func(b *testing.B) {
			b.SetBytes(int64(len(line)))
			for b.Loop() {
				var v struct {
					Type            string  `json:"type"`
					SessionID       string  `json:"session_id"`
					ParentToolUseID *string `json:"parent_tool_use_id"`
					Message         struct {
						ID      string          `json:"id"`
						Content json.RawMessage `json:"content"`
						Usage   struct {
							Input  int `json:"input_tokens"`
							Create int `json:"cache_creation_input_tokens"`
							Read   int `json:"cache_read_input_tokens"`
						} `json:"usage"`
					} `json:"message"`
				}
				if err := json.Unmarshal(line, &v); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
