package interactive

import (
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"
)

// person is the person's terminal in a test: Run gets the pty's slave end
// as its terminal; the test types into the master end and reads the screen
// from it.
type person struct {
	t      *testing.T
	master *os.File
	slave  *os.File

	mu     sync.Mutex
	screen strings.Builder
}

func newPerson(t *testing.T) *person {
	t.Helper()
	master, slave, err := pty.Open()
	if err != nil {
		t.Fatalf("open pty: %v", err)
	}
	if err := pty.Setsize(master, &pty.Winsize{Rows: 40, Cols: 120}); err != nil {
		t.Fatal(err)
	}
	p := &person{t: t, master: master, slave: slave}
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := master.Read(buf)
			p.mu.Lock()
			p.screen.Write(buf[:n])
			p.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() {
		slave.Close()
		master.Close()
	})
	return p
}

func (p *person) typeKeys(s string) {
	p.t.Helper()
	if _, err := p.master.WriteString(s); err != nil {
		p.t.Fatalf("type: %v", err)
	}
}

func (p *person) seen() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.screen.String()
}

// raw reports whether the terminal is in raw mode now.
func (p *person) raw() bool {
	p.t.Helper()
	tio, err := unix.IoctlGetTermios(int(p.slave.Fd()), ioctlGetTermios)
	if err != nil {
		p.t.Fatalf("termios: %v", err)
	}
	return tio.Lflag&(unix.ICANON|unix.ECHO) == 0
}

func (p *person) waitFor(what string, cond func() bool) {
	p.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			p.t.Fatalf("no %s within 30s; screen:\n%s", what, p.seen())
		}
		time.Sleep(20 * time.Millisecond)
	}
}
