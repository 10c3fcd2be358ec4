package front_test

import (
	"bufio"
	"context"
	"os"
	"testing"

	"github.com/flowerhq/flower/front"
	"github.com/flowerhq/flower/transcript"
)

// Sync takes every record up to the count it is given, however late the
// pipe delivers them, and translates none: the result of a turn taken by
// Sync reads as interrupted when the interrupt was told after Sync took it
// and before Next translated it, and a Next with a done context returns
// every fact then (DESIGN.md «Inbox»).
func TestRecordsSyncHoldsUntranslated(t *testing.T) {
	f, err := os.Open("testdata/interrupted-tool.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var evs []transcript.Event
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		ev, err := transcript.Decode(append([]byte(nil), sc.Bytes()...))
		if err != nil {
			t.Fatal(err)
		}
		evs = append(evs, ev)
	}
	src, upTo := make(chan transcript.Event), make(chan int, 1)
	r := front.NewRecords(src, nil)
	_ = r.Turn(func() error { return nil })
	go func() {
		upTo <- len(evs) // the reader read them all before it could hand on one
		for _, ev := range evs {
			src <- ev
		}
	}()
	if err := r.Sync(context.Background(), upTo); err != nil {
		t.Fatal(err)
	}
	_ = r.Interrupt(func() error { return nil })
	done, cancel := context.WithCancel(context.Background())
	cancel()
	var facts []front.Fact
	for {
		f, err := r.Next(done)
		if err != nil {
			if err != context.Canceled {
				t.Fatalf("Next: %v, want the done context's error once all is returned", err)
			}
			break
		}
		facts = append(facts, f)
	}
	if rounds := only[front.Round](facts); len(rounds) == 0 || rounds[0].Context != 120_005 {
		t.Errorf("Round facts %+v, want the response at 120005", rounds)
	}
	if te := ended(t, facts); te.How != front.EndedInterrupted {
		t.Errorf("the turn ends %v, want interrupted: its result was translated after the interrupt", te.How)
	}
}
