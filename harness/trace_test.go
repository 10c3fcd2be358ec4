package harness

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/flowerhq/flower/harness/harnesstest"
)

// With EnvTrace set, every line read and written is stamped, in the order
// it happened, with its kind and size and no text.
func TestTraceStampsLinesInOrder(t *testing.T) {
	path := filepath.Join(t.TempDir(), "trace")
	trace = openTrace(path)
	t.Cleanup(func() { trace.f.Close(); trace = nil })
	p := startFake(t, harnesstest.ModeStream, harnesstest.EnvContext+"=150000")
	if err := p.SendUser("secret words"); err != nil {
		t.Fatal(err)
	}
	untilResult(t, p)
	if err := p.Interrupt(); err != nil {
		t.Fatal(err)
	}
	if err := p.CloseInput(); err != nil {
		t.Fatal(err)
	}
	<-p.Done()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "secret") {
		t.Fatalf("the trace holds a line's text:\n%s", b)
	}
	var last int64
	var seen []string
	pid := strconv.Itoa(p.PID())
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.Fields(l)
		ns, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil || ns < last || f[1] != pid {
			t.Fatalf("line %q: not stamped in order for pid %s", l, pid)
		}
		last = ns
		seen = append(seen, strings.Join(f[2:], " "))
		if f[2] == "out" && f[3] == "assistant" && (len(f) != 8 || f[6] != "150000" || f[7] != "0") {
			t.Errorf("a reply's line %q does not say its context and its tool calls (none)", l)
		}
	}
	got := strings.Join(seen, " | ")
	for _, want := range []string{"start", "in user -", "out assistant", "out result", "in control_request interrupt"} {
		if !strings.Contains(got, want) {
			t.Errorf("no %q in the trace: %s", want, got)
		}
	}
	if i, j := strings.Index(got, "in user"), strings.Index(got, "out assistant"); i < 0 || j < i {
		t.Errorf("the prompt is not traced before the reply: %s", got)
	}
}
