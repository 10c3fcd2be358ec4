package interactive

import (
	"bytes"
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// lockedBuffer is a harness's input as the gate sees it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// stuckWriter is a harness that has stopped reading its pty: every Write
// blocks until the test ends.
type stuckWriter struct {
	entered chan struct{} // gets a value each time a Write starts
	unblock chan struct{}
}

func newStuckWriter(t *testing.T) *stuckWriter {
	s := &stuckWriter{entered: make(chan struct{}, 100), unblock: make(chan struct{})}
	t.Cleanup(func() { close(s.unblock) })
	return s
}

func (s *stuckWriter) Write(p []byte) (int, error) {
	s.entered <- struct{}{}
	<-s.unblock
	return len(p), nil
}

// failingWriter is a harness that has gone away.
type failingWriter struct{}

var errGone = errors.New("input/output error")

func (failingWriter) Write([]byte) (int, error) { return 0, errGone }

// eventually waits up to a second for got() to return want.
func eventually(t *testing.T, what string, got func() string, want string) {
	t.Helper()
	deadline := time.Now().Add(time.Second)
	for {
		g := got()
		if g == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: got %q, want %q", what, g, want)
		}
		time.Sleep(time.Millisecond)
	}
}

// within fails the test if f does not return within d.
func within(t *testing.T, what string, d time.Duration, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { f(); close(done) }()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("%s blocked for %v", what, d)
	}
}

func TestGateHoldsThePersonsKeysWhileFlowerTypes(t *testing.T) {
	var h lockedBuffer
	var g Gate
	defer g.Close()
	g.Attach(&h)
	g.Write([]byte("before "))
	g.Hold()
	// The person keeps typing while flower types a prompt, from another
	// goroutine, many small writes each way.
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for range 200 {
			g.Write([]byte("k"))
		}
	}()
	for i := range 200 {
		if err := g.Type([]byte(strconv.Itoa(i % 10))); err != nil {
			t.Fatal(err)
		}
	}
	wg.Wait()
	var want strings.Builder
	want.WriteString("before ")
	for i := range 200 {
		want.WriteString(strconv.Itoa(i % 10))
	}
	// Type returns once its bytes are written, and the keys before it went
	// first: nothing is still on its way.
	if got := h.String(); got != want.String() {
		t.Fatalf("flower's typing was interleaved or keys leaked:\n%s", got)
	}
	if waiting, _ := g.Held(); waiting != 200 {
		t.Fatalf("%d bytes held, want 200", waiting)
	}
	// Released into the next harness, in order.
	var next lockedBuffer
	g.Attach(&next)
	if err := g.Release(); err != nil {
		t.Fatal(err)
	}
	g.Write([]byte("after"))
	eventually(t, "next harness", next.String, strings.Repeat("k", 200)+"after")
}

func TestGateWithoutHarness(t *testing.T) {
	var g Gate
	defer g.Close()
	if err := g.Type([]byte("x")); !errors.Is(err, errNoTarget) {
		t.Errorf("Type with no harness: %v", err)
	}
	// Keys with nowhere to go are held, open gate or not; the oldest go
	// first past the bound.
	g.Write(bytes.Repeat([]byte("a"), MaxHeld))
	g.Write([]byte("bc"))
	if waiting, dropped := g.Held(); waiting != MaxHeld || dropped != 2 {
		t.Errorf("held %d, dropped %d", waiting, dropped)
	}
	var h lockedBuffer
	g.Attach(&h)
	g.Release()
	eventually(t, "released", func() string {
		s := h.String()
		if len(s) < 3 {
			return s
		}
		return strconv.Itoa(len(s)) + s[len(s)-3:]
	}, strconv.Itoa(MaxHeld)+"abc")
}

