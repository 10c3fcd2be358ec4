package main

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/urfave/cli/v2"
)

// mistypedCommand refuses a task that is one word close to a command name
// (DESIGN.md «Mistyped commands»): `flower shwo` would otherwise start a
// paid agent on the word "shwo". `flower run WORD` runs such a word as a
// task all the same.
func mistypedCommand(c *cli.Context) error {
	if c.NArg() == 0 {
		return nil
	}
	word := c.Args().First()
	if word == "" || strings.IndexFunc(word, unicode.IsSpace) >= 0 || utf8.RuneCountInString(word) > 32 {
		return nil
	}
	best, bestDist := "", -1
	for _, cmd := range c.App.Commands {
		for _, name := range append([]string{cmd.Name}, cmd.Aliases...) {
			if d := editDistance(strings.ToLower(word), name); d <= closeEnough(name) && (bestDist < 0 || d < bestDist) {
				best, bestDist = name, d
			}
		}
	}
	if best == "" {
		return nil
	}
	return usagef("%q is not a command: did you mean `flower %s`? To run it as a task: flower run %s", word, best, shellWord(word))
}

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
