package levers

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestScrub: the harness's scrub is switched on where bubblewrap and socat
// are on the child's PATH, left off (and why said) where either is not,
// and the person's own value stands either way.
func TestScrub(t *testing.T) {
	bin := t.TempDir()
	tool := func(name string) {
		if err := os.WriteFile(filepath.Join(bin, name), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	env := []string{"PATH=" + bin, "ANTHROPIC_API_KEY=k"}
	if out, on, why := Scrub(env); on || !strings.Contains(why, "bwrap and socat") || len(out) != len(env) {
		t.Errorf("neither: %q %v %q", out, on, why)
	}
	tool("bwrap")
	if _, on, why := Scrub(env); on || !strings.Contains(why, "socat") || strings.Contains(why, "bwrap and") {
		t.Errorf("no socat: %v %q", on, why)
	}
	tool("socat")
	out, on, why := Scrub(env)
	if v, _ := lookup(out, ScrubKey); !on || why != "" || v != "1" {
		t.Errorf("both: %q %v %q", out, on, why)
	}
	if len(env) != 2 {
		t.Errorf("env was changed: %q", env)
	}
	if out, on, why := Scrub(append(env, ScrubKey+"=0")); on || !strings.Contains(why, ScrubKey+"=0") {
		t.Errorf("the person's 0: %q %v %q", out, on, why)
	} else if v, _ := lookup(out, ScrubKey); v != "0" {
		t.Errorf("the person's 0 was replaced: %q", v)
	}
	if _, on, _ := Scrub([]string{"PATH=/nonexistent", ScrubKey + "=true"}); !on {
		t.Errorf("the person's true: off")
	}

	// A bubblewrap that cannot start (no namespaces here): every tool
	// would fail under the scrub, so it stays off, and why is said.
	broken := t.TempDir()
	for name, body := range map[string]string{"bwrap": "#!/bin/sh\necho 'bwrap: No permissions to create new namespace' >&2\nexit 1\n", "socat": "#!/bin/sh\n"} {
		if err := os.WriteFile(filepath.Join(broken, name), []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if out, on, why := Scrub([]string{"PATH=" + broken}); on || !strings.Contains(why, "No permissions to create new namespace") {
		t.Errorf("a bubblewrap that fails: %q %v %q", out, on, why)
	}
}

// A permission mode the person chose is not forced back to default by a
// scrub flower switched on; their own ScrubKey still decides.
func TestScrubForKeepsAPermissionMode(t *testing.T) {
	env := []string{"PATH=/nonexistent"}
	for _, args := range [][]string{{"--permission-mode", "acceptEdits"}, {"--permission-mode=plan"}, {"-p", "--dangerously-skip-permissions"}} {
		out, on, why := ScrubFor(env, args)
		if on || len(out) != len(env) || !strings.Contains(why, "permission mode") {
			t.Errorf("ScrubFor(%q) = %q, %v, %q; want it left off, saying why", args, out, on, why)
		}
	}
	if _, on, _ := ScrubFor(append(env, ScrubKey+"=1"), []string{"--permission-mode", "acceptEdits"}); !on {
		t.Errorf("the person's own %s=1 was not kept", ScrubKey)
	}
	if _, _, why := ScrubFor(env, []string{"--", "--permission-mode"}); strings.Contains(why, "permission mode") {
		t.Errorf("an argument after -- counted as a flag: %q", why)
	}
}
