package main

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// Two generations in a trace: the reaction is the first reply over the
// threshold read → the interrupt written; the share is the writing turn's
// result read → the successor's first prompt written, past its warm-up's
// blank one.
func TestTraceFigures(t *testing.T) {
	trace := `1000000000 10 start
1000100000 10 in user - 91
1500000000 10 out assistant - 519 135000
1600000000 10 out assistant - 519 155000
1600700000 10 in control_request interrupt 85
1600300000 10 out assistant - 630 155000
1700000000 10 out result error_during_execution 2059 0
1700500000 10 in user - 2437
1800000000 20 start
1800100000 20 in user - 56
2500000000 10 out result success 2329 0
2500000000 20 out result success 1233 0
2503000000 20 in user - 1274
`
	got := traceOf(t, trace)
	if want := []time.Duration{700 * time.Microsecond}; !slices.Equal(got.reactions, want) {
		t.Errorf("reactions %v, want %v", got.reactions, want)
	}
	if want := []time.Duration{3 * time.Millisecond}; !slices.Equal(got.shares, want) {
		t.Errorf("shares %v, want %v", got.shares, want)
	}
}

// A queued cut: the reply over the threshold comes as its text's line,
// then its tool call's; flower writes the writing prompt at the second,
// and its reaction is timed from that line, not the first.
func TestTraceQueuedCutReaction(t *testing.T) {
	trace := `1000000000 10 start
1000100000 10 in user - 91
1500000000 10 out assistant - 519 135000 1
1600000000 10 out assistant - 519 155000 0
1602000000 10 out assistant - 630 155000 1
1602400000 10 in user - 2437
1640000000 10 out user - 300 0 0
1700000000 10 out result success 2059 0 0
1800000000 20 start
2503000000 20 in user - 1274
`
	got := traceOf(t, trace)
	if want := []time.Duration{400 * time.Microsecond}; !slices.Equal(got.reactions, want) {
		t.Errorf("reactions %v, want %v", got.reactions, want)
	}
}

// traceOf is what readTrace makes of a trace file holding text.
func traceOf(t *testing.T, text string) traced {
	t.Helper()
	path := filepath.Join(t.TempDir(), "trace")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := readTrace(path)
	if err != nil {
		t.Fatal(err)
	}
	return got
}
