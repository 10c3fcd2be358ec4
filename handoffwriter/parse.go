package handoffwriter

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Parse reads a handoff document: what Markdown wrote, a person's edit of it,
// or what a model wrote back when asked for one. It never fails; sections it
// cannot find stay empty, and Missing tells the caller whether that matters.
// Step is left empty: the title is not part of the content (DESIGN.md
// «Handoff document»).
//
// What it accepts, and the choices it makes where a model's text is loose:
//   - A section starts at a heading of any level ("#" to "######") or at a
//     line that is entirely bold ("**Next**", "**Next:**"), naming the section
//     by its Chinese label, English label or key, case-insensitively, possibly
//     numbered and followed by more words: "## 5. Next steps",
//     "## 下一步 / Next", "### Dead-ends". Text after a colon in such a line
//     ("## Next: run make") is the first line of the section.
//   - Prose before the first section heading is ignored.
//   - Everything after a section heading belongs to that section until the
//     next section heading, including headings that name no section (a
//     model's "### Details" under a section is part of it) and prose after
//     the last section. Nothing after the first section is dropped.
//   - Inside a fenced code block nothing is a heading.
//   - A repeated section heading appends to that section.
//   - A body of just "(空)" (or "(empty)", "none", …) is empty.
//   - A document wrapped in a ``` or ```markdown fence, possibly with prose
//     around the fence, is unwrapped when the fence's first line is a
//     heading; the prose after the closing fence is dropped.
//   - A code fence still open at the end is closed, as Markdown would.
func Parse(markdown string) Handoff {
	lines := unwrapFence(strings.Split(normalizeNewlines(markdown), "\n"))

	var (
		h    Handoff
		cur  *string // the section being read; nil before the first heading
		body []string
		f    fence
	)
	flush := func() {
		if cur == nil {
			body = nil // prose before the first section
			return
		}
		chunk := strings.TrimSpace(strings.Join(body, "\n"))
		if f.open() {
			chunk += "\n" + f.closer()
			f = fence{}
		}
		*cur = appendChunk(*cur, chunk)
		body = nil
	}
	for _, line := range lines {
		if !f.open() {
			if key, first, ok := sectionOf(line); ok {
				flush()
				cur = h.field(key)
				if first != "" {
					f.feed(first) // it may open a fence, like any body line
					body = append(body, first)
				}
				continue
			}
			if isEscaped(line) {
				// An escaped line is never a fence, so the fence state stays.
				body = append(body, line[1:])
				continue
			}
		}
		f.feed(line)
		body = append(body, line)
	}
	flush()
	return h
}

// appendChunk adds one section body to what a previous heading of the same
// section collected, so a repeated heading loses nothing.
func appendChunk(have, chunk string) string {
	chunk = strings.TrimSpace(chunk)
	if isEmptyMarker(chunk) {
		chunk = ""
	}
	switch {
	case chunk == "":
		return have
	case have == "":
		return chunk
	}
	return have + "\n\n" + chunk
}

// emptyMarkers are the bodies that mean "nothing here": what Markdown writes
// and what a model plausibly writes instead.
var emptyMarkers = []string{emptyBody, "（空）", "空", "(empty)", "empty", "(none)", "none", "n/a"}

func isEmptyMarker(s string) bool {
	for _, m := range emptyMarkers {
		if strings.EqualFold(s, m) {
			return true
		}
	}
	return false
}

// needsEscape reports whether Markdown must escape line: it reads as a
// section heading, or it is already an escaped one (so the escape stacks and
// Parse's unescaping gives the original back).
func needsEscape(line string) bool {
	_, _, ok := sectionOf(line)
	return ok || isEscaped(line)
}

