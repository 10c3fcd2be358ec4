package console

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Escape makes text that flower did not write itself (a task, a handoff, a
// model's reply, an error quoting a workspace's file, a log a repository
// planted) safe to print on a person's terminal (DESIGN.md «Terminal
// safety»). Newlines and tabs are kept; every other character a terminal
// may act on is written as a Go escape instead:
//   - C0 controls (ESC, CR, BEL, backspace, …) and DEL as \x1b;
//   - C1 controls (U+0080–U+009F, CSI and OSC among them) as \u009b;
//   - the bidirectional formatting characters (U+061C, U+200E, U+200F,
//     U+202A–U+202E, U+2066–U+2069), which reorder what is shown, as
//     \u202e;
//   - bytes that are not UTF-8 as \x9b, since some terminals read a lone
//     0x9b as CSI.
//
// Text with none of them is returned as it is. JSON outputs are not
// escaped: their encoding already keeps them to one meaning.
func Escape(s string) string {
	i := firstUnsafe(s)
	if i < 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	b.WriteString(s[:i])
	for i < len(s) {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r < 0x80 && unsafeRune(r):
			fmt.Fprintf(&b, `\x%02x`, r)
		case unsafeRune(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// firstUnsafe is the index of the first byte Escape changes, or -1.
func firstUnsafe(s string) int {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if unsafeRune(rune(c)) {
				return i
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && n == 1) || unsafeRune(r) {
			return i
		}
		i += n
	}
	return -1
}

func unsafeRune(r rune) bool {
	switch {
	case r == '\n' || r == '\t':
		return false
	case r < 0x20 || r == 0x7f:
		return true
	case r >= 0x80 && r <= 0x9f:
		return true
	case r == 0x061c || r == 0x200e || r == 0x200f:
		return true
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
		return true
	}
	return false
}
