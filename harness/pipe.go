package harness

import (
	"errors"
	"io"
	"os"
	"sync"
	"syscall"
	"time"
)

// pipeReader is the read end of the harness's stdout, which knows when it
// has read the pipe dry: then every line the harness wrote before has been
// decoded and given to the queue (Drained), since the line reader asks for
// more bytes only once it holds no whole line. The read loop (read) is its
// only reader.
type pipeReader struct {
	f  *os.File
	rc syscall.RawConn // nil: the pipe cannot say it is dry

	mu sync.Mutex
	// closed: the reader reads no more.
	closed bool
	// pushed counts the records given to the queue; looks, the reads of
	// the pipe begun.
	pushed, looks int
	asked         []asked
}

// asked is one who asked (Drained): answered by a look begun after the
// ask that finds the pipe empty.
type asked struct {
	after int // the looks begun before the ask
	c     chan int
}

func newPipeReader(f *os.File) *pipeReader {
	r := &pipeReader{f: f}
	if rc, err := f.SyscallConn(); err == nil {
		r.rc = rc
	}
	return r
}

// Read reads what the pipe has, and answers who asked (Drained) each time
// it finds it empty. Drained wakes a reader that waits for the pipe with a
// read deadline passed, so that it looks again.
func (r *pipeReader) Read(b []byte) (int, error) {
	if r.rc == nil {
		return r.f.Read(b)
	}
	for {
		var n int
		var err error
		rerr := r.rc.Read(func(fd uintptr) bool {
			look := r.look()
			for {
				n, err = syscall.Read(int(fd), b)
				if err != syscall.EINTR {
					break
				}
			}
			if err == syscall.EAGAIN {
				r.dry(look)
				return false // wait until the pipe has more
			}
			return true
		})
		switch {
		case errors.Is(rerr, os.ErrDeadlineExceeded):
			_ = r.f.SetReadDeadline(time.Time{})
			continue // woken by Drained: look again
		case rerr != nil:
			return 0, rerr
		case err != nil:
			return 0, err
		case n == 0 && len(b) > 0:
			return 0, io.EOF
		}
		return n, nil
	}
}

// look counts a read of the pipe begun, and returns its number.
func (r *pipeReader) look() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.looks++
	return r.looks
}

// dry answers everyone who asked before look began: the pipe was empty
// after they asked, and all read is in the queue.
func (r *pipeReader) dry(look int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.answer(look)
}

// answer answers those who asked before look began.
func (r *pipeReader) answer(look int) {
	left := r.asked[:0]
	for _, a := range r.asked {
		if a.after < look {
			a.c <- r.pushed
		} else {
			left = append(left, a)
		}
	}
	clear(r.asked[len(left):])
	r.asked = left
}

// counted counts one record given to the queue.
func (r *pipeReader) counted() {
	r.mu.Lock()
	r.pushed++
	r.mu.Unlock()
}

// Close closes the pipe; the reader ends.
func (r *pipeReader) Close() error { return r.f.Close() }

// ended says the reader reads no more: everyone who asked, or asks, is
// answered at once, with every record there is.
func (r *pipeReader) ended() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closed = true
	r.answer(r.looks + 1)
}

// Drained returns a channel that receives, once every byte the harness
// wrote to stdout before the call has been read, how many records the
// reader had given to the queue by then: the records Events delivers up to
// that count include every one the harness wrote before the call. The
// reader answers when it next finds the pipe empty; one that waits for the
// pipe already is woken to look.
func (r *pipeReader) Drained() <-chan int {
	c := make(chan int, 1)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		c <- r.pushed
		return c
	}
	r.asked = append(r.asked, asked{after: r.looks, c: c})
	if r.rc != nil {
		_ = r.f.SetReadDeadline(time.Unix(1, 0))
	}
	return c
}
