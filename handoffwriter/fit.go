package handoffwriter

import (
	"fmt"
	"unicode/utf8"

	"github.com/flowerhq/flower/safefile"
)

// CutMarker opens the line Fit ends every cut section with, so that a
// person and a successor see the document is not whole (DESIGN.md «Input
// caps»).
const CutMarker = "[截断:交接过长]"

// Fit returns h cut so that its Markdown is at most limit bytes, and
// whether it had to cut: a section longer than the share it is given keeps
// its first part (on a character boundary) and ends in a line starting
// with CutMarker that says how large the document was and what the cap is.
// Every section keeps at least that line, so a complete handoff stays
// complete and parses back the same. The share is the largest that fits.
func (h Handoff) Fit(limit int) (Handoff, bool) {
	size := len(h.Markdown())
	if size <= limit {
		return h, false
	}
	mark := fmt.Sprintf("\n\n%s the handoff was %s, over the cap of %s for a handoff: this section was cut here, the rest of it is lost",
		CutMarker, safefile.Size(int64(size)), safefile.Size(int64(limit)))
	best := h.cutTo(0, mark)
	// A share over the limit cannot fit, so the search is bounded by it,
	// and so is every document it builds.
	lo, hi := 0, limit
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if c := h.cutTo(mid, mark); len(c.Markdown()) <= limit {
			lo, best = mid, c
		} else {
			hi = mid - 1
		}
	}
	return best, true
}

// cutTo cuts every section longer than n bytes to its first n (fewer, to
// end on a character boundary) and appends mark.
func (h Handoff) cutTo(n int, mark string) Handoff {
	for _, s := range Sections {
		p := h.field(s.Key)
		if len(*p) <= n {
			continue
		}
		end := n
		for end > 0 && !utf8.RuneStart((*p)[end]) {
			end--
		}
		*p = (*p)[:end] + mark
	}
	return h
}
