package docs

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// The pages a person reads: the README first, then the guide and the
// reference it sends them to.
var pages = []string{"../README.md", "guide.md", "reference.md"}

// mdLink is a Markdown link or image: its target, without a title.
var mdLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// designCite is a DESIGN.md section named in prose: the file's name (or a
// link to it), then the heading between guillemets.
var designCite = regexp.MustCompile(`DESIGN\.md(?:\]\([^)]*\))?\)?\s*«([^»]+)»`)

// TestReadmeIsShort: the README is read top to bottom in five minutes;
// the rest lives in the guide and the reference.
func TestReadmeIsShort(t *testing.T) {
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), "\n"); n >= 250 {
		t.Errorf("README.md has %d lines, want under 250: move the detail to docs/guide.md or docs/reference.md", n)
	}
	for _, want := range []string{"make demo", "make test", "flower stop", "flower continue", "--notify", "docs/guide.md", "docs/reference.md"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("README.md does not mention %s", want)
		}
	}
}

// TestLinksResolve: every relative link of the README, the guide and the
// reference names a file that exists and, with #anchor, a heading of it;
// every DESIGN.md section they name is a heading of it. A moved
// or renamed section shows here with every link still pointing at it.
func TestLinksResolve(t *testing.T) {
	design := designHeadings(t, "DESIGN.md")
	links, cites := 0, 0
	for _, page := range pages {
		b, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		text := withoutFences(string(b))
		for _, m := range mdLink.FindAllStringSubmatch(text, -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			links++
			file, anchor, _ := strings.Cut(target, "#")
			path := page
			if file != "" {
				path = filepath.Join(filepath.Dir(page), file)
			}
			if _, err := os.Stat(path); err != nil {
				t.Errorf("%s links to %s, which does not exist", page, target)
				continue
			}
			if anchor != "" && !anchors(t, path)[anchor] {
				t.Errorf("%s links to %s: %s has no heading with the anchor #%s", page, target, path, anchor)
			}
		}
		for _, m := range designCite.FindAllStringSubmatch(text, -1) {
			cites++
			if h := strings.Join(strings.Fields(m[1]), " "); !design[h] {
				t.Errorf("%s names DESIGN.md «%s», which has no such heading", page, h)
			}
		}
	}
	if links < 20 || cites < 5 {
		t.Fatalf("only %d relative links and %d DESIGN.md sections found in %v", links, cites, pages)
	}
}

// withoutFences is Markdown text without its fenced code blocks, whose
// brackets are code, not links.
func withoutFences(s string) string {
	var out []string
	fenced := false
	for _, l := range strings.Split(s, "\n") {
		if strings.HasPrefix(l, "```") {
			fenced = !fenced
			continue
		}
		if !fenced {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// anchors are the #anchors of the Markdown file at path's headings, as
// GitHub makes them: lower case, punctuation dropped, spaces as hyphens,
// a repeated one suffixed -1, -2 ….
func anchors(t *testing.T, path string) map[string]bool {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	seen := map[string]int{}
	for _, l := range strings.Split(withoutFences(string(b)), "\n") {
		rest, ok := strings.CutPrefix(l, "#")
		if !ok {
			continue
		}
		slug := slugOf(strings.TrimSpace(strings.TrimLeft(rest, "#")))
		if n := seen[slug]; n > 0 {
			out[slug+"-"+strconv.Itoa(n)] = true
		} else {
			out[slug] = true
		}
		seen[slug]++
	}
	return out
}

func slugOf(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}
