package scriptedapi

import (
	"net"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/flowerhq/flower/scriptedhttp"
)

// burst is more connections at once than the harness's count_tokens bursts
// (25 to 35) and the 128 that was long the kernel's default backlog.
const burst = 300

// dialAll opens n connections to addr at once, none of which the server
// accepts, and returns how many were established within limit. A
// connection the listen queue has no room for has its SYN dropped and
// waits out SYN retries (1 s, 3 s, 7 s …) that can only end in a timeout
// here, since nothing ever accepts.
func dialAll(t *testing.T, addr string, n int, limit time.Duration) int {
	t.Helper()
	var mu sync.Mutex
	var conns []net.Conn
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := net.DialTimeout("tcp", addr, limit)
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}()
	}
	wg.Wait()
	for _, c := range conns {
		c.Close()
	}
	return len(conns)
}

// The server's socket queues a burst of connections without a single SYN
// dropped, even before it accepts any: the listen backlog is not what
// limits the harness's parallel count_tokens calls.
func TestListenBacklog(t *testing.T) {
	ln, err := scriptedhttp.Listen()
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	// Nothing accepts: every connection must fit in the queue. The limit
	// is a hang guard, far beyond a handshake on loopback.
	if got := dialAll(t, ln.Addr().String(), burst, 20*time.Second); got != burst {
		t.Fatalf("%d of %d connections established with nobody accepting: the listen backlog is too short", got, burst)
	}
}

// The premise of TestListenBacklog: a socket with a short backlog does drop
// a burst's connections, so the test above can fail.
func TestListenBacklogPremise(t *testing.T) {
	if testing.Short() {
		t.Skip("waits out a SYN retry")
	}
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Listen(fd, 8); err != nil {
		t.Fatal(err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	addr := "127.0.0.1:" + strconv.Itoa(sa.(*syscall.SockaddrInet4).Port)
	if got := dialAll(t, addr, burst, 2*time.Second); got >= burst {
		t.Fatalf("all %d connections established on a backlog of 8: the test above proves nothing", got)
	}
}
