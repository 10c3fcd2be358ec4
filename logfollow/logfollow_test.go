package logfollow

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
)

// collector gathers the lines Follow passes on, for the test goroutine.
type collector struct {
	mu    sync.Mutex
	lines []string
}

func (c *collector) add(l []byte) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lines = append(c.lines, string(l))
	return nil
}

func (c *collector) snapshot() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.lines...)
}

// waitFor fails the test unless the lines seen become want within d.
func (c *collector) waitFor(t *testing.T, want []string, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		got := c.snapshot()
		if reflect.DeepEqual(got, want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %v: lines = %q, want %q", d, got, want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// follow runs Follow on path until the test ends. The fallback poll is an
// hour, so whatever arrives within the test's deadlines came through
// fsnotify.
func follow(t *testing.T, path string) *collector {
	t.Helper()
	c := &collector{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Follow(ctx, path, Options{Poll: time.Hour}, c.add) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Follow = %v, want nil after cancel", err)
			}
		case <-time.After(5 * time.Second):
			t.Error("Follow did not return after cancel")
		}
	})
	return c
}

func appendTo(t *testing.T, path, s string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(s); err != nil {
		t.Fatal(err)
	}
}

func writeFile(t *testing.T, path, s string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

// The bound for a new line to show.
const second = time.Second

func TestFollowSeesExistingThenAppendedLines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "flower.log")
	writeFile(t, path, "one\ntwo\n")
	c := follow(t, path)
	c.waitFor(t, []string{"one", "two"}, 5*time.Second)
	for i, l := range []string{"three", "four", "five"} {
		appendTo(t, path, l+"\n")
		c.waitFor(t, []string{"one", "two", "three", "four", "five"}[:3+i], second)
	}
}

func TestFollowHoldsPartialLineUntilCompleted(t *testing.T) {
	path := filepath.Join(t.TempDir(), "flower.log")
	writeFile(t, path, "done\nhal")
	c := follow(t, path)
	c.waitFor(t, []string{"done"}, 5*time.Second)
	appendTo(t, path, "f a line")
	time.Sleep(200 * time.Millisecond) // a wrong follower would emit the piece by now
	c.waitFor(t, []string{"done"}, 0)
	appendTo(t, path, "\r\nnext\n")
	c.waitFor(t, []string{"done", "half a line\r", "next"}, second)
}

func TestFollowSurvives(t *testing.T) {
	tests := []struct {
		name string
		// change runs after "old 1\nold 2\n" was seen and must leave a
		// file at path whose lines Follow then reads from the top.
		change func(t *testing.T, path string)
	}{
		{"truncation", func(t *testing.T, path string) {
			if err := os.Truncate(path, 0); err != nil {
				t.Fatal(err)
			}
			appendTo(t, path, "new 1\n")
		}},
		{"truncation to a shorter content", func(t *testing.T, path string) {
			writeFile(t, path, "new 1\n") // O_TRUNC, then the write
		}},
		{"replacement by rename", func(t *testing.T, path string) {
			tmp := path + ".tmp"
			writeFile(t, tmp, "new 1\n")
			if err := os.Rename(tmp, path); err != nil {
				t.Fatal(err)
			}
		}},
		{"removal then a new file", func(t *testing.T, path string) {
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
			time.Sleep(50 * time.Millisecond) // let the removal be seen alone
			writeFile(t, path, "new 1\n")
		}},
		{"rotation to another name", func(t *testing.T, path string) {
			if err := os.Rename(path, path+".1"); err != nil {
				t.Fatal(err)
			}
			writeFile(t, path, "new 1\n")
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "flower.log")
			writeFile(t, path, "old 1\nold 2\n")
			c := follow(t, path)
			c.waitFor(t, []string{"old 1", "old 2"}, 5*time.Second)
			tt.change(t, path)
			c.waitFor(t, []string{"old 1", "old 2", "new 1"}, second)
			appendTo(t, path, "new 2\n")
			c.waitFor(t, []string{"old 1", "old 2", "new 1", "new 2"}, second)
		})
	}
}

func TestFollowWaitsForMissingFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "flower.log")
	c := follow(t, path)
	time.Sleep(100 * time.Millisecond)
	appendTo(t, path, "first\n")
	c.waitFor(t, []string{"first"}, second)
}

func TestFollowIgnoresOtherFilesInTheDirectory(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "flower.log")
	writeFile(t, path, "a\n")
	c := follow(t, path)
	c.waitFor(t, []string{"a"}, 5*time.Second)
	writeFile(t, filepath.Join(dir, "manifest.json"), "{}\nnot a log line\n")
	appendTo(t, path, "b\n")
	c.waitFor(t, []string{"a", "b"}, second)
}

func TestFollowReturnsTheLineError(t *testing.T) {
	path := filepath.Join(t.TempDir(), "flower.log")
	writeFile(t, path, "a\nb\nc\n")
	stop := errors.New("reader gone")
	var seen []string
	err := Follow(context.Background(), path, Options{}, func(l []byte) error {
		seen = append(seen, string(l))
		if len(seen) == 2 {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) {
		t.Fatalf("Follow = %v, want %v", err, stop)
	}
	if want := []string{"a", "b"}; !reflect.DeepEqual(seen, want) {
		t.Errorf("lines = %q, want %q", seen, want)
	}
}

func TestFollowReadsLongLines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "flower.log")
	long := strings.Repeat("x", 300<<10) // several read buffers
	writeFile(t, path, long+"\nshort\n")
	c := follow(t, path)
	c.waitFor(t, []string{long, "short"}, 5*time.Second)
}

// The follower's own steps, without a watcher or a timer: what one look at
// the file does after each kind of change.
func TestFollowerCheck(t *testing.T) {
	tests := []struct {
		name  string
		start string
		// change is applied after the first look; want is every line
		// passed on after the second.
		change func(t *testing.T, path string)
		want   []string
	}{
		{"append", "a\n", func(t *testing.T, p string) { appendTo(t, p, "b\n") }, []string{"a", "b"}},
		{"nothing new", "a\n", func(*testing.T, string) {}, []string{"a"}},
		{"partial completed", "a\nb", func(t *testing.T, p string) { appendTo(t, p, "c\n") }, []string{"a", "bc"}},
		{"partial ended by truncation", "a\nb", func(t *testing.T, p string) { writeFile(t, p, "z\n") }, []string{"a", "b", "z"}},
		{"truncated to nothing", "a\nb\n", func(t *testing.T, p string) { writeFile(t, p, "") }, []string{"a", "b"}},
		{"partial ended by replacement", "a\nb", func(t *testing.T, p string) {
			writeFile(t, p+".new", "z\n")
			if err := os.Rename(p+".new", p); err != nil {
				t.Fatal(err)
			}
		}, []string{"a", "b", "z"}},
		{"removed: the old file stays open", "a\n", func(t *testing.T, p string) {
			f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if err := os.Remove(p); err != nil {
				t.Fatal(err)
			}
			if _, err := f.WriteString("late\n"); err != nil {
				t.Fatal(err)
			}
		}, []string{"a", "late"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "flower.log")
			writeFile(t, path, tt.start)
			c := &collector{}
			f := &follower{path: path, line: c.add, buf: make([]byte, 4)} // tiny: lines span reads
			defer f.close()
			if err := f.check(); err != nil {
				t.Fatal(err)
			}
			tt.change(t, path)
			if err := f.check(); err != nil {
				t.Fatal(err)
			}
			if got := c.snapshot(); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("lines = %q, want %q", got, tt.want)
			}
		})
	}
}

