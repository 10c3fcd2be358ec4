package handoffwriter

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

func TestParseModelWritten(t *testing.T) {
	tests := []struct {
		name string
		doc  string
		want Handoff
	}{
		{
			name: "canonical",
			doc:  "# 交接 · x\n\n## 现在在做 (doing)\n\nA\n\n## 已定的事 (decided)\n\n(空)\n\n## 走不通的 (deadends)\n\nC\n\n## 下一步 (next)\n\nD\n\n## 现场 (scene)\n\nE\n",
			want: Handoff{Doing: "A", Deadends: "C", Next: "D", Scene: "E"},
		},
		{
			name: "english labels, other levels, numbered, extra words",
			doc:  "# Handoff\n### 1. Doing\nA\n#### 2) Decided items\nB\n# 3. Dead ends encountered\nC\n## 5. Next steps\nD\n##### Scene ####\nE",
			want: Handoff{Doing: "A", Decided: "B", Deadends: "C", Next: "D", Scene: "E"},
		},
		{
			name: "keys, mixed case, both labels",
			doc:  "## DOING\nA\n## deadends\nC\n## 下一步 / Next\nD\n## SCENE\nE",
			want: Handoff{Doing: "A", Deadends: "C", Next: "D", Scene: "E"},
		},
		{
			name: "dead-end spellings",
			doc:  "## Doing\nA\n## Dead-ends\nC1\n## dead end\nC2\n## Next\nD",
			want: Handoff{Doing: "A", Deadends: "C1\n\nC2", Next: "D"},
		},
		{
			name: "chinese numbering and colon",
			doc:  "## 一、现在在做\nA\n## 四、下一步：\nD",
			want: Handoff{Doing: "A", Next: "D"},
		},
		{
			name: "bold lines",
			doc:  "**Doing**\nA\n\n**Decided:**\nB\n\n__Next__\nD",
			want: Handoff{Doing: "A", Decided: "B", Next: "D"},
		},
		{
			name: "text after a colon on the heading line",
			doc:  "## Doing: fixing the shim\nmore\n**Next:** run make\n## 现场：Makefile",
			want: Handoff{Doing: "fixing the shim\nmore", Next: "run make", Scene: "Makefile"},
		},
		{
			name: "colon inside a parenthesis is not text",
			doc:  "## Doing\nA\n## Next steps (priority: high)\nD",
			want: Handoff{Doing: "A", Next: "D"},
		},
		{
			name: "prose before the first section is ignored",
			doc:  "Here is the handoff you asked for.\n\n# 交接\nIntro words.\n## Doing\nA\n## Next\nD",
			want: Handoff{Doing: "A", Next: "D"},
		},
		{
			name: "prose after the last section belongs to it",
			doc:  "## Doing\nA\n## Next\nD\n\n---\nLet me know if anything is unclear.",
			want: Handoff{Doing: "A", Next: "D\n\n---\nLet me know if anything is unclear."},
		},
		{
			name: "unknown headings are part of the section they are in",
			doc:  "## Doing\nA\n### Details\nA2\n## Summary\nS\n## Next\nD",
			want: Handoff{Doing: "A\n### Details\nA2\n## Summary\nS", Next: "D"},
		},
		{
			name: "bullets kept verbatim, inner newlines kept, ends trimmed",
			doc:  "## Deadends\n\n- -D_ANSI_SOURCE turns off other macros\n  - tried twice\n\n- include order: no effect\n\n\n## Doing\n  A\n",
			want: Handoff{Doing: "A", Deadends: "- -D_ANSI_SOURCE turns off other macros\n  - tried twice\n\n- include order: no effect"},
		},
		{
			name: "duplicate headings append",
			doc:  "## Next\nD1\n## Doing\nA\n## Next\nD2\n## Next\n(空)",
			want: Handoff{Doing: "A", Next: "D1\n\nD2"},
		},
		{
			name: "empty markers",
			doc:  "## Doing\nA\n## Decided\n(none)\n## Deadends\n（空）\n## Scene\nN/A\n## Next\nD",
			want: Handoff{Doing: "A", Next: "D"},
		},
		{
			name: "markdown fence around the document, prose around it",
			doc:  "Sure, here it is:\n\n```markdown\n# 交接\n\n## Doing\nA\n## Next\nD\n```\n\nGood luck!",
			want: Handoff{Doing: "A", Next: "D"},
		},
		{
			name: "bare fence around the document with an unnested code block inside",
			doc:  "```\n## Doing\nA\n## Scene\n```bash\n# next: build\nmake\n```\n```",
			want: Handoff{Doing: "A", Scene: "```bash\n# next: build\nmake\n```"},
		},
		{
			name: "fence without closing",
			doc:  "```md\n## Doing\nA\n## Next\nD",
			want: Handoff{Doing: "A", Next: "D"},
		},
		{
			name: "a code block in the preamble is not a wrapper",
			doc:  "Ran:\n```\nmake\n```\n## Doing\nA\n## Next\nD",
			want: Handoff{Doing: "A", Next: "D"},
		},
		{
			name: "a python block is never a wrapper",
			doc:  "```python\n# Doing\nx = 1\n```\n## Doing\nA",
			want: Handoff{Doing: "A"},
		},
		{
			name: "headings inside code blocks are code",
			doc:  "## Scene\n```sh\n# next, run make\n## Doing\n```\n~~~\n**Next**\n~~~\n## Next\nD",
			want: Handoff{Scene: "```sh\n# next, run make\n## Doing\n```\n~~~\n**Next**\n~~~", Next: "D"},
		},
		{
			name: "a fence left open at the end is closed",
			doc:  "## Doing\nA\n## Scene\n````go\nfunc f() {\n## Next\n",
			want: Handoff{Doing: "A", Scene: "````go\nfunc f() {\n## Next\n````"},
		},
		{
			name: "text after a heading's colon may open a fence",
			doc:  "## Doing\nA\n**Next:** ```sh\nmake\n```\n## Scene\nE",
			want: Handoff{Doing: "A", Next: "```sh\nmake\n```", Scene: "E"},
		},
		{
			name: "escaped headings are unescaped once",
			doc:  "## Doing\n\\## Next steps\n\\\\**Scene**\n\\not a heading",
			want: Handoff{Doing: "## Next steps\n\\**Scene**\n\\not a heading"},
		},
		{
			name: "not headings",
			doc:  "## Doing\n#Next\n####### Next\nNext: later\n**Next** is hard\n## Nextcloud\n__init__.py\n- **Next**: x",
			want: Handoff{Doing: "#Next\n####### Next\nNext: later\n**Next** is hard\n## Nextcloud\n__init__.py\n- **Next**: x"},
		},
		{
			name: "crlf",
			doc:  "## Doing\r\nA\r\nA2\r\n## Next\rD\r\n",
			want: Handoff{Doing: "A\nA2", Next: "D"},
		},
		{
			name: "nothing recognisable",
			doc:  "I could not finish.\n# Summary\nstuff",
			want: Handoff{},
		},
		{name: "empty", doc: "", want: Handoff{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Parse(tt.doc); got != tt.want {
				t.Errorf("Parse:\n got %#v\nwant %#v", got, tt.want)
			}
		})
	}
}

