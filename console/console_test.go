package console

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flowerhq/flower/event"

	"github.com/flowerhq/flower/handoffwriter"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata (never status_example.txt)")

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs (go test -update rewrites it)\n--- got\n%s\n--- want\n%s", name, got, want)
	}
}

// The design's example handoff: the section texts of the status lines in
// DESIGN.md «Status lines».
var seedHandoff = handoffwriter.Handoff{
	Doing:    "在给 Makefile 加 macOS 垫片头,让 sigemptyset 宏不再展开成语法错误。",
	Decided:  "不改业务源码 —— 用户明确说过边界,所以走 Makefile 生成 shim 这条路。",
	Deadends: "-D_ANSI_SOURCE 会把别的宏一起关掉;改 include 顺序无效。",
	Next:     "在干净 clone 上跑一次 make 验证 shim 成立。",
	Scene:    "make: *** [shim.h] Error 1",
}

const seedPath = "~/proj/.flower/notes/交接-干活.md"

// seedEvents are the three handoff events behind the design's example.
func seedEvents() []event.Event {
	h := seedHandoff
	base := event.Event{Kind: event.KindHandoff, Step: "干活", Generation: 1, Window: 200_000, At: 150_000, WarnAt: 130_000}
	near, writing, done := base, base, base
	near.Phase, near.Context = event.PhaseNear, 130_000
	writing.Phase, writing.Context = event.PhaseWriting, 152_000
	done.Phase, done.Context, done.Path, done.Handoff, done.Reason = event.PhaseDone, 152_000, seedPath, &h, "threshold"
	done.Sections = h.Filled()
	return []event.Event{near, writing, done}
}

func render(lang Lang, evs []event.Event) []byte {
	var b bytes.Buffer
	s := NewStatus(&b, lang)
	for _, ev := range evs {
		s.Handle(ev)
	}
	return b.Bytes()
}

// TestStatusMatchesSeed holds the status lines to the design's example
// (DESIGN.md «Status lines»), byte for byte. testdata/status_example.txt is
// cut from the original design page; -update never touches it.
func TestStatusMatchesSeed(t *testing.T) {
	want, err := os.ReadFile(filepath.Join("testdata", "status_example.txt"))
	if err != nil {
		t.Fatal(err)
	}
	got := render(LangZh, seedEvents())
	if !bytes.Equal(got, want) {
		t.Errorf("status lines differ from the design's example\n--- got\n%s--- want\n%s", got, want)
	}
	if n := bytes.Count(got, []byte("\n")); n != 8 {
		t.Errorf("%d lines, the design's example shows 8", n)
	}
}

func TestStatusGolden(t *testing.T) {
	degraded := handoffwriter.Degraded("干活", "port the parser", "the writing turn failed")
	overflow := event.Event{Kind: event.KindHandoff, Phase: event.PhaseDone, Step: "干活", Generation: 3,
		Context: 201_345, Window: 200_000, At: 150_000, Reason: "overflow", Degraded: true, Handoff: &degraded}
	tests := []struct {
		name string
		evs  []event.Event
	}{
		{"handoff", seedEvents()},
		// Overflow: no writing turn ran, so the done event shows the writing
		// line itself; no workbench, so no path; empty sections show (空).
		{"overflow", []event.Event{overflow}},
		{"notices", []event.Event{
			{Kind: event.KindNotice, Text: "workbench unavailable (read-only); handoffs will reach the successor through its prompt only"},
			{Kind: event.KindRetry, Generation: 1, Text: "the harness exited before the turn ended"},
			{Kind: event.KindText, Text: "not a status line"},
			{Kind: event.KindTurn, Context: 5000},
		}},
	}
	for _, tt := range tests {
		for _, lang := range []Lang{LangZh, LangEn} {
			t.Run(tt.name+"/"+string(lang), func(t *testing.T) {
				golden(t, "status_"+tt.name+"_"+string(lang)+".golden", render(lang, tt.evs))
			})
		}
	}
}

// TestStatusEnglish checks the en labels line up and say what zh says.
func TestStatusEnglish(t *testing.T) {
	got := string(render(LangEn, seedEvents()))
	lines := strings.Split(strings.TrimSuffix(got, "\n"), "\n")
	if len(lines) != 8 {
		t.Fatalf("%d lines, want 8:\n%s", len(lines), got)
	}
	for _, zh := range []string{"上下文", "还有约", "写交接", "交接写在", "新会话", "现在在做", "已定的事", "走不通的", "下一步"} {
		if strings.Contains(got, zh) {
			t.Errorf("en status lines carry the Chinese label %q:\n%s", zh, got)
		}
	}
	// The section texts start in one column.
	col := -1
	for i, l := range lines[2:6] {
		text := []string{seedHandoff.Doing, seedHandoff.Decided, seedHandoff.Deadends, seedHandoff.Next}[i]
		at := strings.Index(l, text)
		if at < 0 {
			t.Fatalf("line %q lacks its section text", l)
		}
		if c := columns(l[:at]); col >= 0 && c != col {
			t.Errorf("section texts start at columns %d and %d:\n%s", col, c, got)
		} else {
			col = c
		}
	}
	for _, want := range []string{"130.0K/200K", "about 20K to handoff", "152.0K/200K", seedPath} {
		if !strings.Contains(got, want) {
			t.Errorf("en lines lack %q:\n%s", want, got)
		}
	}
}

