package workbench

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

const (
	// MaxStepNameRunes caps SafeStepName's result in runes.
	MaxStepNameRunes = 100
	// MaxStepNameBytes caps SafeStepName's result in bytes. File names are
	// limited to 255 bytes and CJK takes 3 bytes a rune; 200 leaves room for
	// "交接-" + ".md" and for the archive's "-<timestamp>-N.md".
	MaxStepNameBytes = 200
)

// SafeStepName turns a step name into something usable as one path element
// on any common file system. Letters, digits and combining marks of any
// script survive ("干活" stays "干活"), as do '-', '_' and '.'; everything
// else (path separators, control characters, spaces, : * ? " < > | and
// invalid UTF-8) becomes '-'. Runs of '-' collapse to one, leading and
// trailing '.', '-', '_' are trimmed (so "." and ".." cannot survive), and
// the result is capped at MaxStepNameRunes runes and MaxStepNameBytes bytes.
// An empty result becomes "step". SafeStepName is idempotent.
func SafeStepName(step string) string {
	var b strings.Builder
	b.Grow(len(step))
	lastDash := false
	for len(step) > 0 {
		r, size := utf8.DecodeRuneInString(step)
		step = step[size:]
		if !keep(r, size) {
			r = '-'
		}
		if r == '-' {
			if lastDash {
				continue
			}
			lastDash = true
		} else {
			lastDash = false
		}
		b.WriteRune(r)
	}
	s := trim(b.String())

	// Cap by runes and bytes at once, cutting only at rune boundaries.
	runes, end := 0, 0
	for i, r := range s {
		if runes == MaxStepNameRunes || i+utf8.RuneLen(r) > MaxStepNameBytes {
			break
		}
		runes++
		end = i + utf8.RuneLen(r)
	}
	// The cut may expose a trailing '.', '-' or '_'.
	s = trim(s[:end])
	if s == "" {
		return "step"
	}
	return s
}

// keep reports whether r may stay in a file name as it is. size tells a
// genuine U+FFFD from the decoder's marker for invalid UTF-8.
func keep(r rune, size int) bool {
	if r == utf8.RuneError && size <= 1 {
		return false
	}
	switch r {
	case '-', '_', '.':
		return true
	}
	return unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r)
}

func trim(s string) string {
	return strings.Trim(s, ".-_")
}
