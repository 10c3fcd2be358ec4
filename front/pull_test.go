package front

import (
	"context"
	"errors"
	"io"
	"reflect"
	"testing"
)

// Pull gives the facts in order, asks its step only when none is left
// (again when a step added none), gives the facts a step added as it
// ended before the end, and passes a step's error on.
func TestPullAsksOnlyWhenNoFactIsLeft(t *testing.T) {
	var p Pull
	p.Add(Init{SessionID: "s"})
	steps := 0
	inputs := []func() error{
		func() error { return nil }, // an input with no fact
		func() error { p.Add(Round{Context: 1}, Round{Context: 2}); return nil },
		func() error { p.Add(Round{Context: 3}); return io.EOF },
	}
	step := func(context.Context) error { steps++; return inputs[steps-1]() }
	want := []Fact{Init{SessionID: "s"}, Round{Context: 1}, Round{Context: 2}, Round{Context: 3}}
	asked := []int{0, 2, 2, 3}
	for i, w := range want {
		f, err := p.Next(context.Background(), step)
		if err != nil || !reflect.DeepEqual(f, w) || steps != asked[i] {
			t.Fatalf("fact %d: %#v, %v after %d steps; want %#v after %d", i, f, err, steps, w, asked[i])
		}
	}
	for range 2 {
		if f, err := p.Next(context.Background(), step); !errors.Is(err, io.EOF) || f != nil || steps != 3 {
			t.Fatalf("after the end: %#v, %v, %d steps", f, err, steps)
		}
	}
	boom := errors.New("boom")
	var q Pull
	if _, err := q.Next(context.Background(), func(context.Context) error { return boom }); !errors.Is(err, boom) {
		t.Fatalf("a step's error: %v", err)
	}
}
