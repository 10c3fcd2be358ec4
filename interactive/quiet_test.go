package interactive

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/flowerhq/flower/front"
)

// TestQuietPrompt: a long prompt of flower's is written to the run's
// prompts folder and replaced by one line that mentions it, never as its
// last word; a short one, the person's own words, one too long for the
// harness to attach whole, and one with no run dir are given as they are.
func TestQuietPrompt(t *testing.T) {
	run := t.TempDir()
	q := &promptFiles{}
	long := "<<tag>>\n" + strings.Repeat("a line of the request\n", 40)

	line := q.quiet(run, "干活 1", 2, front.TurnWriting, long, true, nil)
	path := filepath.Join(run, "prompts", "干活-1-2-writing-1.md")
	if !regexp.MustCompile(`^flower: [^\n"]+ @"`+regexp.QuoteMeta(path)+`"[^"\n]+$`).MatchString(line) || len(line) > 400 {
		t.Fatalf("line %q, want one short line with a mention of %s inside", line, path)
	}
	if data, err := os.ReadFile(path); err != nil || string(data) != long {
		t.Fatalf("prompt file: %v, %d bytes (want the prompt verbatim)", err, len(data))
	}
	if fi, err := os.Stat(filepath.Dir(path)); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("prompts folder: %v %v, want mode 0700", fi, err)
	}

	// A link planted where the next file goes is replaced, not written through.
	victim := filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(victim, []byte("keep"), 0o600); err != nil {
		t.Fatal(err)
	}
	next := filepath.Join(run, "prompts", "s-3-first-2.md")
	if err := os.Symlink(victim, next); err != nil {
		t.Fatal(err)
	}
	if line := q.quiet(run, "s", 3, front.TurnFirst, long, true, nil); !strings.Contains(line, `@"`+next+`"`) || !strings.Contains(line, "taking over") {
		t.Fatalf("first turn's line %q", line)
	}
	if b, _ := os.ReadFile(victim); string(b) != "keep" {
		t.Errorf("the linked file was written through: %q", b)
	}
	if fi, err := os.Lstat(next); err != nil || !fi.Mode().IsRegular() {
		t.Errorf("%s is not a regular file now: %v %v", next, fi, err)
	}

	// A prompts folder that is a link is refused: the prompt is typed.
	linked := t.TempDir()
	if err := os.Symlink(t.TempDir(), filepath.Join(linked, "prompts")); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, run, prompt string
		ours              bool
	}{
		{"short", run, "go on with the tests", true},
		{"the person's", run, long, false},
		{"too long", run, strings.Repeat("x", quietMaxBytes+1) + "\n", true},
		{"too many lines", run, strings.Repeat("\n", quietMaxLines), true},
		{"no run dir", "", long, true},
		{"a run dir a mention cannot quote", mkdir(t, `a"b`), long, true},
		{"a prompts folder that is a link", linked, long, true},
	} {
		if got := q.quiet(c.run, "s", 1, front.TurnWriting, c.prompt, c.ours, nil); got != c.prompt {
			t.Errorf("%s: got %.80q, want the prompt as it is", c.name, got)
		}
	}
}

func mkdir(t *testing.T, name string) string {
	dir := filepath.Join(t.TempDir(), name)
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	return dir
}