// TestParseWhatThePromptAsksFor writes a reply in the exact shape
// PromptTemplate shows and checks that Parse reads every section of it.
func TestParseWhatThePromptAsksFor(t *testing.T) {
	var reply strings.Builder
	for _, line := range strings.Split(PromptTemplate, "\n") {
		if strings.HasPrefix(line, "## ") {
			reply.WriteString(line + "\ntext for " + line + "\n\n")
		}
	}
	h := Parse(reply.String())
	for _, s := range Sections {
		if want := "text for " + s.Heading(); h.Get(s.Key) != want {
			t.Errorf("section %s = %q, want %q", s.Key, h.Get(s.Key), want)
		}
	}
}

// TestRoundTrip checks the round trip of DESIGN.md «Handoff document» over
// generated documents: Parse(h.Markdown()) gives h back without its step.
//
// Precondition on each field, which the generator keeps: trimmed, no "\r"
// (Markdown normalises line ends), not itself an empty marker such as "(空)"
// (which means "empty" by design), and code fences balanced (Markdown closes
// an open one). Lines that look like section headings are allowed: Markdown
// escapes them.
func TestRoundTrip(t *testing.T) {
	for seed := uint64(1); seed <= 2000; seed++ {
		rng := rand.New(rand.NewPCG(seed, seed*7919))
		h := Handoff{Step: genLine(rng)}
		for _, s := range Sections {
			*h.field(s.Key) = genField(rng)
		}
		md := h.Markdown()
		got := Parse(md)
		want := h
		want.Step = ""
		if got != want {
			t.Fatalf("seed %d: round trip differs\n got %#v\nwant %#v\nmarkdown:\n%s", seed, got, want, md)
		}
	}
}

