package front

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/flowerhq/flower/transcript"
)

// benchLines are a harness's stdout as the headless front reads it: the
// records of a recorded turn with a tool call, and tool results of 8 KiB
// and 64 KiB (tool results are what make lines long).
func benchLines(b *testing.B) [][]byte {
	data, err := os.ReadFile("testdata/interrupted-tool.jsonl")
	if err != nil {
		b.Fatal(err)
	}
	lines := bytes.Split(bytes.TrimSpace(data), []byte("\n"))
	for _, n := range []int{8 << 10, 64 << 10} {
		lines = append(lines, []byte(`{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"`+
			strings.Repeat("x", n)+`"}]},"parent_tool_use_id":null,"session_id":"s-1"}`))
	}
	return lines
}

// BenchmarkTranslate is what flower spends on each line of a harness's
// stdout before the engine sees its facts: decoding the record and
// translating it.
func BenchmarkTranslate(b *testing.B) {
	lines := benchLines(b)
	var size int64
	for _, l := range lines {
		size += int64(len(l))
	}
	b.SetBytes(size)
	b.ReportAllocs()
	var tr Translator
	facts := 0
	for b.Loop() {
		for _, l := range lines {
			ev, err := transcript.Decode(l)
			if err != nil {
				b.Fatal(err)
			}
			tr.Facts(&ev, func(Fact) { facts++ })
		}
	}
	if facts == 0 {
		b.Fatal("no facts")
	}
}