// isEscaped reports whether line is one or more backslashes followed by a
// section heading.
func isEscaped(line string) bool {
	if !strings.HasPrefix(line, `\`) {
		return false
	}
	_, _, ok := sectionOf(strings.TrimLeft(line, `\`))
	return ok
}

// unwrapFence removes a fence wrapped around the whole document. A fence
// counts as a wrapper when it opens before the first section heading, has no
// language or says markdown, starts with a heading, and holds a section
// heading. It ends at the last line that can close it, so code blocks inside
// it (which a model rarely bothers to nest properly) stay inside.
func unwrapFence(lines []string) []string {
	var f fence
	for i, line := range lines {
		if f.open() {
			f.feed(line)
			continue
		}
		if _, _, ok := sectionOf(line); ok {
			return lines
		}
		opened, info, ok := openFence(line)
		if !ok {
			continue
		}
		if isMarkdownInfo(info) {
			end := len(lines)
			for j := len(lines) - 1; j > i; j-- {
				if opened.closedBy(lines[j]) {
					end = j
					break
				}
			}
			region := lines[i+1 : end]
			if startsWithHeading(region) && hasSection(region) {
				return region
			}
		}
		f = opened
	}
	return lines
}

func isMarkdownInfo(info string) bool {
	switch strings.ToLower(info) {
	case "", "markdown", "md":
		return true
	}
	return false
}

// startsWithHeading reports whether the first non-blank line is a heading of
// any kind, which tells a wrapped document from a code block in the prose.
func startsWithHeading(lines []string) bool {
	for _, line := range lines {
		t := strings.TrimSpace(line)
		if t == "" {
			continue
		}
		_, ok := headingText(t)
		return ok
	}
	return false
}

// hasSection reports whether lines hold a section heading outside fences.
func hasSection(lines []string) bool {
	var f fence
	for _, line := range lines {
		if !f.open() {
			if _, _, ok := sectionOf(line); ok {
				return true
			}
		}
		f.feed(line)
	}
	return false
}

// sectionOf reports whether line is a section heading, which section it
// names, and any text after a colon on the same line.
func sectionOf(line string) (key, first string, ok bool) {
	text, ok := headingText(strings.TrimSpace(line))
	if !ok {
		return "", "", false
	}
	s := strings.TrimSpace(strings.Trim(strings.TrimSpace(text), "*_`"))
	s = stripNumbering(s)
	for _, sec := range Sections {
		for _, alias := range aliases(sec) {
			rest, found := cutPrefixFold(s, alias)
			if !found || !atBoundary(alias, rest) {
				continue
			}
			return sec.Key, inlineText(rest), true
		}
	}
	return "", "", false
}

// cutPrefixFold is strings.CutPrefix ignoring case. It walks runes rather
// than lower-casing s, so what follows the prefix keeps its case and offsets.
func cutPrefixFold(s, prefix string) (string, bool) {
	for _, want := range prefix {
		r, size := utf8.DecodeRuneInString(s)
		if size == 0 || !strings.EqualFold(string(r), string(want)) {
			return "", false
		}
		s = s[size:]
	}
	return s, true
}

// aliases lists the lower-case names a heading may use for s.
func aliases(s Section) []string {
	names := []string{strings.ToLower(s.Zh), strings.ToLower(s.En), s.Key}
	if s.Key == "deadends" {
		names = append(names, "dead-ends", "dead end", "dead-end")
	}
	return names
}

// atBoundary reports whether a name matched as a prefix ends a word: "Next
// steps" names next, "Nextcloud" does not. Chinese has no spaces, so a
// Chinese label may run straight into more text.
func atBoundary(alias, rest string) bool {
	last, _ := utf8.DecodeLastRuneInString(alias)
	if last >= utf8.RuneSelf || rest == "" {
		return true
	}
	r, _ := utf8.DecodeRuneInString(rest)
	return !unicode.IsLetter(r) && !unicode.IsDigit(r)
}

// inlineText returns the text after a colon in what follows a section name,
// as in "Next: run make" or "下一步：跑 make". The words before the colon may
// only be plain words ("Next steps: …"), so a colon inside a parenthesis is
// not taken for one.
func inlineText(rest string) string {
	i := strings.IndexAny(rest, ":：")
	if i < 0 {
		return ""
	}
	for _, r := range rest[:i] {
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) && !unicode.IsSpace(r) && r != '/' && r != '-' {
			return ""
		}
	}
	_, size := utf8.DecodeRuneInString(rest[i:])
	return strings.TrimSpace(rest[i+size:])
}

// stripNumbering removes a leading list number: "5. next" → "next",
// "一、现在在做" → "现在在做".
func stripNumbering(s string) string {
	t := strings.TrimLeftFunc(s, func(r rune) bool {
		return unicode.IsDigit(r) || strings.ContainsRune("一二三四五六七八九十", r)
	})
	if t == s {
		return s
	}
	t = strings.TrimLeft(t, ".)、．:：-")
	return strings.TrimSpace(t)
}

// headingText returns the text of a trimmed line that is an ATX heading
// ("## Next ##" → "Next") or a bold line ("**Next**", "**Next:** run make",
// "**Next**: run make"); ok is false for any other line.
func headingText(t string) (string, bool) {
	if strings.HasPrefix(t, "#") {
		n := len(t) - len(strings.TrimLeft(t, "#"))
		rest := t[n:]
		if n > 6 || (rest != "" && rest[0] != ' ' && rest[0] != '\t') {
			return "", false
		}
		// A closing run of #s is decoration, unless it is part of a word (C#).
		if trimmed := strings.TrimRight(rest, "#"); trimmed == "" || strings.HasSuffix(trimmed, " ") || strings.HasSuffix(trimmed, "\t") {
			rest = trimmed
		}
		return strings.TrimSpace(rest), true
	}
	for _, mark := range []string{"**", "__"} {
		if !strings.HasPrefix(t, mark) {
			continue
		}
		end := strings.Index(t[len(mark):], mark)
		if end <= 0 {
			return "", false
		}
		inner := t[len(mark) : len(mark)+end]
		after := t[len(mark)+end+len(mark):]
		if after == "" || strings.HasSuffix(inner, ":") || strings.HasSuffix(inner, "：") ||
			strings.HasPrefix(after, ":") || strings.HasPrefix(after, "：") {
			return inner + after, true
		}
		return "", false
	}
	return "", false
}

// fence tracks a fenced code block: the fence character and run length that
// opened it; n == 0 means no block is open.
type fence struct {
	char byte
	n    int
}

func (f fence) open() bool { return f.n > 0 }

// closer returns the line that closes f.
func (f fence) closer() string { return strings.Repeat(string(f.char), f.n) }

// feed advances the state past line.
func (f *fence) feed(line string) {
	if f.open() {
		if f.closedBy(line) {
			*f = fence{}
		}
		return
	}
	if opened, _, ok := openFence(line); ok {
		*f = opened
	}
}

// closedBy reports whether line closes f: only fence characters, at least as
// many as opened it.
func (f fence) closedBy(line string) bool {
	t := strings.TrimSpace(line)
	return f.open() && len(t) >= f.n && strings.Trim(t, string(f.char)) == ""
}

// openFence reports whether line opens a code block (three or more backticks
// or tildes) and returns its info string ("go", "markdown", "").
func openFence(line string) (fence, string, bool) {
	t := strings.TrimSpace(line)
	if t == "" || (t[0] != '`' && t[0] != '~') {
		return fence{}, "", false
	}
	c := t[0]
	n := len(t) - len(strings.TrimLeft(t, string(c)))
	if n < 3 {
		return fence{}, "", false
	}
	info := strings.TrimSpace(t[n:])
	if c == '`' && strings.Contains(info, "`") {
		return fence{}, "", false // inline code such as ```x```, not a fence
	}
	return fence{char: c, n: n}, info, true
}
