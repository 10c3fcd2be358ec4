package trust

import (
	"crypto/sha256"
	"encoding/hex"
	"hash"
	"strings"
	"unicode"

	"github.com/flowerhq/flower/envinject"
)

type hasher struct{ hash.Hash }

func newHash() hasher        { return hasher{sha256.New()} }
func (h hasher) hex() string { return hex.EncodeToString(h.Sum(nil)) }

// Mask makes a command safe to show (DESIGN.md «Secrets on screen and in
// logs»): URLs keep only scheme, host and port, and a word that looks like
// a secret (long, letters and digits mixed, or key=value with a long
// value) is masked as a credential is. Control characters are dropped.
func Mask(cmd string) string {
	cmd = envinject.RedactURLs(cmd)
	words := strings.Fields(cmd)
	for i, w := range words {
		if k, v, ok := strings.Cut(w, "="); ok && looksSecret(v) {
			words[i] = k + "=" + envinject.Mask(v)
		} else if looksSecret(w) {
			words[i] = envinject.Mask(w)
		}
	}
	return printable(strings.Join(words, " "))
}

// printable drops control characters: what a repository's file names
// reaches a terminal and a log only as text (DESIGN.md «Terminal safety»).
func printable(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return -1
		}
		return r
	}, s)
}

// looksSecret: 20 or more characters of a token's alphabet, with letters
// and digits both, or an sk- prefix.
func looksSecret(w string) bool {
	w = strings.Trim(w, `'"`)
	if strings.HasPrefix(w, "sk-") && len(w) > 8 {
		return true
	}
	if len(w) < 20 {
		return false
	}
	var letters, digits bool
	for _, r := range w {
		switch {
		case unicode.IsLetter(r):
			letters = true
		case unicode.IsDigit(r):
			digits = true
		case strings.ContainsRune("-_+/=.", r):
		default:
			return false
		}
	}
	return letters && digits
}
