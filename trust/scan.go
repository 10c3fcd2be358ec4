package trust

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"

	"github.com/flowerhq/flower/diskfile"
)

// SettingsFiles are the files of a workspace the harness reads as its
// project and local setting sources and that can run a command or set its
// environment (DESIGN.md «Trust store»), relative to the workspace.
var SettingsFiles = []string{
	".claude/settings.json",
	".claude/settings.local.json",
	".mcp.json",
}

// DefinitionDirs hold what a folder gives the harnesses besides settings:
// Claude Code's agents, skills, commands, output styles, workflows,
// routines, hook scripts and plugins (markdown whose front matter can
// declare hooks and allowed tools, and whose body can hold shell lines the
// harness runs when it is used), the Codex CLI's whole project folder
// (its config, with MCP servers and hooks, its skills) and the skills of
// .agents/, which Codex loads too, and the Gemini CLI's whole project
// folder (its settings, with hooks, MCP servers and tool commands, its
// .env, commands, agents and extensions). The harnesses load them, and
// Claude Code a project's .mcp.json, from every folder up to the git
// root, not only from the one they run in (see Folders).
var DefinitionDirs = []string{".claude/agents", ".claude/skills", ".claude/commands", ".claude/output-styles",
	".claude/workflows", ".claude/routines", ".claude/hooks", ".claude/plugins", ".codex", ".agents/skills", ".gemini"}

// ParentFiles are the files that a harness reads in the folders above the
// one it runs in, as well as there: Claude Code's .mcp.json (the rest of
// SettingsFiles it reads only where it runs), and Codex's
// AGENTS.override.md, the instructions that replace a folder's AGENTS.md.
// Codex loads the override and the skills whatever its own trust of the
// project says (measured on 0.171.0), so only the gate stands before them.
// And the Gemini CLI's .env, whose variables it loads into its own
// environment from the nearest folder that has one (its base URL and key
// among them).
var ParentFiles = []string{".mcp.json", "AGENTS.override.md", ".env"}

// WorkspaceFiles are the files read in the folder the harness runs in:
// SettingsFiles, Codex's override, and Gemini's .env.
var WorkspaceFiles = append(slices.Clone(SettingsFiles), "AGENTS.override.md", ".env")

// CodexOnly reports whether the scanned file rel is one only Codex reads
// (its .codex/ and .agents/ folders, AGENTS.override.md).
func CodexOnly(rel string) bool {
	parts := strings.Split(rel, "/")
	return slices.Contains(parts, ".codex") || slices.Contains(parts, ".agents") || parts[len(parts)-1] == "AGENTS.override.md"
}

// GeminiOnly reports whether the scanned file rel is one only the Gemini
// CLI reads (its .gemini/ folders, .env).
func GeminiOnly(rel string) bool {
	parts := strings.Split(rel, "/")
	return slices.Contains(parts, ".gemini") || parts[len(parts)-1] == ".env"
}

// maxDefinitions bounds how many files of DefinitionDirs are hashed; past
// it the workspace is untrusted until the person looks (a listing that
// long is no one's to vouch for unread).
const maxDefinitions = 2000

// File is one file of a workspace that can run a command or set the
// harness's environment, as it is now.
type File struct {
	Rel    string // relative to the workspace, slash-separated
	SHA256 string
	// Risks say what it can do, one short phrase each: "env
	// ANTHROPIC_BASE_URL", "hooks SessionStart", "MCP server x". Names
	// only, never a value.
	Risks []string
	// Commands are what it runs, masked (see Mask), for --show.
	Commands []string
}

// Folders are the folders whose files a harness run in ws reads: ws, then
// each folder above it up to the git root (the first that holds .git), or
// up to / where there is none; never the home folder or one above it,
// whose files are the person's own (home is "" when there is none).
func Folders(ws, home string) []string {
	ws = filepath.Clean(ws)
	if home != "" {
		home = filepath.Clean(home)
	}
	dirs := []string{ws}
	if hasGit(ws) {
		return dirs
	}
	for d := filepath.Dir(ws); ; d = filepath.Dir(d) {
		if home != "" && (d == home || isAbove(d, home)) {
			break
		}
		dirs = append(dirs, d)
		if hasGit(d) || d == filepath.Dir(d) {
			break
		}
	}
	return dirs
}

