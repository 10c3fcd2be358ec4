package safefile

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// Check's walk by prefixes of path gives what the walk by filepath.Rel
// gives, for every pair of paths in a tree of folders, files, links,
// hard-linked files and FIFOs.
func TestCheckWalksAsRelDoes(t *testing.T) {
	root := t.TempDir()
	r := rand.New(rand.NewPCG(5, 6))
	var paths []string
	var grow func(dir string, depth int)
	grow = func(dir string, depth int) {
		for i := range 4 {
			p := filepath.Join(dir, fmt.Sprintf("n%d", i))
			paths = append(paths, p)
			switch k := r.IntN(6); {
			case k <= 1 && depth < 3:
				if err := os.Mkdir(p, 0o755); err != nil {
					t.Fatal(err)
				}
				grow(p, depth+1)
			case k == 2:
				_ = os.WriteFile(p, nil, 0o600)
				if r.IntN(2) == 0 {
					_ = os.Link(p, p+"-hard")
				}
			case k == 3:
				_ = os.Symlink(root, p)
			case k == 4:
				_ = syscall.Mkfifo(p, 0o600)
			}
		}
	}
	grow(root, 0)
	paths = append(paths, root, filepath.Dir(root), "/", root+"/n0/../n1", root+"//n2/")
	seen := 0
	for _, anchor := range paths {
		for _, p := range paths {
			for _, k := range []Kind{Dir, File} {
				got, want := fmt.Sprint((*Seen)(nil).Check(anchor, p, k)), fmt.Sprint((*Seen)(nil).checkRel(filepath.Clean(anchor), filepath.Clean(p), k))
				if got != want {
					t.Fatalf("Check(%s, %s, %v) = %s; the walk by Rel gives %s", anchor, p, k, got, want)
				}
				seen++
			}
		}
	}
	t.Logf("%d checks agree", seen)
}
