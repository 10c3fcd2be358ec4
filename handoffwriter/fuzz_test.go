package handoffwriter

import (
	"testing"
)

// FuzzParse checks that Parse never panics and that what it returns is a
// fixpoint: written out with Markdown and parsed again, it stays the same.
func FuzzParse(f *testing.F) {
	for _, seed := range []string{
		"",
		Handoff{Step: "s", Doing: "a", Next: "b"}.Markdown(),
		Degraded("干活", "## Next\n```\nx", "why").Markdown(),
		"```markdown\n# 交接\n## Doing\nA\n```bash\nls\n```\n## Next\nD\n```\ntrailing",
		"**Next:** run make\n## 一、现在在做\n\\## Next\n~~~~\n## Doing\n",
		"## Doing\r\nA\r\r\n## Next: x (y: z)\n- a\n  - b",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, doc string) {
		h := Parse(doc)
		if h.Step != "" {
			t.Fatalf("Parse set Step %q", h.Step)
		}
		md := h.Markdown()
		if again := Parse(md); again != h {
			t.Fatalf("not a fixpoint\n first %#v\nsecond %#v\nmarkdown:\n%s", h, again, md)
		}
	})
}
