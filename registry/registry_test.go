package registry

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/flowerhq/flower/event"
)

// TestMain: started with REGISTRY_CHILD set, the test binary registers in
// that directory, says so on stdout and waits to be killed.
func TestMain(m *testing.M) {
	if dir := os.Getenv("REGISTRY_CHILD"); dir != "" {
		h, err := Register(dir, Entry{Front: FrontHeadless, Workspace: "/w", Step: "child"}, time.Millisecond)
		if err != nil {
			os.Exit(3)
		}
		h.Event(event.Event{Kind: event.KindGeneration, Step: "child", Generation: 2})
		for h.Entry().Generation != 2 {
			time.Sleep(time.Millisecond)
		}
		time.Sleep(20 * time.Millisecond) // the loop writes it
		os.Stdout.WriteString("registered\n")
		select {}
	}
	os.Exit(m.Run())
}

func TestRegisterListClose(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ps")
	h, err := Register(dir, Entry{Front: FrontInteractive, Workspace: "/ws", Step: "a"}, time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("registry dir: %v %v", fi.Mode(), err)
	}
	if fi, err := os.Stat(filepath.Join(dir, fileName(os.Getpid(), 0))); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("entry file: %v", err)
	}
	h.Event(event.Event{Kind: event.KindHandoff, Phase: event.PhaseWriting, Step: "a", Generation: 3, Context: 150_000, Window: 200_000, At: 150_000, CostUSD: 1.5})
	deadline := time.Now().Add(10 * time.Second)
	var got []Entry
	for time.Now().Before(deadline) {
		if got, err = List(dir); err != nil {
			t.Fatal(err)
		}
		if len(got) == 1 && got[0].Status == StatusWriting {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	if len(got) != 1 || got[0].PID != os.Getpid() || got[0].Generation != 3 || got[0].Context != 150_000 || got[0].CostUSD != 1.5 || got[0].Front != FrontInteractive {
		t.Fatalf("list: %+v", got)
	}
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	if got, _ := List(dir); len(got) != 0 {
		t.Fatalf("after close: %+v", got)
	}
}

// A flower killed with -9 leaves its entry behind; the next List removes it.
func TestKilledEntryIsPruned(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ps")
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "REGISTRY_CHILD="+dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	if line, err := bufio.NewReader(out).ReadString('\n'); err != nil || line != "registered\n" {
		t.Fatalf("child: %q %v", line, err)
	}
	got, err := List(dir)
	if err != nil || len(got) != 1 || got[0].PID != cmd.Process.Pid || got[0].Generation != 2 {
		t.Fatalf("live child: %+v %v", got, err)
	}
	cmd.Process.Kill()
	cmd.Wait()
	if got, err := List(dir); err != nil || len(got) != 0 {
		t.Fatalf("killed child still listed: %+v %v", got, err)
	}
	if _, err := os.Stat(filepath.Join(dir, fileName(cmd.Process.Pid, 0))); !os.IsNotExist(err) {
		t.Errorf("the stale entry was not removed: %v", err)
	}
}

// Entries are untrusted: a link, a huge file, a pid reused by another
// process, garbage and strangers' files are never listed, and never crash
// the listing.
func TestUntrustedEntries(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ps")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	me := os.Getpid()
	start, err := procStart(me)
	if err != nil {
		t.Fatal(err)
	}
	write := func(name string, data []byte) {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	entry := func(pid int, start uint64) []byte {
		b, _ := json.Marshal(Entry{PID: pid, ProcStart: start, Step: "x"})
		return b
	}
	// This process, but started at another time: a reused pid.
	write(fileName(me, 0), entry(me, start+1))
	// pid 1 lives, but the file's name says another pid.
	write("1.json", entry(me, start))
	// Too large.
	write(strconv.Itoa(os.Getppid())+".json", []byte(`{"pid":`+strconv.Itoa(os.Getppid())+`,"step":"`+strings.Repeat("x", MaxEntrySize)+`"}`))
	write("notes.txt", []byte("hello"))
	write("007.json", entry(7, 0))
	target := filepath.Join(t.TempDir(), "real.json")
	if err := os.WriteFile(target, entry(me, start), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, filepath.Join(dir, "2.json")); err != nil {
		t.Fatal(err)
	}
	got, err := List(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 0 {
		t.Fatalf("listed %+v", got)
	}
	if _, err := os.Stat(filepath.Join(dir, fileName(me, 0))); !os.IsNotExist(err) {
		t.Error("the reused pid's entry was kept")
	}
	if _, err := os.Stat(target); err != nil {
		t.Error("the link's target was touched")
	}
	// A registry dir open to others is made private.
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	if _, err := List(dir); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(dir); fi.Mode().Perm() != 0o700 {
		t.Errorf("mode %v", fi.Mode().Perm())
	}
}

func TestDir(t *testing.T) {
	for _, tt := range []struct {
		env  []string
		want string
	}{
		{[]string{"HOME=/h", "XDG_RUNTIME_DIR=/run/user/5", EnvDir + "=/x/ps"}, "/x/ps"},
		{[]string{"HOME=/h", "XDG_RUNTIME_DIR=/run/user/5"}, "/run/user/5/flower/ps"},
		{[]string{"HOME=/h", "XDG_RUNTIME_DIR=relative"}, "/h/.cache/flower/ps"},
		{[]string{"HOME=/h", "XDG_CACHE_HOME=/c"}, "/c/flower/ps"},
	} {
		if got, err := Dir(tt.env); err != nil || got != tt.want {
			t.Errorf("Dir(%q) = %q, %v; want %q", tt.env, got, err, tt.want)
		}
	}
}

// A worker runs several generations at once: one entry per slot, each
// removed on its own.
func TestSlots(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ps")
	var hs []*Handle
	for slot := 1; slot <= 2; slot++ {
		h, err := Register(dir, Entry{Front: FrontWorker, Workspace: "/ws", Step: "s" + strconv.Itoa(slot), Slot: slot}, time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		hs = append(hs, h)
	}
	if got, err := List(dir); err != nil || len(got) != 2 || got[0].Slot != 1 || got[1].Slot != 2 {
		t.Fatalf("list: %+v %v", got, err)
	}
	hs[0].Close()
	if got, _ := List(dir); len(got) != 1 || got[0].Step != "s2" {
		t.Fatalf("after closing slot 1: %+v", got)
	}
	hs[1].Close()
	for _, name := range []string{"1-0.json", "1-x.json", "1--2.json", "-1.json", "01-2.json", "1-02.json"} {
		if _, _, ok := parseName(name); ok {
			t.Errorf("%s taken for an entry name", name)
		}
	}
	if pid, slot, ok := parseName("12-3.json"); !ok || pid != 12 || slot != 3 {
		t.Errorf("12-3.json: %d %d %v", pid, slot, ok)
	}
}

// The status follows the run: a wait for a rate limit, then work again
// once a main-thread response arrives.
func TestStatusFollowsEvents(t *testing.T) {
	h, err := Register(filepath.Join(t.TempDir(), "ps"), Entry{Step: "s"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	steps := []struct {
		ev   event.Event
		want string
	}{
		{event.Event{Kind: event.KindGeneration, Generation: 1}, StatusStarting},
		{event.Event{Kind: event.KindAPI, Phase: event.PhaseRetrying, Limit: "rate_limit"}, StatusLimit},
		{event.Event{Kind: event.KindRaw, Raw: []byte(`{"type":"assistant","parent_tool_use_id":"toolu_1","message":{}}`)}, StatusLimit}, // a subagent's
		{event.Event{Kind: event.KindRaw, Raw: []byte(`{"type":"assistant","parent_tool_use_id":null,"message":{}}`), Context: 1000}, StatusWorking},
		{event.Event{Kind: event.KindAPI, Phase: event.PhaseRetrying}, StatusAPIRetry},
		{event.Event{Kind: event.KindHandoff, Phase: event.PhaseNear}, StatusNear},
		{event.Event{Kind: event.KindHandoff, Phase: event.PhaseWriting}, StatusWriting},
		{event.Event{Kind: event.KindHandoff, Phase: event.PhaseDone, Context: 150_000}, StatusHandedOff},
		{event.Event{Kind: event.KindRetry}, StatusRetrying},
	}
	for i, s := range steps {
		h.Event(s.ev)
		if got := h.Entry().Status; got != s.want {
			t.Errorf("step %d: status %q, want %q", i, got, s.want)
		}
	}
	if e := h.Entry(); e.LastResponse.IsZero() || e.Context != 1000 || e.Generation != 1 {
		t.Errorf("entry %+v", e)
	}
}

// An entry's temporary name is made afresh: a hard link planted there to
// another file loses the name, and the file keeps its contents.
func TestEntryTempNotWrittenThrough(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ps")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	victim := filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(victim, []byte("victim"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(victim, filepath.Join(dir, fileName(os.Getpid(), 0)+".tmp")); err != nil {
		t.Fatal(err)
	}
	h, err := Register(dir, Entry{Front: FrontInteractive, Workspace: "/ws", Step: "a"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if got, err := List(dir); err != nil || len(got) != 1 {
		t.Fatalf("list: %+v, %v", got, err)
	}
	if b, _ := os.ReadFile(victim); string(b) != "victim" {
		t.Errorf("the victim was written through: %q", b)
	}
}