// A line over the bound is never held: it is counted to its newline and
// stands as one note; the lines around it come through whole.
func TestFollowerLineCap(t *testing.T) {
	path := filepath.Join(t.TempDir(), "flower.log")
	writeFile(t, path, "short\n"+strings.Repeat("x", 30)+"\nafter\n")
	c := &collector{}
	f := &follower{path: path, line: c.add, buf: make([]byte, 4), max: 10}
	defer f.close()
	if err := f.check(); err != nil {
		t.Fatal(err)
	}
	want := []string{"short", "(a line of 30 bytes, over the cap of 10, skipped)", "after"}
	if got := c.snapshot(); !reflect.DeepEqual(got, want) {
		t.Errorf("lines = %q, want %q", got, want)
	}
	if cap(f.partial) > 16 {
		t.Errorf("held %d bytes of the long line", cap(f.partial))
	}
}

// A Skipped that gives nil drops the long line without a stand-in.
func TestFollowerLineCapWithoutNote(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.jsonl")
	writeFile(t, path, "short\n"+strings.Repeat("x", 30)+"\nafter\n")
	c := &collector{}
	var skipped []int
	f := &follower{path: path, line: c.add, buf: make([]byte, 4), max: 10,
		skipped: func(n int) []byte { skipped = append(skipped, n); return nil }}
	defer f.close()
	if err := f.check(); err != nil {
		t.Fatal(err)
	}
	if got, want := c.snapshot(), []string{"short", "after"}; !reflect.DeepEqual(got, want) {
		t.Errorf("lines = %q, want %q", got, want)
	}
	if !reflect.DeepEqual(skipped, []int{30}) {
		t.Errorf("skipped %v, want one line of 30 bytes", skipped)
	}
}

// When ctx is done Follow looks once more: lines written just before the
// end arrive even though no notification or poll came first.
func TestFollowLooksOnceMoreAtTheEnd(t *testing.T) {
	path := filepath.Join(t.TempDir(), "flower.log")
	writeFile(t, path, "a\n")
	c := &collector{}
	ctx, cancel := context.WithCancel(context.Background())
	started := make(chan struct{})
	var once sync.Once
	done := make(chan error, 1)
	go func() {
		done <- Follow(ctx, path, Options{Poll: time.Hour}, func(l []byte) error {
			once.Do(func() { close(started) })
			return c.add(l)
		})
	}()
	<-started
	// Written and cancelled at once: only the last look can see "b"
	// (a notification may too; either way it must arrive).
	appendTo(t, path, "b\n")
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Follow = %v, want nil", err)
	}
	if got, want := c.snapshot(), []string{"a", "b"}; !reflect.DeepEqual(got, want) {
		t.Errorf("lines = %q, want %q", got, want)
	}
}

// TestFollowLooksOnlyWhenTold: on a local file system the watch tells of
// every change, so nothing wakes Follow while the file stays as it is,
// however short its fallback interval; an appended line is still read.
func TestFollowLooksOnlyWhenTold(t *testing.T) {
	dir := t.TempDir()
	if !Notified(dir) {
		t.Skipf("%s is on a file system fsnotify may not tell of (Notified is false): the slow look is kept there", dir)
	}
	var mu sync.Mutex
	n := 0
	checked = func() {
		mu.Lock()
		n++
		mu.Unlock()
	}
	t.Cleanup(func() { checked = nil })
	path := filepath.Join(dir, "flower.log")
	writeFile(t, path, "one\n")
	c := &collector{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Follow(ctx, path, Options{Poll: time.Millisecond}, c.add) }()
	c.waitFor(t, []string{"one"}, 5*time.Second)
	time.Sleep(200 * time.Millisecond) // 200 looks, had the 1 ms timer run
	mu.Lock()
	idle := n
	mu.Unlock()
	appendTo(t, path, "two\n")
	c.waitFor(t, []string{"one", "two"}, second)
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if idle > 3 {
		t.Errorf("Follow looked at the file %d times while it stayed as it was: want no look but the first", idle)
	}
}

func TestNotifiedOnLocalFileSystems(t *testing.T) {
	if !Notified(t.TempDir()) && !Notified("/dev/shm") {
		t.Errorf("neither the temp dir nor /dev/shm counts as a local file system")
	}
	if Notified(filepath.Join(t.TempDir(), "missing")) {
		t.Errorf("a folder that cannot be asked counts as notified")
	}
}
