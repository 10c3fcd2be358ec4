package policy

import (
	"strconv"
)

// Token counts are shown two ways, as in the status lines of DESIGN.md
// «Status lines» ("上下文 130.0K/200K · 还有约 20K 到换代"): a measured size
// with one decimal, and a window or an approximate distance without. One
// function cannot give both "130.0K" and "20K" for round numbers, hence two.

// FormatUsed shows a measured token count: below 1000 as is ("950"), below a
// million in thousands with one decimal ("130.0K", "152.3K"), above in
// millions with one decimal ("1.2M").
func FormatUsed(n int) string {
	sign, n := splitSign(n)
	if n < 1_000 {
		return sign + strconv.Itoa(n)
	}
	tenthsK := roundDiv(n, 100)
	if tenthsK < 10_000 {
		return sign + tenths(tenthsK) + "K"
	}
	return sign + tenths(roundDiv(n, 100_000)) + "M"
}

// FormatRound shows a window or an approximate distance: below 1000 as is
// ("950"), below a million rounded to whole thousands ("200K", "20K"), above
// in millions without a trailing ".0" ("1M", "1.5M").
func FormatRound(n int) string {
	sign, n := splitSign(n)
	if n < 1_000 {
		return sign + strconv.Itoa(n)
	}
	k := roundDiv(n, 1_000)
	if k < 1_000 {
		return sign + strconv.Itoa(k) + "K"
	}
	t := roundDiv(n, 100_000)
	if t%10 == 0 {
		return sign + strconv.Itoa(t/10) + "M"
	}
	return sign + tenths(t) + "M"
}

// splitSign returns "-" and |n| for negative n (a distance can be negative
// when a round overshoots the threshold).
func splitSign(n int) (string, int) {
	if n < 0 {
		return "-", -n
	}
	return "", n
}

// roundDiv is n/d rounded half up, for n >= 0.
func roundDiv(n, d int) int {
	return (n + d/2) / d
}

// tenths writes t tenths as "x.y".
func tenths(t int) string {
	return strconv.Itoa(t/10) + "." + strconv.Itoa(t%10)
}
