package interactive

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/flowerhq/flower/event"

	"github.com/flowerhq/flower/transcript"
)

func TestPasteChunks(t *testing.T) {
	long := strings.Repeat("x", 1500)
	tests := []struct {
		name  string
		in    string
		clean string // the text the pieces must add up to
		n     int    // pieces
	}{
		{"short", "hello", "hello", 1},
		{"two newlines fit", "a\nb\nc", "a\nb\nc", 1},
		{"a third newline starts a piece", "a\nb\nc\nd", "a\nb\nc\nd", 2},
		{"long line", long, long, 3},
		{"crlf", "a\r\nb\rc", "a\nb\nc", 1},
		{"control characters dropped", "a\x1b[201~b\x03c\td", "a[201~bc\td", 1},
		{"cjk", strings.Repeat("交接", 400), strings.Repeat("交接", 400), 2},
		{"astral counts double", strings.Repeat("😀", 400), strings.Repeat("😀", 400), 2},
		{"empty", "", "", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := PasteChunks(tt.in)
			if len(got) != tt.n {
				t.Errorf("%d pieces, want %d", len(got), tt.n)
			}
			if strings.Join(got, "") != tt.clean {
				t.Errorf("pieces add up to %q", strings.Join(got, ""))
			}
			for _, p := range got {
				units := 0
				for _, r := range p {
					units++
					if r > 0xffff {
						units++
					}
				}
				if strings.Count(p, "\n") > maxPasteNewlines || units > maxPasteUnits || !utf8.ValidString(p) {
					t.Errorf("piece over the limits: %d newlines, %d units", strings.Count(p, "\n"), units)
				}
			}
		})
	}
}

func TestTypistSubmit(t *testing.T) {
	var got bytes.Buffer
	ty := Typist{Type: func(p []byte) error { got.Write(p); return nil }}
	if err := ty.Submit(context.Background(), "a\nb\nc\nd"); err != nil {
		t.Fatal(err)
	}
	if want := "\x1b[200~a\nb\nc\x1b[201~\x1b[200~\nd\x1b[201~\r"; got.String() != want {
		t.Errorf("typed %q, want %q", got.String(), want)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := (Typist{Type: ty.Type, Gap: time.Hour}).Submit(ctx, "x"); !errors.Is(err, context.Canceled) {
		t.Errorf("a cancelled Submit returned %v", err)
	}
}

// TestScreenTitleWaitsForASafePoint: the title never lands inside one of
// the harness's escape sequences or characters.
func TestScreenTitleWaitsForASafePoint(t *testing.T) {
	title := TitleSequence("T")
	tests := []struct {
		name   string
		before string // output before SetTitle
		after  string // output after it
		want   string // the screen
	}{
		{"at ground: at once", "abc", "def", "abc" + title + "def"},
		{"inside a CSI", "a\x1b[3", "1mb", "a\x1b[31m" + title + "b"},
		{"after a lone ESC", "a\x1b", "7b", "a\x1b7" + title + "b"},
		{"inside an OSC (BEL)", "\x1b]0;harness", " title\x07x", "\x1b]0;harness title\x07" + title + "x"},
		{"inside an OSC (ST)", "\x1b]0;t\x1b", "\\x", "\x1b]0;t\x1b\\" + title + "x"},
		{"inside a character", "a\xe4\xba", "\xa4b", "a交" + title + "b"},
		{"charset designation", "\x1b(", "Bz", "\x1b(B" + title + "z"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			s := NewScreen(&out)
			s.Write([]byte(tt.before))
			s.SetTitle("T")
			s.Write([]byte(tt.after))
			if got := out.String(); got != tt.want {
				t.Errorf("screen %q, want %q", got, tt.want)
			}
		})
	}
}

func TestTitleSequenceDropsControls(t *testing.T) {
	if got := TitleSequence("a\x07b\x1bc\nd"); got != "\x1b]2;abcd\x07" {
		t.Errorf("got %q", got)
	}
}

func TestTitleFromLines(t *testing.T) {
	tests := []struct{ lines, want string }{
		{"# 上下文 130.0K/200K · 还有约 20K 到换代\n", "flower · 上下文 130.0K/200K · 还有约 20K 到换代"},
		{"<- 交接写在 x\n<- more\n", "flower · 交接写在 x"},
		{"", ""},
	}
	for _, tt := range tests {
		if got := TitleFromLines(tt.lines); got != tt.want {
			t.Errorf("TitleFromLines(%q) = %q, want %q", tt.lines, got, tt.want)
		}
	}
	near := event.Event{Kind: event.KindHandoff, Phase: event.PhaseNear, Context: 130_000, Window: 200_000, At: 150_000}
	if got := (PlainRenderer{}).Title(near); got != "flower · context 130.0K/200K · about 20K to handoff" {
		t.Errorf("plain near title %q", got)
	}
	if got := (PlainRenderer{}).Lines(event.Event{Kind: event.KindText, Text: "x"}); got != "" {
		t.Errorf("text events have no status lines, got %q", got)
	}
}

