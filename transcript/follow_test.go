package transcript

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestConfigDir(t *testing.T) {
	tests := []struct {
		env  []string
		want string
	}{
		{[]string{"HOME=/h"}, "/h/.claude"},
		{[]string{"HOME=/h", "CLAUDE_CONFIG_DIR=/c"}, "/c"},
		{[]string{"CLAUDE_CONFIG_DIR=/c", "HOME=/h"}, "/c"},
		{[]string{"HOME=/a", "HOME=/b"}, "/b/.claude"}, // the last entry wins, as in a child's environment
		{[]string{"PATH=/bin"}, ""},
	}
	for _, tt := range tests {
		if got := ConfigDir(tt.env); got != tt.want {
			t.Errorf("ConfigDir(%q) = %q, want %q", tt.env, got, tt.want)
		}
	}
}

func TestSlug(t *testing.T) {
	tests := []struct{ cwd, want string }{
		{"/tmp/explore/ws", "-tmp-explore-ws"},             // observed
		{"/tmp/explore/my.dir_x", "-tmp-explore-my-dir-x"}, // observed
		{"/home/a b/中文", "-home-a-b-------"},               // every byte of a non-ASCII rune
	}
	for _, tt := range tests {
		if got := Slug(tt.cwd); got != tt.want {
			t.Errorf("Slug(%q) = %q, want %q", tt.cwd, got, tt.want)
		}
	}
	if got, want := FilePath("/h/.claude", "/w", "s-1"), "/h/.claude/projects/-w/s-1.jsonl"; got != want {
		t.Errorf("FilePath = %q, want %q", got, want)
	}
}

// collect reads n events from f or fails after a while.
func collect(t *testing.T, f *Follower, n int) []Event {
	t.Helper()
	var got []Event
	deadline := time.After(10 * time.Second)
	for len(got) < n {
		select {
		case ev, ok := <-f.Events():
			if !ok {
				t.Fatalf("events closed after %d of %d", len(got), n)
			}
			got = append(got, ev)
		case <-deadline:
			t.Fatalf("got %d of %d events", len(got), n)
		}
	}
	return got
}