// hasGit: dir is a git work tree's root (.git is a folder, or a file of a
// worktree's).
func hasGit(dir string) bool {
	_, err := os.Lstat(filepath.Join(dir, ".git"))
	return err == nil
}

// isAbove reports whether home lies below dir.
func isAbove(dir, home string) bool {
	if dir == string(filepath.Separator) {
		return strings.HasPrefix(home, dir)
	}
	return strings.HasPrefix(home, dir+string(filepath.Separator))
}

// Scan finds the files that a harness run in ws reads and that can run a
// command or set its environment, in ws and the folders above it
// (Folders), and hashes them. A path is relative to ws ("../.mcp.json" for
// the parent's). A workspace with none gives none.
func Scan(ws string) ([]File, error) {
	home, _ := os.UserHomeDir()
	var out []File
	for i, dir := range Folders(ws, home) {
		names := ParentFiles
		if i == 0 {
			names = WorkspaceFiles
		}
		for _, name := range names {
			f, err := scanOne(ws, relTo(ws, dir, name))
			if errors.Is(err, fs.ErrNotExist) || errors.Is(err, errEmpty) {
				continue
			}
			if err != nil {
				return nil, err
			}
			out = append(out, f)
		}
		defs, err := scanDefinitions(ws, dir, maxDefinitions-len(out))
		if err != nil {
			return nil, err
		}
		out = append(out, defs...)
	}
	return out, nil
}

// relTo is name in dir, relative to ws and slash-separated.
func relTo(ws, dir, name string) string {
	rel, err := filepath.Rel(ws, filepath.Join(dir, filepath.FromSlash(name)))
	if err != nil {
		return filepath.ToSlash(filepath.Join(dir, name))
	}
	return filepath.ToSlash(rel)
}

// scanDefinitions hashes the files of dir's DefinitionDirs, at most room of
// them.
func scanDefinitions(ws, dir string, room int) ([]File, error) {
	var out []File
	for _, d := range DefinitionDirs {
		root := filepath.Join(dir, filepath.FromSlash(d))
		err := filepath.WalkDir(root, func(p string, e fs.DirEntry, err error) error {
			if err != nil {
				if errors.Is(err, fs.ErrNotExist) && p == root {
					return fs.SkipDir
				}
				return err
			}
			if e.IsDir() {
				return nil
			}
			if len(out) >= room {
				return fmt.Errorf("the folders %s reads hold more than %d files that can steer the harness (%s is one of them): look at them before flower runs the harness here", ws, maxDefinitions, root)
			}
			rel, _ := filepath.Rel(ws, p)
			f, err := scanOne(ws, filepath.ToSlash(rel))
			if errors.Is(err, errEmpty) {
				return nil
			}
			if err != nil {
				return err
			}
			out = append(out, f)
			return nil
		})
		if err != nil && !errors.Is(err, fs.SkipDir) {
			return nil, err
		}
	}
	return out, nil
}

// errEmpty: the file holds nothing but white space, so the harness reads
// nothing from it (an empty .mcp.json left in /tmp is no one's server).
var errEmpty = errors.New("empty")

// maxParse is how much of a file is parsed for --show and the refusal's
// risks; the whole file is hashed.
const maxParse = 1 << 20

// scanOne hashes the file rel of ws as the harness would read it: a link
// is followed (the harness follows it), a FIFO or device is never opened
// for reading (O_NONBLOCK, then only a regular file is read) and is
// recorded as what it is.
func scanOne(ws, rel string) (File, error) {
	p := filepath.Join(ws, filepath.FromSlash(rel))
	f := File{Rel: printable(rel)}
	fh, err := diskfile.Open(p, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			if _, lerr := os.Lstat(p); lerr == nil {
				// A dangling link: the harness reads nothing, but the
				// link itself is the repository's.
				target, _ := os.Readlink(p)
				f.SHA256 = Digest([]byte("link:" + target))
				f.Risks = []string{"a link to " + target}
				return f, nil
			}
		}
		return f, err
	}
	defer fh.Close()
	fi, err := fh.Stat()
	if err != nil {
		return f, err
	}
	if !fi.Mode().IsRegular() {
		f.SHA256 = Digest([]byte("kind:" + fi.Mode().Type().String()))
		f.Risks = []string{"not a regular file (" + fi.Mode().Type().String() + ")"}
		return f, nil
	}
	h := newHash()
	head, err := io.ReadAll(io.TeeReader(io.LimitReader(fh, maxParse), h))
	if err != nil {
		return f, err
	}
	if _, err := io.Copy(h, fh); err != nil {
		return f, err
	}
	f.SHA256 = h.hex()
	if len(bytes.TrimSpace(head)) == 0 && fi.Size() <= maxParse {
		return f, errEmpty
	}
	switch {
	case strings.HasSuffix(rel, ".json"):
		f.Risks, f.Commands = jsonRisks(head)
	case strings.HasSuffix(rel, ".toml"):
		f.Risks = tomlRisks(head)
	case path.Base(rel) == ".env":
		f.Risks = envRisks(head)
	default:
		f.Risks = definitionRisks(head)
	}
	for i, r := range f.Risks {
		f.Risks[i] = printable(r) // names from the repository's file
	}
	return f, nil
}