func TestLocator(t *testing.T) {
	conf := t.TempDir()
	cwd := "/work/space"
	write := func(path, s string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	l := locator{configDir: conf, cwd: cwd, pid: 42, since: time.Now().Add(-time.Minute), used: map[string]bool{}}
	if _, _, ok := l.find(); ok {
		t.Fatalf("found a transcript where there is none")
	}
	// No state file: the newest transcript of the folder, not one an
	// earlier generation used.
	old := transcript.FilePath(conf, cwd, "old")
	write(old, "{}\n")
	l.used[old] = true
	fresh := transcript.FilePath(conf, cwd, "fresh")
	write(fresh, "{}\n")
	if p, sid, ok := l.find(); !ok || p != fresh || sid != "" {
		t.Errorf("fallback found %q %q %v, want %q", p, sid, ok, fresh)
	}
	// The state file names the session: its file wins once it exists.
	write(filepath.Join(conf, "sessions", "42.json"), `{"pid":42,"sessionId":"s-1","status":"busy"}`)
	if _, sid, ok := l.find(); ok || sid != "s-1" {
		t.Errorf("before the session's transcript exists: sid %q ok %v", sid, ok)
	}
	// …wherever the harness put it.
	elsewhere := filepath.Join(conf, "projects", "-other-slug", "s-1.jsonl")
	write(elsewhere, "{}\n")
	if p, _, ok := l.find(); !ok || p != elsewhere {
		t.Errorf("found %q, want %q", p, elsewhere)
	}
	want := transcript.FilePath(conf, cwd, "s-1")
	write(want, "{}\n")
	if p, _, _ := l.find(); p != want {
		t.Errorf("found %q, want %q", p, want)
	}
	if st, err := readState(conf, 42); err != nil || st.Status != "busy" {
		t.Errorf("state %+v, %v", st, err)
	}
	write(filepath.Join(conf, "sessions", "43.json"), `{"pid":4`)
	if _, err := readState(conf, 43); err == nil {
		t.Errorf("a torn state file must be an error")
	}
}

func TestTerminal(t *testing.T) {
	p := newPerson(t)
	term, err := NewTerminal(p.slave, p.slave)
	if err != nil {
		t.Fatal(err)
	}
	if p.raw() || term.Raw() {
		t.Fatal("raw before MakeRaw")
	}
	if err := term.MakeRaw(); err != nil {
		t.Fatal(err)
	}
	if err := term.MakeRaw(); err != nil || !p.raw() {
		t.Fatalf("MakeRaw twice: %v, raw %v", err, p.raw())
	}
	for range 2 {
		if err := term.Restore(); err != nil {
			t.Fatal(err)
		}
	}
	if p.raw() {
		t.Fatal("still raw after Restore")
	}
	if ws := term.Size(); ws.Rows != 40 || ws.Cols != 120 {
		t.Errorf("size %dx%d, want 120x40", ws.Cols, ws.Rows)
	}
	if _, err := NewTerminal(nil, nil); !errors.Is(err, ErrNotTerminal) {
		t.Errorf("nil input: %v", err)
	}
}

func TestArgv(t *testing.T) {
	c := procConfig{Args: []string{"--allowedTools", "Bash"}, Prompt: "-starts with a dash"}
	if got := strings.Join(c.argv(), " "); got != "--allowedTools Bash -- -starts with a dash" {
		t.Errorf("argv %q", got)
	}
	c.Prompt = ""
	if got := strings.Join(c.argv(), " "); got != "--allowedTools Bash" {
		t.Errorf("argv without prompt %q", got)
	}
}

func TestTakeHandoffKeys(t *testing.T) {
	for _, c := range []struct {
		in, out string
		n       int
	}{
		{"abc", "abc", 0},
		{"a\x1cb", "ab", 1},
		{"\x1c\x1c", "", 2},
		{"x\x1b[92;5uy\x1b[27;5;92~z", "xyz", 2},
		{"\x1b[A\x03", "\x1b[A\x03", 0}, // the harness's own keys pass
	} {
		got, n := takeHandoffKeys([]byte(c.in))
		if string(got) != c.out || n != c.n {
			t.Errorf("takeHandoffKeys(%q) = %q, %d; want %q, %d", c.in, got, n, c.out, c.n)
		}
	}
}
