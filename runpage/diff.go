package runpage

import "strings"

// DiffLine is one line of a line diff: Op is ' ' (in both), '-' (only in
// the old text) or '+' (only in the new).
type DiffLine struct {
	Op   byte
	Text string
}

// maxDiffCells bounds the diff's table (lines × lines); past it the diff
// is the old text removed and the new added.
const maxDiffCells = 1 << 20

// Diff is the line diff from a to b, by longest common subsequence.
func Diff(a, b string) []DiffLine {
	x, y := splitLines(a), splitLines(b)
	if len(x)*len(y) > maxDiffCells {
		out := make([]DiffLine, 0, len(x)+len(y))
		for _, l := range x {
			out = append(out, DiffLine{'-', l})
		}
		for _, l := range y {
			out = append(out, DiffLine{'+', l})
		}
		return out
	}
	// lcs[i][j]: the longest common subsequence of x[i:] and y[j:].
	lcs := make([][]int, len(x)+1)
	for i := range lcs {
		lcs[i] = make([]int, len(y)+1)
	}
	for i := len(x) - 1; i >= 0; i-- {
		for j := len(y) - 1; j >= 0; j-- {
			if x[i] == y[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var out []DiffLine
	i, j := 0, 0
	for i < len(x) && j < len(y) {
		switch {
		case x[i] == y[j]:
			out = append(out, DiffLine{' ', x[i]})
			i, j = i+1, j+1
		case lcs[i+1][j] >= lcs[i][j+1]:
			out = append(out, DiffLine{'-', x[i]})
			i++
		default:
			out = append(out, DiffLine{'+', y[j]})
			j++
		}
	}
	for ; i < len(x); i++ {
		out = append(out, DiffLine{'-', x[i]})
	}
	for ; j < len(y); j++ {
		out = append(out, DiffLine{'+', y[j]})
	}
	return out
}

func splitLines(s string) []string {
	s = strings.ReplaceAll(s, "\r\n", "\n")
	s = strings.TrimSuffix(s, "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}
