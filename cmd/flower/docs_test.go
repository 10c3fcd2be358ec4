package main

import (
	"bytes"
	"context"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// referencePath is the reference a person looks flags and exit codes up in.
const referencePath = "../../docs/reference.md"

// helpText is flower's help for args (a command path, "" for flower).
func helpText(t *testing.T, args ...string) string {
	t.Helper()
	var out, errOut bytes.Buffer
	argv := append(append([]string{"flower"}, args...), "--help")
	if err := run(context.Background(), argv, strings.NewReader(""), &out, &errOut); err != nil {
		t.Fatalf("%v: %v\n%s", argv, err, errOut.String())
	}
	return out.String()
}

// helpBlock is the lines of help under heading (COMMANDS:, OPTIONS:) up to
// the next blank line.
func helpBlock(help, heading string) []string {
	_, rest, ok := strings.Cut(help, "\n"+heading+"\n")
	if !ok {
		return nil
	}
	block, _, _ := strings.Cut(rest, "\n\n")
	return strings.Split(block, "\n")
}

var longFlag = regexp.MustCompile(`--[a-z0-9][a-z0-9-]*`)

// helpFlags are the long flags help lists, --help aside (flower's own
// under GLOBAL OPTIONS).
func helpFlags(help string) []string {
	var out []string
	for _, l := range append(helpBlock(help, "OPTIONS:"), helpBlock(help, "GLOBAL OPTIONS:")...) {
		if f := longFlag.FindString(strings.TrimSpace(l)); f != "" && strings.HasPrefix(strings.TrimSpace(l), f) && f != "--help" {
			out = append(out, f)
		}
	}
	return out
}

// leafCommands are flower's commands as help lists them, a command with
// commands of its own replaced by them ("handoff now"); help's own "help"
// is left out.
func leafCommands(t *testing.T, path ...string) []string {
	t.Helper()
	var out []string
	for _, l := range helpBlock(helpText(t, path...), "COMMANDS:") {
		name := strings.TrimSuffix(strings.Fields(l)[0], ",")
		if name == "help" {
			continue
		}
		sub := append(slices.Clone(path), name)
		if helpBlock(helpText(t, sub...), "COMMANDS:") != nil {
			out = append(out, leafCommands(t, sub...)...)
			continue
		}
		out = append(out, strings.Join(sub, " "))
	}
	return out
}

// refSections are the reference's sections under "## Flags", by heading.
func refSections(t *testing.T, doc string) map[string]string {
	t.Helper()
	_, flags, ok := strings.Cut(doc, "\n## Flags\n")
	if !ok {
		t.Fatalf("%s has no ## Flags", referencePath)
	}
	if i := strings.Index(flags, "\n## "); i >= 0 {
		flags = flags[:i]
	}
	out := map[string]string{}
	for _, part := range strings.Split(flags, "\n### ")[1:] {
		head, body, _ := strings.Cut(part, "\n")
		out[head] = body
	}
	return out
}

var anchorLink = regexp.MustCompile(`\]\(#([a-z0-9-]+)\)`)

// refFlags are the flags a section's table lists (its rows' first cells),
// with those of the sections it links to.
func refFlags(sections map[string]string, head string, seen map[string]bool) []string {
	if seen[head] {
		return nil
	}
	seen[head] = true
	body := sections[head]
	var out []string
	for _, l := range strings.Split(body, "\n") {
		if cells := strings.Split(l, "|"); strings.HasPrefix(l, "| `") && len(cells) > 2 {
			if f := longFlag.FindString(cells[1]); f != "" {
				out = append(out, f)
			}
		}
	}
	for _, m := range anchorLink.FindAllStringSubmatch(body, -1) {
		for other := range sections {
			if strings.ReplaceAll(strings.ToLower(other), " ", "-") == m[1] {
				out = append(out, refFlags(sections, other, seen)...)
			}
		}
	}
	return out
}

// TestReferenceHasEveryCommandAndFlag: docs/reference.md has a section for
// every command flower's help lists, and each section lists exactly the
// flags that command's help does; its command list names every command
// and no other. A flag added, renamed or dropped in the code shows here.
func TestReferenceHasEveryCommandAndFlag(t *testing.T) {
	b, err := os.ReadFile(referencePath)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	sections := refSections(t, doc)
	commands := leafCommands(t)
	if len(commands) < 10 {
		t.Fatalf("only %d commands found in the help: %q", len(commands), commands)
	}
	for _, cmd := range commands {
		head := "flower " + cmd
		if _, ok := sections[head]; !ok {
			t.Errorf("%s has no section ### %s under ## Flags", referencePath, head)
			continue
		}
		compareFlags(t, head, helpFlags(helpText(t, strings.Fields(cmd)...)), refFlags(sections, head, map[string]bool{}))
	}
	compareFlags(t, "flower (no command)", helpFlags(helpText(t)), refFlags(sections, "flower", map[string]bool{}))
	for head := range sections {
		if cmd, ok := strings.CutPrefix(head, "flower "); ok && !slices.Contains(commands, cmd) {
			t.Errorf("%s has a section ### %s, but flower has no such command", referencePath, head)
		}
	}
	listed := commandList(t, doc)
	for _, cmd := range commands {
		if !listed[strings.Fields(cmd)[0]] {
			t.Errorf("the command list of %s does not name flower %s", referencePath, cmd)
		}
	}
	for name := range listed {
		if name == "help" && slices.ContainsFunc(helpBlock(helpText(t), "COMMANDS:"), func(l string) bool { return strings.Fields(l)[0] == "help," }) {
			continue // urfave/cli's own, with no flags of its own to list
		}
		if !slices.ContainsFunc(commands, func(c string) bool { return strings.Fields(c)[0] == name }) {
			t.Errorf("the command list of %s names flower %s, which flower does not have", referencePath, name)
		}
	}
}

func compareFlags(t *testing.T, head string, help, ref []string) {
	t.Helper()
	if len(help) == 0 {
		t.Errorf("no flags in the help of %s", head)
	}
	for _, f := range help {
		if !slices.Contains(ref, f) {
			t.Errorf("%s: %s is in the help but not in %s", head, f, referencePath)
		}
	}
	for _, f := range ref {
		if !slices.Contains(help, f) {
			t.Errorf("%s: %s is in %s but not in the help", head, f, referencePath)
		}
	}
}

var listedCommand = regexp.MustCompile("`flower ([a-z]+)")

// commandList is the first words after "flower" in the first cells of the
// reference's ## Commands table.
func commandList(t *testing.T, doc string) map[string]bool {
	t.Helper()
	_, rest, ok := strings.Cut(doc, "\n## Commands\n")
	if !ok {
		t.Fatalf("%s has no ## Commands", referencePath)
	}
	rest, _, _ = strings.Cut(rest, "\n## ")
	out := map[string]bool{}
	for _, l := range strings.Split(rest, "\n") {
		if cells := strings.Split(l, "|"); strings.HasPrefix(l, "| `") && len(cells) > 2 {
			for _, m := range listedCommand.FindAllStringSubmatch(cells[1], -1) {
				out[m[1]] = true
			}
		}
	}
	if len(out) < 10 {
		t.Fatalf("only %d commands in the command list of %s", len(out), referencePath)
	}
	return out
}

// TestReferenceHasEveryExitCode: the exit codes of the code (the exit…
// constants of this package) are the rows of the reference's table.
func TestReferenceHasEveryExitCode(t *testing.T) {
	code := exitConstants(t)
	if len(code) < 5 {
		t.Fatalf("only %d exit constants found: %v", len(code), code)
	}
	b, err := os.ReadFile(referencePath)
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(b), "\n## Exit codes\n")
	if !ok {
		t.Fatalf("%s has no ## Exit codes", referencePath)
	}
	table, _, _ = strings.Cut(table, "\n## ")
	var doc []int
	for _, m := range regexp.MustCompile(`(?m)^\| (\d+) \|`).FindAllStringSubmatch(table, -1) {
		n, _ := strconv.Atoi(m[1])
		doc = append(doc, n)
	}
	sort.Ints(code)
	sort.Ints(doc)
	if !slices.Equal(code, doc) {
		t.Errorf("exit codes in the code %v, in %s %v", code, referencePath, doc)
	}
}

// exitConstants are the values of this package's constants named exit….
func exitConstants(t *testing.T) []int {
	t.Helper()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			vs, ok := n.(*ast.ValueSpec)
			if !ok {
				return true
			}
			for i, name := range vs.Names {
				if !strings.HasPrefix(name.Name, "exit") || i >= len(vs.Values) {
					continue
				}
				if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.INT {
					n, _ := strconv.Atoi(lit.Value)
					seen[n] = true
				}
			}
			return true
		})
	}
	var out []int
	for n := range seen {
		out = append(out, n)
	}
	return out
}
