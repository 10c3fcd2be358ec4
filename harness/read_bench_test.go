package harness

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"os"
	"strings"
	"testing"

	"github.com/flowerhq/flower/front"
	"github.com/flowerhq/flower/transcript"
)

// benchStream is a harness's stdout as flower reads it in a job: the
// records of a recorded turn with a tool call, then tool results of 8 KiB
// and 64 KiB (tool results are what make lines long), eight times over.
func benchStream(b *testing.B) []byte {
	data, err := os.ReadFile("../front/testdata/interrupted-tool.jsonl")
	if err != nil {
		b.Fatal(err)
	}
	var turn bytes.Buffer
	turn.Write(bytes.TrimSpace(data))
	turn.WriteByte('\n')
	for _, n := range []int{8 << 10, 64 << 10} {
		turn.WriteString(`{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"` +
			strings.Repeat("x\\n", n/3) + `"}]},"parent_tool_use_id":null,"session_id":"s-1"}` + "\n")
	}
	return bytes.Repeat(turn.Bytes(), 8)
}

// BenchmarkReadToFacts is flower's own work on a harness's stdout, each
// line from the pipe to the engine's facts: the reader (read), its queue,
// and the headless front's Records with its translator.
func BenchmarkReadToFacts(b *testing.B) {
	data := benchStream(b)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	ctx := context.Background()
	for b.Loop() {
		r, w, err := os.Pipe()
		if err != nil {
			b.Fatal(err)
		}
		p := &Process{log: slog.New(slog.DiscardHandler), stdout: newPipeReader(r), pending: map[string]chan transcript.Event{}, fired: map[string]bool{}}
		q, events, done := newQueue(), make(chan transcript.Event), make(chan struct{})
		go p.read(0, q, done)
		go q.pump(events)
		go func() {
			_, _ = w.Write(data)
			w.Close()
		}()
		recs, facts := front.NewRecords(events, nil), 0
		for {
			if _, err := recs.Next(ctx); err == io.EOF {
				break
			} else if err != nil {
				b.Fatal(err)
			}
			facts++
		}
		<-done
		if facts == 0 || p.Skipped() != 0 {
			b.Fatalf("%d facts, %d lines skipped", facts, p.Skipped())
		}
	}
}
