package integration_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flowerhq/flower/envinject"
	"github.com/flowerhq/flower/integration/itest"
	"github.com/flowerhq/flower/scriptedresp"
)

// A Codex run is gated on the workspace's .codex/ as a Claude Code run is
// on .claude/. It leaves the person's $CODEX_HOME/config.toml byte for byte
// as it was, and grants the workspace no trust of Codex's: the MCP server
// of a workspace's .codex/config.toml does not start, while the model's
// commands still write in the workspace (the person's workspace-write,
// given per turn). Control: where the person's own config trusts the
// project, Codex starts that server, and the file is still left alone.
func TestCodexRunGrantsNoTrust(t *testing.T) {
	t.Parallel()
	bin := itest.CodexPath(t)
	for _, personTrusts := range []bool{false, true} {
		j := &codexJob{work: func(session, n int) scriptedresp.Reply {
			if n == 1 {
				return codexTool(30000, "echo wrote > made.txt")
			}
			return codexDone()
		}}
		api, err := scriptedresp.Start(j.reply)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = api.Close() })
		ws := t.TempDir()
		if err := os.Mkdir(filepath.Join(ws, ".git"), 0o755); err != nil {
			t.Fatal(err)
		}
		leak := filepath.Join(t.TempDir(), "mcp-ran")
		writeFile(t, filepath.Join(ws, ".codex", "config.toml"), "[mcp_servers.x]\ncommand = \"sh\"\nargs = [\"-c\", \"echo ran > "+leak+"; sleep 30\"]\n")
		env := codexEnv(t, api.URL, codexPersonConfig)
		config := filepath.Join(codexHomeOf(env), "config.toml")
		if personTrusts {
			real, err := filepath.EvalSymlinks(ws)
			if err != nil {
				t.Fatal(err)
			}
			f, err := os.OpenFile(config, os.O_APPEND|os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			_, _ = f.WriteString("\n[projects.\"" + real + "\"]\ntrust_level = \"trusted\"\n")
			_ = f.Close()
		}
		before, err := os.ReadFile(config)
		if err != nil {
			t.Fatal(err)
		}
		// The gate: .codex/ untrusted by the person in flower is refused
		// before anything starts; trusted, it runs.
		code, out := runFlowerCLI(t, env, "--harness", bin, "-C", ws, "TASK-MARK: write a file")
		if code != 2 || !strings.Contains(out, ".codex/config.toml (MCP servers") || len(api.Requests()) != 0 {
			t.Fatalf("person trusts %v: untrusted in flower: exit %d, %d requests; want 2 naming .codex/config.toml and none:\n%s", personTrusts, code, len(api.Requests()), out)
		}
		if code, out := runFlowerCLI(t, env, "trust", ws); code != 0 {
			t.Fatalf("flower trust: exit %d\n%s", code, out)
		}
		code, out = runFlowerCLI(t, env, "--harness", bin, "-C", ws, "TASK-MARK: write a file")
		if code != 0 {
			t.Fatalf("person trusts %v: flower exited %d:\n%s", personTrusts, code, out)
		}
		if after, err := os.ReadFile(config); err != nil || !bytes.Equal(before, after) {
			t.Errorf("person trusts %v: the person's config.toml changed (%v):\nbefore:\n%s\nafter:\n%s", personTrusts, err, before, after)
		}
		if b, err := os.ReadFile(filepath.Join(ws, "made.txt")); err != nil || string(b) != "wrote\n" {
			t.Errorf("person trusts %v: the model's command wrote %q (%v), want its file in the workspace", personTrusts, b, err)
		}
		// The server starts with the thread; give a started one its moment.
		ran := false
		for end := time.Now().Add(5 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			if _, err := os.Stat(leak); err == nil || !personTrusts || time.Now().After(end) {
				ran = err == nil
				break
			}
		}
		if ran != personTrusts {
			t.Errorf("person trusts %v: the workspace's MCP server ran: %v", personTrusts, ran)
		}
	}
}

// codexHomeOf is env's CODEX_HOME.
func codexHomeOf(env []string) string {
	v, _ := envinject.Lookup(env, "CODEX_HOME")
	return v
}
