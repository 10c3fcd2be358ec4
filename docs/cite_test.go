// Package docs holds flower's design document and checks what cites it.
package docs

import (
	"bufio"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// cited is a heading cited in a comment between «», perhaps over a line
// break.
var cited = regexp.MustCompile(`«([^»]+)»`)

// TestCommentsCiteHeadingsThatExist: every heading a Go comment in the
// tree cites between «» is a heading of docs/DESIGN.md, so a reader sent
// there finds it. A renamed or merged section shows here with every
// comment still pointing at its old name.
func TestCommentsCiteHeadingsThatExist(t *testing.T) {
	headings := designHeadings(t, "DESIGN.md")
	root := ".."
	var checked int
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "node_modules" || name == "vendor") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		for _, g := range f.Comments {
			for _, m := range cited.FindAllStringSubmatch(g.Text(), -1) {
				h := strings.Join(strings.Fields(m[1]), " ")
				checked++
				if !headings[h] {
					rel, _ := filepath.Rel(root, path)
					t.Errorf("%s: a comment cites «%s», which docs/DESIGN.md has no heading for", rel, h)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 100 {
		t.Fatalf("only %d citations found: the walk missed the tree", checked)
	}
}

// designHeadings are the headings of the Markdown file at path, as
// written after their #s.
func designHeadings(t *testing.T, path string) map[string]bool {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	heads := map[string]bool{}
	sc := bufio.NewScanner(f)
	fenced := false
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "```") {
			fenced = !fenced
			continue
		}
		if rest, ok := strings.CutPrefix(line, "#"); ok && !fenced {
			heads[strings.TrimSpace(strings.TrimLeft(rest, "#"))] = true
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(heads) < 20 {
		t.Fatalf("only %d headings in %s", len(heads), path)
	}
	return heads
}