var genLines = []string{
	"在给 Makefile 加 macOS 垫片头,让 sigemptyset 宏不再展开成语法错误。",
	"不改业务源码 —— 用户明确说过边界 🚧",
	"- -D_ANSI_SOURCE 会把别的宏一起关掉",
	"  - nested bullet 🧪",
	"1. first step",
	"**bold** words and `code`",
	"### Sub heading",
	"# Summary",
	"## Next steps",
	"## 5. Dead ends",
	"**Scene**",
	"**Next:** run make",
	"__Decided__",
	"#### 现在在做",
	`\## 下一步`,
	`\\**doing**`,
	`\ backslash prose`,
	"> quoted (空) inside",
	"(空)",
	"| a | b |",
	"---",
	"\tindented with a tab",
	"mixed 中文 and English, emoji 👩‍💻 and ﬁ ligature",
	"path: /home/u/proj/.flower/notes/交接-干活.md",
	"",
	"",
}

var genCode = []string{"# next: build it", "## Doing", "make -j8", "**Next**", "echo 'done'", "~~~", "``", "```not a closer"}

func genLine(rng *rand.Rand) string { return genLines[rng.IntN(len(genLines))] }

// genField makes a trimmed field of random lines and balanced code blocks.
func genField(rng *rand.Rand) string {
	var lines []string
	for n := rng.IntN(8); n > 0; n-- {
		if rng.IntN(6) > 0 {
			lines = append(lines, genLine(rng))
			continue
		}
		fenceLine := strings.Repeat("`", 3+rng.IntN(2))
		lines = append(lines, fenceLine+[]string{"", "go", "sh", "markdown"}[rng.IntN(4)])
		for m := rng.IntN(4); m > 0; m-- {
			lines = append(lines, genCode[rng.IntN(len(genCode))])
		}
		lines = append(lines, fenceLine)
	}
	f := strings.TrimSpace(strings.Join(lines, "\n"))
	if isEmptyMarker(f) {
		return ""
	}
	return f
}

func TestParseNeverPanics(t *testing.T) {
	inputs := []string{
		"#", "**", "****", "__", "```", "~~~~", "\\", "\\\\", "## ", "**:**", "**Next", "## 5.", "##\t下一步",
		"\xff\xfe## Next\n\xff", "## Next\n```\n", "```\n```\n## Doing", strings.Repeat("#", 100) + " Next",
		"## 现\xe5\x9c", "**\xe5**:", "一二三", "5)", "## 一、", "\r\r\n\r", "## Next：\xe3",
	}
	for i, in := range inputs {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			h := Parse(in)
			if again := Parse(h.Markdown()); again != h {
				t.Errorf("Parse(%q) = %#v, but its markdown parses to %#v", in, h, again)
			}
		})
	}
}
