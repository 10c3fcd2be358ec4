package scriptedhttp

import (
	"net"
	"sync"
	"testing"
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
