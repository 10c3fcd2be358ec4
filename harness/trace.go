package harness

import (
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/tidwall/gjson"

	"github.com/flowerhq/flower/transcript"
)

// EnvTrace names a file flower appends one line to for every line it reads
// from a harness's stdout and writes to its stdin, stamped the moment it
// was read or written: what the e2e bench (cmd/e2ebench) times flower's
// own reactions by. Unset, nothing is traced and nothing is spent on it.
// A line says only the line's kind and size (and a reply's context and
// tool calls), never its text:
//
//	<unix ns> <pid> start
//	<unix ns> <pid> out <type> <subtype> <bytes> <context> <tool calls>
//	<unix ns> <pid> in <type> <subtype> <bytes>
const EnvTrace = "FLOWER_TRACE"

// trace is the open trace file, nil when tracing is off.
var trace = openTrace(os.Getenv(EnvTrace))

type tracer struct {
	mu sync.Mutex
	f  *os.File
}

func openTrace(path string) *tracer {
	if path == "" {
		return nil
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		fmt.Fprintf(os.Stderr, "flower: %s: %v\n", EnvTrace, err)
		return nil
	}
	return &tracer{f: f}
}

func (t *tracer) line(format string, args ...any) {
	t.mu.Lock()
	defer t.mu.Unlock()
	fmt.Fprintf(t.f, format+"\n", args...)
}

func (t *tracer) start(at time.Time, pid int) { t.line("%d %d start", at.UnixNano(), pid) }

func (t *tracer) out(at time.Time, pid int, ev *transcript.Event, size int) {
	t.line("%d %d out %s %s %d %d %d", at.UnixNano(), pid, orDash(ev.Type), orDash(ev.Subtype), size, ev.Usage.Context(), len(ev.ToolUses))
}

func (t *tracer) in(at time.Time, pid int, b []byte) {
	typ := gjson.GetBytes(b, "type").String()
	sub := gjson.GetBytes(b, "request.subtype").String()
	t.line("%d %d in %s %s %d", at.UnixNano(), pid, orDash(typ), orDash(sub), len(b))
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
