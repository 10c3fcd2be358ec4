// Package handoffwriter owns the handoff document: its five sections, how it
// is written as markdown and parsed back from what a model wrote, the prompt
// that asks a session to write it, the prompt block that hands it to the
// successor, the block that carries the step's task to the successor in the
// person's words, the mechanical degraded handoff used when the writing turn
// fails, and the recogniser for "the prompt does not fit". The rules are in
// DESIGN.md «Handoff document», «Writing turn», «Dead ends», «Prompt block»,
// «Degraded handoff» and «Overflow path».
//
// It does no I/O: where the document is stored and which session reads it
// belong to the callers.
package handoffwriter

import (
	"strings"
)

// DegradedMarker opens the doing section of a handoff that was assembled
// mechanically because the writing turn failed; its presence is what
// Handoff.IsDegraded checks (DESIGN.md «Degraded handoff»).
const DegradedMarker = "[降级:交接没写成]"

// Section names one part of the handoff: its key (as used in events and
// Get), its Chinese label (as shown to a person and written in headings) and
// its English label (as a model may write it back).
type Section struct{ Key, Zh, En string }

// Sections lists the five sections in document order. Each prevents one kind
// of successor mistake (DESIGN.md «Handoff document»).
var Sections = []Section{
	{Key: "doing", Zh: "现在在做", En: "Doing"},
	{Key: "decided", Zh: "已定的事", En: "Decided"},
	{Key: "deadends", Zh: "走不通的", En: "Dead ends"},
	{Key: "next", Zh: "下一步", En: "Next"},
	{Key: "scene", Zh: "现场", En: "Scene"},
}

// Required lists the keys a handoff must fill to be complete. The other
// three stay optional: forcing dead ends invites fabrication.
var Required = []string{"doing", "next"}

// emptyBody is what Markdown writes for a blank section.
const emptyBody = "(空)"

// Handoff is one handoff document. Step only titles the markdown; Parse
// never sets it.
type Handoff struct {
	Step     string
	Doing    string
	Decided  string
	Deadends string
	Next     string
	Scene    string
}

// field returns a pointer to the section named by key, or nil for an unknown
// key.
func (h *Handoff) field(key string) *string {
	switch key {
	case "doing":
		return &h.Doing
	case "decided":
		return &h.Decided
	case "deadends":
		return &h.Deadends
	case "next":
		return &h.Next
	case "scene":
		return &h.Scene
	}
	return nil
}

// Get returns the text of the section named by key, or "" for an unknown key.
func (h Handoff) Get(key string) string {
	if p := h.field(key); p != nil {
		return *p
	}
	return ""
}

// Missing returns the required keys whose section is blank, in the order of
// Required. Only Required is checked.
func (h Handoff) Missing() []string {
	var missing []string
	for _, key := range Required {
		if strings.TrimSpace(h.Get(key)) == "" {
			missing = append(missing, key)
		}
	}
	return missing
}

// Complete reports whether every required section is filled.
func (h Handoff) Complete() bool { return len(h.Missing()) == 0 }

// IsDegraded reports whether the handoff was assembled mechanically, i.e.
// whether doing carries DegradedMarker.
func (h Handoff) IsDegraded() bool { return strings.Contains(h.Doing, DegradedMarker) }

// Filled returns the keys of the non-blank sections in document order, as
// the "done" event reports them (DESIGN.md «Events»).
func (h Handoff) Filled() []string {
	var keys []string
	for _, s := range Sections {
		if strings.TrimSpace(h.Get(s.Key)) != "" {
			keys = append(keys, s.Key)
		}
	}
	return keys
}

// Heading returns the canonical heading line Markdown writes for s, e.g.
// "## 现在在做 (doing)". HandoffPrompt shows the model the same lines.
func (s Section) Heading() string { return "## " + s.Zh + " (" + s.Key + ")" }

// Markdown writes the document: a title line carrying Step, then one
// canonical heading per section in order, each followed by its text or
// "(空)" when blank. Parse reads it back to the same sections.
//
// Two things are rewritten so that the text cannot break the structure: a
// line of section text that would itself read as a section heading is
// escaped with a leading backslash (Parse removes it), and a code fence left
// open at the end of a section is closed (otherwise it would swallow the
// headings after it).
func (h Handoff) Markdown() string {
	var b strings.Builder
	b.WriteString("# 交接")
	if step := strings.Join(strings.Fields(h.Step), " "); step != "" {
		b.WriteString(" · " + step)
	}
	b.WriteString("\n")
	for _, s := range Sections {
		b.WriteString("\n" + s.Heading() + "\n\n")
		body := strings.TrimSpace(normalizeNewlines(h.Get(s.Key)))
		if body == "" {
			b.WriteString(emptyBody + "\n")
			continue
		}
		b.WriteString(escapeBody(body))
		b.WriteString("\n")
	}
	return b.String()
}

// escapeBody makes one section's text safe to place under a heading: lines
// outside code fences that read as section headings (or as escaped ones) get
// one more leading backslash, and an unclosed fence is closed.
func escapeBody(body string) string {
	lines := strings.Split(body, "\n")
	var f fence
	for i, line := range lines {
		if !f.open() && needsEscape(line) {
			lines[i] = `\` + line
			continue
		}
		f.feed(line)
	}
	if f.open() {
		lines = append(lines, f.closer())
	}
	return strings.Join(lines, "\n")
}

// normalizeNewlines turns CRLF and lone CR into LF, so that a line is a line
// whatever editor last touched the file.
func normalizeNewlines(s string) string {
	if !strings.Contains(s, "\r") {
		return s
	}
	return strings.ReplaceAll(strings.ReplaceAll(s, "\r\n", "\n"), "\r", "\n")
}
