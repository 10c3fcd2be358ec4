package workbench

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// Hostile and awkward step names, shared by the table test and the fuzz
// seed corpus.
var awkwardNames = []string{
	"../../etc/passwd",
	"a/b",
	"..",
	".",
	"",
	"///",
	"\x00\x01",
	strings.Repeat("a", 500),
	strings.Repeat("干", 500),
	strings.Repeat("a", 99) + "干干",
	"干活",
	`C:\x`,
	"  spaced   out  ",
	`a:b*c?d"e<f>g|h`,
	"\xff\xfe invalid",
	"-_.hidden._-",
	"naïve café",
	"हिन्दी",
	"🔥fire🔥",
	"step\nwith\nnewlines",
}

func TestSafeStepNameExamples(t *testing.T) {
	tests := []struct{ in, want string }{
		{"干活", "干活"},
		{"coder", "coder"},
		{"../../etc/passwd", "etc-passwd"},
		{"a/b", "a-b"},
		{"..", "step"},
		{".", "step"},
		{"", "step"},
		{"///", "step"},
		{"\x00\x01", "step"},
		{`C:\x`, "C-x"},
		{"  spaced   out  ", "spaced-out"},
		{"v1.2_final", "v1.2_final"},
		{"a--b", "a-b"},
		{"\xff\xfe invalid", "invalid"},
		{"naïve café", "naïve-café"},
		{"हिन्दी", "हिन्दी"},
		{"🔥fire🔥", "fire"},
	}
	for _, tt := range tests {
		if got := SafeStepName(tt.in); got != tt.want {
			t.Errorf("SafeStepName(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestSafeStepNameCaps(t *testing.T) {
	tests := []struct {
		in                   string
		wantRunes, wantBytes int
	}{
		{strings.Repeat("a", 500), MaxStepNameRunes, MaxStepNameRunes},
		// 3 bytes a rune: the byte cap binds first, 66 runes = 198 bytes.
		{strings.Repeat("干", 500), MaxStepNameBytes / 3, MaxStepNameBytes / 3 * 3},
		// The cut lands after a '-', which must then be trimmed.
		{strings.Repeat("a", 99) + "-bbbb", 99, 99},
	}
	for _, tt := range tests {
		got := SafeStepName(tt.in)
		if n := utf8.RuneCountInString(got); n != tt.wantRunes {
			t.Errorf("SafeStepName(%.20q…) has %d runes, want %d", tt.in, n, tt.wantRunes)
		}
		if len(got) != tt.wantBytes {
			t.Errorf("SafeStepName(%.20q…) has %d bytes, want %d", tt.in, len(got), tt.wantBytes)
		}
	}
}

// Every awkward name must yield a handoff path inside notes/ that can really
// be written, and archived, on this file system.
func TestAwkwardNamesStayInsideNotes(t *testing.T) {
	w, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	notes := filepath.Join(w.Dir, "notes")
	now := time.Date(2026, 11, 30, 11, 28, 53, 0, time.UTC)
	for _, name := range awkwardNames {
		p := w.HandoffPath(name)
		rel, err := filepath.Rel(notes, p)
		if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			t.Errorf("%q: path %s escapes %s", name, p, notes)
			continue
		}
		if strings.ContainsAny(rel, `/\`) {
			t.Errorf("%q: base name %q holds a separator", name, rel)
		}
		if len(rel) > 255 {
			t.Errorf("%q: base name is %d bytes", name, len(rel))
		}
		// Twice, so the second Freeze also writes an archive name.
		for _, doc := range []string{"one " + name, "two " + name} {
			got, err := w.Freeze(name, []byte(doc), now)
			if err != nil {
				t.Errorf("%q: freeze: %v", name, err)
				continue
			}
			if got != p {
				t.Errorf("%q: froze at %s, want %s", name, got, p)
			}
		}
		arch, err := w.Archive(name)
		if err != nil || len(arch) == 0 {
			t.Errorf("%q: archive = %v, %v; want at least one entry", name, arch, err)
		}
	}
}

func FuzzSafeStepName(f *testing.F) {
	for _, s := range awkwardNames {
		f.Add(s)
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, step string) {
		got := SafeStepName(step)
		switch {
		case got == "", got == ".", got == "..":
			t.Fatalf("SafeStepName(%q) = %q", step, got)
		case strings.ContainsAny(got, `/\`+"\x00"):
			t.Fatalf("SafeStepName(%q) = %q holds a separator or NUL", step, got)
		case !utf8.ValidString(got):
			t.Fatalf("SafeStepName(%q) = %q is not valid UTF-8", step, got)
		case len(got) > MaxStepNameBytes:
			t.Fatalf("SafeStepName(%q) is %d bytes", step, len(got))
		case utf8.RuneCountInString(got) > MaxStepNameRunes:
			t.Fatalf("SafeStepName(%q) is %d runes", step, utf8.RuneCountInString(got))
		}
		if again := SafeStepName(got); again != got {
			t.Fatalf("not idempotent: %q -> %q -> %q", step, got, again)
		}
		p := filepath.Join(dir, "交接-"+got+".md")
		if filepath.Dir(p) != dir {
			t.Fatalf("%q escapes %s", p, dir)
		}
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatalf("SafeStepName(%q) = %q: %v", step, got, err)
		}
		if err := os.Remove(p); err != nil {
			t.Fatal(err)
		}
	})
}
