package main

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/urfave/cli/v2"
)

// habitWords are words a person types out of habit from other tools that
// are not flower's commands, each with what to run instead (DESIGN.md
// «Mistyped commands»). They must be typed exactly: near one is often a
// real word of a task ("task" is one edit from "tasks").
var habitWords = []struct{ word, instead string }{
	{"kill", "flower stop"}, {"cancel", "flower stop"}, {"abort", "flower stop"}, {"quit", "flower stop"}, {"exit", "flower stop"},
	{"start", "flower run TASK"}, {"restart", "flower continue"},
	{"login", "claude /login"}, {"logout", "claude /logout"}, {"auth", "claude /login"},
	{"init", "flower doctor"}, {"setup", "flower doctor"}, {"install", "flower doctor"}, {"config", "flower doctor"}, {"configure", "flower doctor"},
	{"update", "flower version"}, {"upgrade", "flower version"},
	{"top", "flower ps"}, {"jobs", "flower ps"}, {"tasks", "flower ps"},
	{"info", "flower show"}, {"pause", "flower stop"},
}

// mistypedCommand refuses a task that is one word close to a command name
// or to a habit word (DESIGN.md «Mistyped commands»): `flower shwo` or
// `flower kill` would otherwise start a paid agent on that word. asTask
// says how to run such a word as a task all the same on this front.
func mistypedCommand(c *cli.Context, asTask string) error {
	if c.NArg() == 0 {
		return nil
	}
	word := c.Args().First()
	if word == "" || strings.IndexFunc(word, unicode.IsSpace) >= 0 || utf8.RuneCountInString(word) > 32 {
		return nil
	}
	lower := strings.ToLower(word)
	best, bestDist := "", -1
	consider := func(name, suggestion string, near int) {
		if d := editDistance(lower, name); d <= near && (bestDist < 0 || d < bestDist) {
			best, bestDist = suggestion, d
		}
	}
	for _, cmd := range c.App.Commands {
		for _, name := range cmd.Names() {
			if len(name) < 2 {
				continue // help's h: every short word is near it
			}
			consider(name, "flower "+name, closeEnough(name))
		}
	}
	for _, h := range habitWords {
		consider(h.word, h.instead, 0)
	}
	if best == "" {
		return nil
	}
	return usagef("%q is not a command: did you mean `%s`? To run it as a task: %s", word, best, strings.ReplaceAll(asTask, "WORD", shellWord(word)))
}

// The ways to run a mistyped-looking word as a task, by front.
const (
	asTaskRun    = "flower run WORD (or put it in a file: -f FILE)"
	asTaskSubmit = "put it in a file and pass -f FILE"
)

// closeEnough is how many edits away from a command name a word may be and
// still be taken for a typo of it: one for short names, two for longer.
func closeEnough(name string) int {
	if len(name) <= 4 {
		return 1
	}
	return 2
}

// editDistance is the optimal string alignment distance between a and b:
// insertions, deletions, substitutions and swaps of neighbours, so "shwo"
// is one edit from "show".
func editDistance(a, b string) int {
	s, t := []rune(a), []rune(b)
	d := make([][]int, len(s)+1)
	for i := range d {
		d[i] = make([]int, len(t)+1)
		d[i][0] = i
	}
	for j := range t {
		d[0][j+1] = j + 1
	}
	for i := 1; i <= len(s); i++ {
		for j := 1; j <= len(t); j++ {
			cost := 1
			if s[i-1] == t[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && s[i-1] == t[j-2] && s[i-2] == t[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(s)][len(t)]
}

// shellWord quotes word for a shell when it needs it.
func shellWord(word string) string {
	if strings.IndexFunc(word, func(r rune) bool {
		return !(r == '-' || r == '_' || r == '.' || r == '/' || unicode.IsLetter(r) || unicode.IsDigit(r))
	}) < 0 {
		return word
	}
	return "'" + strings.ReplaceAll(word, "'", `'\''`) + "'"
}