// The person's keys and flower's typing reach the harness in the order
// given, each write whole, even when the harness reads slowly.
func TestGateKeepsOrder(t *testing.T) {
	var h lockedBuffer
	slow := writerFunc(func(p []byte) (int, error) {
		time.Sleep(100 * time.Microsecond)
		return h.Write(p)
	})
	var g Gate
	defer g.Close()
	g.Attach(slow)
	var want strings.Builder
	for i := range 100 {
		k := "k" + strconv.Itoa(i) + " "
		g.Write([]byte(k))
		want.WriteString(k)
		if i%10 == 9 {
			typed := "<typed " + strconv.Itoa(i) + ">"
			if err := g.Type([]byte(typed)); err != nil {
				t.Fatal(err)
			}
			want.WriteString(typed)
		}
	}
	eventually(t, "harness input", h.String, want.String())
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// A harness that stops reading its input stalls only its own writer: the
// person's keys, Hold, Attach and Held go on, Type gives up within its
// bound, and the keys queued for the stalled harness go to the next one.
func TestGateStalledHarness(t *testing.T) {
	g := &Gate{TypeTimeout: 100 * time.Millisecond}
	t.Cleanup(g.Close) // cleanups run last first: after the stuck write returns
	stuck := newStuckWriter(t)
	g.Attach(stuck)
	g.Write([]byte("a")) // taken by the writer, which then blocks
	<-stuck.entered
	const bound = time.Second
	within(t, "Write", bound, func() { g.Write([]byte("b")) })
	within(t, "Hold", bound, g.Hold)
	within(t, "Held", bound, func() { g.Held() })
	within(t, "Write while held", bound, func() { g.Write([]byte("c")) })

	start := time.Now()
	err := g.Type([]byte("typed"))
	if !errors.Is(err, errStalled) {
		t.Errorf("Type into a stalled harness: %v", err)
	}
	if d := time.Since(start); d > bound {
		t.Errorf("Type took %v with a bound of %v", d, g.TypeTimeout)
	}
	// Known stalled now: the next Type fails at once.
	start = time.Now()
	if err := g.Type([]byte("again")); !errors.Is(err, errStalled) {
		t.Errorf("second Type: %v", err)
	}
	if d := time.Since(start); d > g.TypeTimeout/2 {
		t.Errorf("second Type took %v; it should fail at once", d)
	}

	var next lockedBuffer
	within(t, "Attach", bound, func() { g.Attach(&next) })
	within(t, "Release", bound, func() {
		if err := g.Release(); err != nil {
			t.Errorf("Release: %v", err)
		}
	})
	// "b" was queued for the stalled harness and came back; "c" was held;
	// flower's timed-out typing was taken back, not delivered late.
	eventually(t, "next harness", next.String, "bc")
	within(t, "Attach(nil)", bound, func() { g.Attach(nil) })
}

// Close waits for a writer stuck in a write, which returns once the
// harness's pty is hung up.
func TestGateCloseWaitsForTheWriter(t *testing.T) {
	stuck := &stuckWriter{entered: make(chan struct{}, 1), unblock: make(chan struct{})}
	var g Gate
	g.Attach(stuck)
	g.Write([]byte("a"))
	<-stuck.entered
	closed := make(chan struct{})
	go func() { g.Close(); close(closed) }()
	select {
	case <-closed:
		t.Fatal("Close returned while the writer was still in a write")
	case <-time.After(50 * time.Millisecond):
	}
	close(stuck.unblock)
	select {
	case <-closed:
	case <-time.After(time.Second):
		t.Fatal("Close did not return after the write did")
	}
}

// A harness whose writes fail: Type reports the error; the person's keys
// are held for the next harness.
func TestGateFailingHarness(t *testing.T) {
	var g Gate
	defer g.Close()
	g.Attach(failingWriter{})
	if err := g.Type([]byte("x")); !errors.Is(err, errGone) {
		t.Fatalf("Type: %v", err)
	}
	if err := g.Type([]byte("y")); !errors.Is(err, errGone) {
		t.Errorf("Type after a failure: %v", err)
	}
	g.Write([]byte("keys"))
	if waiting, _ := g.Held(); waiting != 4 {
		t.Errorf("%d bytes held, want 4", waiting)
	}
	var next lockedBuffer
	g.Attach(&next)
	if err := g.Release(); err != nil {
		t.Fatal(err)
	}
	eventually(t, "next harness", next.String, "keys")
}

// Keys queued for a harness that does not read them are bounded like held
// ones: past MaxHeld the oldest are dropped.
func TestGateBoundsKeysForAStalledHarness(t *testing.T) {
	g := &Gate{}
	t.Cleanup(g.Close)
	stuck := newStuckWriter(t)
	g.Attach(stuck)
	g.Write([]byte("x"))
	<-stuck.entered
	for range MaxHeld / 1024 {
		g.Write(bytes.Repeat([]byte("a"), 1024))
	}
	g.Write([]byte("bc"))
	if _, dropped := g.Held(); dropped != 2 {
		t.Errorf("dropped %d, want 2", dropped)
	}
	// Detached, they are held again, newest kept.
	g.Attach(nil)
	if waiting, _ := g.Held(); waiting != MaxHeld {
		t.Errorf("held %d after detaching, want %d", waiting, MaxHeld)
	}
}
