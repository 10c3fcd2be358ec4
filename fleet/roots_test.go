package fleet

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A workspace is admitted when it is a root or below one once links are
// resolved, and then as the resolved path; anything else is refused with
// the workspace, where it leads, and the roots named.
func TestRootsAdmit(t *testing.T) {
	base := t.TempDir()
	root := filepath.Join(base, "root")
	outside := filepath.Join(base, "outside")
	for _, d := range []string{filepath.Join(root, "app", "sub"), outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.Symlink(outside, filepath.Join(root, "escape")))                   // a link in the root, out of it
	must(os.Symlink(filepath.Join(root, "app"), filepath.Join(outside, "in"))) // a link outside, into it
	must(os.Symlink(root, filepath.Join(base, "rootlink")))                    // the root given through a link

	roots, err := ResolveRoots([]string{filepath.Join(base, "rootlink")})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		ws, want, refused string
	}{
		{root, root, ""},
		{filepath.Join(root, "app", "sub"), filepath.Join(root, "app", "sub"), ""},
		{filepath.Join(root, "app", "..", "app"), filepath.Join(root, "app"), ""},
		{filepath.Join(outside, "in"), filepath.Join(root, "app"), ""},
		{outside, "", "is outside this worker's workspace roots (" + root + ")"},
		{filepath.Join(root, "escape"), "", "(it leads to " + outside + ")"},
		{filepath.Join(root, "..", "outside"), "", "is outside"},
		{base, "", "is outside"},
		{"relative/dir", "", "not an absolute path"},
	}
	for _, tt := range tests {
		got, err := roots.Admit(tt.ws)
		switch {
		case tt.refused == "" && (err != nil || got != tt.want):
			t.Errorf("Admit(%s) = %q, %v; want %q", tt.ws, got, err, tt.want)
		case tt.refused != "" && (err == nil || !strings.Contains(err.Error(), tt.refused) || !strings.Contains(err.Error(), tt.ws)):
			t.Errorf("Admit(%s) = %q, %v; want a refusal naming it and %q", tt.ws, got, err, tt.refused)
		}
	}
	if _, err := (Roots{}).Admit(root); err == nil {
		t.Errorf("no roots admitted %s", root)
	}
	everywhere, err := ResolveRoots([]string{"/"})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := everywhere.Admit(outside); err != nil || got != outside {
		t.Errorf("root / refused %s: %v", outside, err)
	}
}

func TestResolveRootsRefuses(t *testing.T) {
	file := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, dirs := range [][]string{nil, {file}, {filepath.Join(t.TempDir(), "missing")}} {
		if _, err := ResolveRoots(dirs); err == nil {
			t.Errorf("ResolveRoots(%q) accepted", dirs)
		}
	}
	if _, err := ResolveRoots(nil); err == nil || !strings.Contains(err.Error(), "--workspace-root") {
		t.Errorf("no roots: %v, want the flag named", err)
	}
}