func appendFile(t *testing.T, path, s string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(s); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestFollowFileAndFolderAppearLater(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "projects", "-w")
	path := filepath.Join(dir, "s.jsonl")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// A slow poll: seeing the lines quickly needs the watcher once the
	// folder exists.
	f, err := Follow(ctx, path, FollowOptions{Poll: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	appendFile(t, path, `{"type":"user","sessionId":"s-9","message":{"role":"user","content":"hi"}}`+"\n")
	// Half a line, then the rest: the reader must not deliver the half.
	half := `{"type":"system","subtype":"turn_duration","sessionId":"s-9"}`
	appendFile(t, path, half[:20])
	time.Sleep(150 * time.Millisecond)
	appendFile(t, path, half[20:]+"\n")
	got := collect(t, f, 2)
	if got[0].Kind != KindUser || got[0].SessionID != "s-9" {
		t.Errorf("first: %+v", got[0])
	}
	if got[1].Kind != KindSystem || got[1].Subtype != "turn_duration" {
		t.Errorf("second: %+v", got[1])
	}
	if !bytes.Equal(got[1].Raw, []byte(half)) {
		t.Errorf("raw %q", got[1].Raw)
	}
	cancel()
	for range f.Events() {
	}
	if err := f.Err(); err != context.Canceled {
		t.Errorf("Err = %v, want context.Canceled", err)
	}
}

func TestFollowSkipsGarbageAndLongLines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.jsonl")
	long := `{"type":"user","pad":"` + strings.Repeat("x", 200) + `"}`
	appendFile(t, path, "garbage\n\n"+long+"\n"+`{"type":"mode"}`+"\n"+strings.Repeat("y", 300))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f, err := Follow(ctx, path, FollowOptions{MaxLine: 100, Poll: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	// The unterminated 300-byte tail is over the limit too; the line that
	// ends it is dropped with it, the next one is read.
	appendFile(t, path, "yyy\n"+`{"type":"last-prompt"}`+"\n")
	got := collect(t, f, 2)
	if got[0].Type != "mode" || got[1].Type != "last-prompt" {
		t.Errorf("got %q then %q", got[0].Type, got[1].Type)
	}
}

func TestFollowDeliversTheRestAfterCancel(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.jsonl")
	ctx, cancel := context.WithCancel(context.Background())
	f, err := Follow(ctx, path, FollowOptions{Poll: time.Hour}) // only the watcher or the final read can see lines
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for i := range 50 {
		l := `{"type":"mode","n":` + string(rune('0'+i%10)) + `}`
		want = append(want, l)
	}
	appendFile(t, path, strings.Join(want, "\n")+"\n")
	cancel() // as the harness exits: whatever is on disk must still arrive
	var got []string
	for ev := range f.Events() {
		got = append(got, string(ev.Raw))
	}
	if len(got) != len(want) {
		t.Fatalf("got %d lines after cancel, want %d", len(got), len(want))
	}
}

func TestFollowStartsOverWhenTheFileShrinks(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.jsonl")
	appendFile(t, path, `{"type":"mode","n":1}`+"\n"+`{"type":"mode","n":2}`+"\n")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f, err := Follow(ctx, path, FollowOptions{Poll: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	collect(t, f, 2)
	if err := os.WriteFile(path, []byte(`{"type":"x"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := collect(t, f, 1); got[0].Type != "x" {
		t.Errorf("after truncation got %q", got[0].Type)
	}
}

// TestContextOnInteractiveTranscript feeds lines the real harness 2.1.328
// wrote in an interactive session (a tool call running a subagent, a
// background-task turn, then an overflow), with the subagent's own reply
// spliced in as a sidechain line: the meter must follow the main thread
// only (DESIGN.md «Context meter»), and overflow must be recognisable.
func TestContextOnInteractiveTranscript(t *testing.T) {
	path := filepath.Join("testdata", "interactive-2.1.328.jsonl")
	ctx, cancel := context.WithCancel(context.Background())
	f, err := Follow(ctx, path, FollowOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var contexts []int
	var sessionID, lastMsg string
	var turnEnds, sidechains int
	var overflow, costLine bool
	const wantLines = 22
	for _, ev := range collect(t, f, wantLines) {
		if ev.SessionID != "" {
			sessionID = ev.SessionID
		}
		// The main thread's context moves with each of its API responses
		// (a response's repeated lines once), never with a subagent's or an
		// error reply of the harness's own.
		if ev.Kind == KindAssistant && ev.MainThread() && !ev.Synthetic() && ev.MessageID != lastMsg {
			lastMsg = ev.MessageID
			if c := ev.Usage.Context(); len(contexts) == 0 || contexts[len(contexts)-1] != c {
				contexts = append(contexts, c)
			}
		}
		switch {
		case ev.Kind == KindAssistant && ev.Sidechain:
			sidechains++
			if ev.MainThread() {
				t.Errorf("a sidechain line counts as main thread")
			}
		case ev.Kind == KindSystem && ev.Subtype == "turn_duration":
			turnEnds++
		case ev.Kind == KindAssistant && ev.Synthetic():
			overflow = ev.APIError && strings.Contains(ev.Text, "Prompt is too long")
		case ev.Type == "cost-state":
			costLine = true
		}
	}
	cancel()
	if want := []int{6100, 5000}; !equalInts(contexts, want) {
		t.Errorf("context moved through %v, want %v (the sidechain's 177000 must not count)", contexts, want)
	}
	if sessionID != "06dd8746-ded5-4101-af6d-316cbbf39253" {
		t.Errorf("session id %q", sessionID)
	}
	if sidechains != 1 || turnEnds != 2 || !overflow || !costLine {
		t.Errorf("sidechains %d, turn ends %d, overflow %v, cost line %v", sidechains, turnEnds, overflow, costLine)
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestFollowRefusesALink: the transcript's place is read as flower reads
// its own files (DESIGN.md «Territory»): a link planted there is not
// followed to what it names, and following stops with why.
func TestFollowRefusesALink(t *testing.T) {
	dir := t.TempDir()
	secret := filepath.Join(dir, "secret")
	appendFile(t, secret, `{"type":"user","sessionId":"stolen"}`+"\n")
	path := filepath.Join(dir, "s.jsonl")
	if err := os.Symlink(secret, path); err != nil {
		t.Fatal(err)
	}
	f, err := Follow(context.Background(), path, FollowOptions{Poll: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	for ev := range f.Events() {
		t.Errorf("read %q through a link", ev.Raw)
	}
	if err := f.Err(); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("Err = %v, want the link refused", err)
	}
}
