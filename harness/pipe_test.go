package harness

import (
	"fmt"
	"log/slog"
	"os"
	"strings"
	"testing"

	"github.com/flowerhq/flower/transcript"
)

// reading is the read loop over a pipe of the test's: w is the harness's
// stdout, events what the reader makes of it.
func reading(t *testing.T) (p *Process, w *os.File, events chan transcript.Event) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	p = &Process{log: slog.New(slog.DiscardHandler), stdout: newPipeReader(r), pending: map[string]chan transcript.Event{}, fired: map[string]bool{}}
	q, events, done := newQueue(), make(chan transcript.Event), make(chan struct{})
	go p.read(0, q, done)
	go q.pump(events)
	t.Cleanup(func() {
		w.Close()
		for range events {
		}
		<-done
	})
	return p, w, events
}

func records(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, `{"type":"user","session_id":"s-1","message":{"role":"user","content":"line %d %s"}}`+"\n", i, strings.Repeat("x", 900))
	}
	return b.String()
}

// Drained answers only once everything written before the ask is read,
// however far behind the reader is: with nobody taking events, the reader
// stops at its queue's bound, and the answer waits until enough events are
// taken for the rest of the pipe to be read; it then counts every record
// written (DESIGN.md «Inbox»). The records (about 1 KiB each) fit in the
// pipe, so the write is done before the ask.
func TestDrainedWaitsForWhatWasWritten(t *testing.T) {
	p, w, events := reading(t)
	const n = 56
	if _, err := w.WriteString(records(n)); err != nil {
		t.Fatal(err)
	}
	drained, answered := p.Drained(), false
	for i := range n {
		select {
		case got := <-drained:
			if got != n {
				t.Fatalf("drained at %d records (%d taken), want %d", got, i, n)
			}
			answered = true
		default:
		}
		ev := <-events
		if want := fmt.Sprintf("line %d ", i); !strings.Contains(string(ev.Raw), want) {
			t.Fatalf("record %d is %.40s", i, ev.Raw)
		}
	}
	if !answered {
		if got := <-drained; got != n {
			t.Errorf("drained at %d records, want %d", got, n)
		}
	}
}

// A reader that waits on an empty pipe is answered without any more being
// written; one that has ended, at once, with every record it read.
func TestDrainedIdleAndEnded(t *testing.T) {
	p, w, events := reading(t)
	if got := <-p.Drained(); got != 0 {
		t.Errorf("an empty pipe drained at %d records", got)
	}
	if _, err := w.WriteString(records(2)); err != nil {
		t.Fatal(err)
	}
	<-events
	<-events
	if got := <-p.Drained(); got != 2 {
		t.Errorf("drained at %d records, want 2", got)
	}
	w.Close()
	if _, open := <-events; open {
		t.Fatal("an event after the last line")
	}
	if got := <-p.Drained(); got != 2 {
		t.Errorf("an ended reader drained at %d records, want 2", got)
	}
}
