package codexrpc

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/flowerhq/flower/envinject"
)

// Codex makes the links its sandbox starts through (codex-linux-sandbox,
// apply_patch) in CODEX_HOME/tmp, and refuses to when CODEX_HOME lies
// under the temporary folder. With a system bubblewrap on PATH its sandbox
// then cannot start any command ("bwrap: execvp codex-linux-sandbox: No
// such file or directory", measured on 0.171.0); with only its bundled one
// it can. A CODEX_HOME under the temporary folder (doctor's, a test's) is
// therefore given a temporary folder of its own, CODEX_HOME/tmp, so the
// links are made (docs/DESIGN.md «Codex facts»).

// SandboxEnv is env with the temporary folder Codex's sandbox needs
// there (homeTemp), made: for every Codex process that runs the model's
// commands, the app-server and a screen connected to one (which runs them
// itself).
func SandboxEnv(env []string) ([]string, error) {
	t := homeTemp(env)
	if t == "" {
		return env, nil
	}
	if err := os.MkdirAll(strings.TrimPrefix(t, "TMPDIR="), 0o700); err != nil {
		return nil, fmt.Errorf("codex temporary folder: %w", err)
	}
	return append(env, t), nil
}

// homeTemp is the TMPDIR=… entry env needs for Codex's sandbox to start
// with env's CODEX_HOME (else HOME/.codex), or "" when that is not under
// env's temporary folder.
func homeTemp(env []string) string {
	home := value(env, "CODEX_HOME")
	if home == "" {
		if h := value(env, "HOME"); h != "" {
			home = filepath.Join(h, ".codex")
		}
	}
	tmp := value(env, "TMPDIR")
	if tmp == "" {
		tmp = "/tmp"
	}
	if home == "" || !filepath.IsAbs(home) || !within(resolved(home), resolved(tmp)) {
		return ""
	}
	return "TMPDIR=" + filepath.Join(home, "tmp")
}

// resolved is path with its links followed as far as they exist.
func resolved(path string) string {
	if p, err := filepath.EvalSymlinks(path); err == nil {
		return p
	}
	return filepath.Clean(path)
}

// within says whether path is dir or below it.
func within(path, dir string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}

// value is key's value in env ("" when unset).
func value(env []string, key string) string {
	v, _ := envinject.Lookup(env, key)
	return v
}
