package scriptedhttp

import (
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestNthStepsThenRepeatsTheLast(t *testing.T) {
	next := Nth([]string{"a", "b"})
	var got []string
	for range 4 {
		got = append(got, next())
	}
	if want := []string{"a", "b", "b", "b"}; len(got) != 4 || got[0] != want[0] || got[1] != want[1] || got[3] != want[3] {
		t.Fatalf("got %v, want %v", got, want)
	}
}

func TestNthIsSafeConcurrently(t *testing.T) {
	items := make([]int, 100)
	for i := range items {
		items[i] = i
	}
	next := Nth(items)
	seen := make([]bool, 100)
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range 100 {
		wg.Go(func() {
			v := next()
			mu.Lock()
			seen[v] = true
			mu.Unlock()
		})
	}
	wg.Wait()
	for i, s := range seen {
		if !s {
			t.Fatalf("item %d never handed out", i)
		}
	}
}

func TestListenIsLoopbackOnly(t *testing.T) {
	ln, err := Listen()
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if ip := ln.Addr().(*net.TCPAddr).IP; !ip.Equal(net.IPv4(127, 0, 0, 1)) {
		t.Fatalf("listens on %v", ip)
	}
}

func TestBookNumbersAndCopies(t *testing.T) {
	var b Book[string]
	for _, s := range []string{"a", "b"} {
		got := b.Add(func(seq int) string { return fmt.Sprint(s, seq) })
		if got != fmt.Sprint(s, len(b.Requests())) {
			t.Errorf("added %q", got)
		}
	}
	b.Update(1, func(r *string) { *r += "!" })
	reqs := b.Requests()
	reqs[0] = "changed"
	if got := b.Requests(); len(got) != 2 || got[0] != "a1!" || got[1] != "b2" {
		t.Errorf("requests %q", got)
	}
	b.NoteUnexpected("GET /x")
	if u := b.Unexpected(); len(u) != 1 || u[0] != "GET /x" {
		t.Errorf("unexpected %q", u)
	}
}

func TestServeOnLoopbackUntilClosed(t *testing.T) {
	s, url, err := Serve("test server", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		WriteJSON(w, http.StatusTeapot, map[string]bool{"ok": true})
	}))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(url, "http://127.0.0.1:") {
		t.Fatalf("url %q is not on loopback", url)
	}
	res, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusTeapot {
		t.Fatalf("status %d", res.StatusCode)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := http.Get(url); err == nil {
		t.Fatal("a closed server still answers")
	}
}

func TestRetryAfterRoundsUpToWholeSeconds(t *testing.T) {
	for d, want := range map[time.Duration]string{0: "", -time.Second: "", time.Millisecond: "1", 1500 * time.Millisecond: "2", 3 * time.Second: "3"} {
		if got := RetryAfter(d).Get("retry-after"); got != want {
			t.Errorf("RetryAfter(%v) = %q, want %q", d, got, want)
		}
	}
}
