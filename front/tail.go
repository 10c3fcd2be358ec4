package front

import (
	"bytes"
	"fmt"
	"log/slog"
	"strings"
	"sync"
)

// Tail is where a front sends its harness's stderr: each line is logged
// (as Msg, under "line"), and the last one is kept for why the harness
// ended or failed to start. Its methods are safe for concurrent use.
type Tail struct {
	Log *slog.Logger
	Msg string

	mu   sync.Mutex
	part []byte
	last string
}

// Write takes stderr's bytes; whole lines are logged.
func (t *Tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.part = append(t.part, p...)
	for {
		i := bytes.IndexByte(t.part, '\n')
		if i < 0 {
			break
		}
		if line := strings.TrimSpace(string(t.part[:i])); line != "" {
			t.last = Truncate(line, 300)
			if t.Log != nil {
				t.Log.Info(t.Msg, "line", t.last)
			}
		}
		t.part = t.part[i+1:]
	}
	return len(p), nil
}

// String is the last line.
func (t *Tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.last
}

// Wrap adds the last line to err.
func (t *Tail) Wrap(err error) error {
	if l := t.String(); l != "" {
		return fmt.Errorf("%w: %s", err, l)
	}
	return err
}

// Truncate is s cut to n bytes, with an ellipsis when cut.
func Truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