func TestShortenHome(t *testing.T) {
	tests := []struct{ home, path, want string }{
		{"/home/a", "/home/a/proj/.flower/notes/交接-x.md", "~/proj/.flower/notes/交接-x.md"},
		{"/home/a/", "/home/a/p.md", "~/p.md"},
		{"/home/a", "/home/ab/p.md", "/home/ab/p.md"}, // a sibling, not under home
		{"", "/home/a/p.md", "/home/a/p.md"},
	}
	for _, tt := range tests {
		var b bytes.Buffer
		s := NewStatus(&b, LangEn)
		s.ShortenHome(tt.home)
		s.Handle(event.Event{Kind: event.KindHandoff, Phase: event.PhaseDone, Path: tt.path})
		if !strings.Contains(b.String(), " "+tt.want+"\n") {
			t.Errorf("home %q, path %q: want %q in\n%s", tt.home, tt.path, tt.want, b.String())
		}
	}
}

func TestFirstLine(t *testing.T) {
	tests := []struct{ in, want string }{
		{"-D_ANSI_SOURCE turns off other macros", "-D_ANSI_SOURCE turns off other macros"},
		{"- first\n- second", "first"},
		{"\n  * starred\n", "starred"},
		{"• bullet", "bullet"},
		{"-\n\nreal text", "real text"},
		{"", "(空)"},
		{"  \n - \n", "(空)"},
	}
	for _, tt := range tests {
		if got := firstLine(tt.in); got != tt.want {
			t.Errorf("firstLine(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestParseLang(t *testing.T) {
	for _, tt := range []struct {
		in    string
		want  Lang
		valid bool
	}{{"zh", LangZh, true}, {"en", LangEn, true}, {"", "", false}, {"EN", "", false}, {"ja", "", false}} {
		got, err := ParseLang(tt.in)
		if got != tt.want || (err == nil) != tt.valid {
			t.Errorf("ParseLang(%q) = %q, %v", tt.in, got, err)
		}
	}
}

// The labels' language follows the locale as POSIX orders it: LC_ALL, then
// LC_MESSAGES, then LANG; zh and zh_* are Chinese, the rest English.
func TestLocaleLang(t *testing.T) {
	for _, tt := range []struct {
		env  []string
		want Lang
	}{
		{nil, LangEn},
		{[]string{"LANG=zh_CN.UTF-8"}, LangZh},
		{[]string{"LANG=zh_TW.Big5"}, LangZh},
		{[]string{"LANG=zh"}, LangZh},
		{[]string{"LANG=C.UTF-8"}, LangEn},
		{[]string{"LANG=zhx_XX"}, LangEn},
		{[]string{"LANG=en_US.UTF-8", "LC_MESSAGES=zh_CN.UTF-8"}, LangZh},
		{[]string{"LANG=zh_CN.UTF-8", "LC_MESSAGES=en_GB.UTF-8"}, LangEn},
		{[]string{"LC_ALL=C", "LC_MESSAGES=zh_CN.UTF-8", "LANG=zh_CN.UTF-8"}, LangEn},
		{[]string{"LC_ALL=zh_CN.UTF-8", "LANG=en_US.UTF-8"}, LangZh},
		{[]string{"LC_ALL=", "LC_MESSAGES=", "LANG=zh_HK"}, LangZh}, // empty is unset
		{[]string{"LANG=en_US", "LANG=zh_CN"}, LangZh},              // the last one counts
	} {
		if got := LocaleLang(tt.env); got != tt.want {
			t.Errorf("LocaleLang(%q) = %s, want %s", tt.env, got, tt.want)
		}
	}
}

// Meter is the status lines' meter without its "# ", in each language;
// under zh exactly the design's.
func TestMeter(t *testing.T) {
	for _, tt := range []struct {
		lang                Lang
		context, window, at int
		want                string
	}{
		{LangZh, 130000, 200000, 150000, "上下文 130.0K/200K · 还有约 20K 到换代"},
		{LangZh, 152000, 200000, 150000, "上下文 152.0K/200K —— 写交接准备换代"},
		{LangEn, 130000, 200000, 150000, "context 130.0K/200K · about 20K to handoff"},
		{LangEn, 152000, 200000, 150000, "context 152.0K/200K —— writing the handoff"},
	} {
		lab := labelsOf(tt.lang)
		got := lab.meterNear(tt.context, tt.window, tt.at)
		if tt.context >= tt.at {
			got = lab.meterWriting(tt.context, tt.window)
		}
		if got != tt.want {
			t.Errorf("Meter(%s, %d, %d, %d) = %q, want %q", tt.lang, tt.context, tt.window, tt.at, got, tt.want)
		}
	}
}