// commandKeys are the settings whose value is a command the harness runs
// (a string, or an object with a "command").
var commandKeys = []string{"apiKeyHelper", "awsAuthRefresh", "awsCredentialExport", "gcpAuthRefresh",
	"otelHeadersHelper", "statusLine", "subagentStatusLine", "fileSuggestion"}

// listKeys are settings whose entries start or allow something: their
// names are shown.
var listKeys = []string{"enabledPlugins", "extraKnownMarketplaces", "enabledMcpjsonServers"}

// jsonRisks reads a settings file's JSON for what it can do (risks, names
// only) and the commands it runs (masked). A file that is not valid JSON
// is a risk of its own.
func jsonRisks(b []byte) (risks, commands []string) {
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(b, &doc); err != nil {
		return []string{"not valid JSON (the harness may still read part of it)"}, nil
	}
	var f jsonFindings
	if names := keysOf(doc["env"]); len(names) > 0 {
		f.risks = append(f.risks, "env "+strings.Join(names, ","))
	}
	f.hooks(doc)
	f.commandSettings(doc)
	for _, k := range listKeys {
		if raw, ok := doc[k]; ok {
			f.risks = append(f.risks, k+" "+strings.Join(namesOf(raw), ","))
		}
	}
	if _, ok := doc["enableAllProjectMcpServers"]; ok {
		f.risks = append(f.risks, "enableAllProjectMcpServers")
	}
	f.permissions(doc)
	f.mcpServers(doc)
	return f.risks, f.commands
}

// jsonFindings is what jsonRisks has found so far, in the order it says
// them.
type jsonFindings struct{ risks, commands []string }

// hooks finds the hooks doc sets: their events, and each hook's command
// (or URL, or type). Hooks it cannot read are a risk too.
func (f *jsonFindings) hooks(doc map[string]json.RawMessage) {
	raw, ok := doc["hooks"]
	if !ok {
		return
	}
	var hooks map[string][]struct {
		Matcher string `json:"matcher"`
		Hooks   []struct {
			Type    string `json:"type"`
			Command string `json:"command"`
			URL     string `json:"url"`
		} `json:"hooks"`
	}
	_ = json.Unmarshal(raw, &hooks)
	events := sortedKeys(hooks)
	if len(events) == 0 {
		events = []string{"(unreadable)"}
	}
	f.risks = append(f.risks, "hooks "+strings.Join(events, ","))
	for _, ev := range events {
		for _, m := range hooks[ev] {
			for _, h := range m.Hooks {
				f.commands = append(f.commands, fmt.Sprintf("hook %s: %s", ev, Mask(firstNonEmpty(h.Command, h.URL, h.Type))))
			}
		}
	}
}

// commandSettings finds the settings of commandKeys doc sets, and their
// commands.
func (f *jsonFindings) commandSettings(doc map[string]json.RawMessage) {
	for _, k := range commandKeys {
		raw, ok := doc[k]
		if !ok {
			continue
		}
		f.risks = append(f.risks, k)
		var s string
		var o struct {
			Command string `json:"command"`
		}
		if json.Unmarshal(raw, &s) != nil && json.Unmarshal(raw, &o) == nil {
			s = o.Command
		}
		f.commands = append(f.commands, fmt.Sprintf("%s: %s", k, Mask(s)))
	}
}

