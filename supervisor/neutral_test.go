package supervisor

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestEngineNamesNoHarness: the engine, and package front it speaks
// through, are harness-neutral (DESIGN.md
// «Fronts»). No file of the package outside its tests imports a package
// that knows a harness (its arguments, settings, environment or
// protocol), nor names a harness's variable or binary: a front readies and
// starts its own (front.Capabilities' Prepare), so a new harness is a new
// front and no change here.
func TestEngineNamesNoHarness(t *testing.T) {
	const mod = "github.com/flowerhq/flower/"
	known := []string{"harness", "levers", "envinject", "codex", "codexrpc", "interactive", "relay", "statusline", "gemini", "acp"}
	words := []string{"ANTHROPIC_", "CLAUDE_CODE", "OPENAI_", "CODEX_HOME", "--settings", "claude /login", "codex login",
		"GEMINI_", "GOOGLE_GEMINI", "--acp", "--skip-trust"}
	// The engine and the seam it speaks through: package front too.
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	seam, err := filepath.Glob("../front/*.go")
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, seam...)
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, im := range f.Imports {
			path, _ := strconv.Unquote(im.Path.Value)
			for _, k := range known {
				if path == mod+k {
					t.Errorf("%s imports %s, which knows a harness", name, path)
				}
			}
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range words {
			if strings.Contains(string(src), w) {
				t.Errorf("%s names %q, a harness's own", name, w)
			}
		}
	}
}