// permissions finds the tools doc's permissions allow and the permission
// mode it sets.
func (f *jsonFindings) permissions(doc map[string]json.RawMessage) {
	var perms struct {
		Allow       []string `json:"allow"`
		DefaultMode string   `json:"defaultMode"`
	}
	raw, ok := doc["permissions"]
	if !ok || json.Unmarshal(raw, &perms) != nil {
		return
	}
	if len(perms.Allow) > 0 {
		f.risks = append(f.risks, "permissions.allow "+strings.Join(perms.Allow, ","))
	}
	if perms.DefaultMode != "" {
		f.risks = append(f.risks, "permissions.defaultMode "+perms.DefaultMode)
	}
}

// mcpServers finds the MCP servers doc declares, and what each runs (its
// command line, or its URL).
func (f *jsonFindings) mcpServers(doc map[string]json.RawMessage) {
	raw, ok := doc["mcpServers"]
	if !ok {
		return
	}
	var servers map[string]struct {
		Command string   `json:"command"`
		Args    []string `json:"args"`
		URL     string   `json:"url"`
	}
	_ = json.Unmarshal(raw, &servers)
	for _, name := range sortedKeys(servers) {
		sv := servers[name]
		f.risks = append(f.risks, "MCP server "+name)
		f.commands = append(f.commands, fmt.Sprintf("MCP server %s: %s", name, Mask(strings.TrimSpace(firstNonEmpty(sv.URL, sv.Command+" "+strings.Join(sv.Args, " "))))))
	}
}

// tomlKeys are the Codex settings that start a command, aim the model
// elsewhere or shape the tools' environment, by the table or key a line
// of a config.toml begins with.
var tomlKeys = []struct{ prefix, risk string }{
	{"mcp_servers", "MCP servers"}, {"hooks", "hooks"}, {"notify", "notify command"},
	{"model_provider", "the model endpoint"}, {"openai_base_url", "the model endpoint"},
	{"shell_environment_policy", "the tools' environment"}, {"sandbox", "the sandbox"},
	{"approval_policy", "approvals"}, {"profile", "profiles"}, {"features", "features"},
}

// tomlRisks names what a Codex config.toml can do, from the tables and
// keys its lines begin with (a line scan: no TOML parser is needed to
// name them, and the hash covers the whole file whatever is named).
func tomlRisks(b []byte) []string {
	var risks []string
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimLeft(strings.TrimSpace(line), "[")
		for _, k := range tomlKeys {
			if strings.HasPrefix(line, k.prefix) && !slices.Contains(risks, k.risk) {
				risks = append(risks, k.risk)
			}
		}
	}
	if len(risks) == 0 {
		risks = []string{"Codex settings"}
	}
	return risks
}

// definitionRisks names what an agent, skill or command file can do.
// envRisks names the variables a .env file sets, "env NAME" each.
func envRisks(b []byte) []string {
	var risks []string
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimPrefix(strings.TrimSpace(line), "export ")
		if k, _, ok := strings.Cut(line, "="); ok && k != "" && !strings.HasPrefix(k, "#") {
			risks = append(risks, "env "+strings.TrimSpace(k))
		}
	}
	if len(risks) == 0 {
		risks = []string{"an environment file"}
	}
	return risks
}

func definitionRisks(b []byte) []string {
	s := string(b)
	var risks []string
	for _, k := range []string{"hooks:", "allowed-tools:", "tools:"} {
		if strings.Contains(s, "\n"+k) {
			risks = append(risks, strings.TrimSuffix(k, ":"))
		}
	}
	if strings.Contains(s, "!`") {
		risks = append(risks, "shell lines (!`…`)")
	}
	if len(risks) == 0 {
		risks = []string{"instructions the harness loads"}
	}
	return risks
}

func keysOf(raw json.RawMessage) []string {
	var m map[string]json.RawMessage
	if len(raw) == 0 || json.Unmarshal(raw, &m) != nil {
		return nil
	}
	return sortedKeys(m)
}

// namesOf lists an object's keys or an array's strings.
func namesOf(raw json.RawMessage) []string {
	if k := keysOf(raw); k != nil {
		return k
	}
	var l []string
	_ = json.Unmarshal(raw, &l)
	return l
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func firstNonEmpty(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}
