package interactive

import (
	"bytes"
	"context"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/flowerhq/flower/front"
)

// The keys flower presses, as the harness reads them (see the package doc).
const (
	keyEsc     = "\x1b"      // interrupts a running turn
	keyCtrlC   = "\x03"      // clears the input; twice in a row exits
	keyEnter   = "\r"        // submits the input
	pasteStart = "\x1b[200~" // bracketed paste
	pasteEnd   = "\x1b[201~"
)

// The handoff key, Ctrl-\, asks flower for a handoff now (DESIGN.md
// «Handoff on request»). flower takes it out of the person's keys, so the
// harness never sees it, and it cannot collide with anything of the
// harness's own: the harness lists Ctrl-\ among the keys it will not bind
// ("Terminal quit signal (SIGQUIT)", an error in keybindings.json), so
// neither its defaults nor a person's keybindings give it a meaning, and no
// slash command is a key. In the raw mode of flower's terminal it sends no
// signal. Terminals in the harness's extended keyboard modes send it as CSI
// u or modifyOtherKeys sequences, taken out as well.
var handoffKeys = [][]byte{[]byte("\x1b[92;5u"), []byte("\x1b[27;5;92~"), {0x1c}}

// HandoffKeyName is how the handoff key is named to a person.
const HandoffKeyName = "Ctrl-\\"

// takeHandoffKeys returns p without its handoff keys, and how many it had.
func takeHandoffKeys(p []byte) ([]byte, int) {
	n := 0
	for _, k := range handoffKeys {
		for {
			i := bytes.Index(p, k)
			if i < 0 {
				break
			}
			p = append(p[:i:i], p[i+len(k):]...)
			n++
		}
	}
	return p, n
}

// Pasted text longer than this, or with more newlines, is collapsed by the
// harness into a "[Pasted text]" reference (observed limits: 800 characters
// and 2 newlines); chunks stay well inside them.
const (
	maxPasteNewlines = 2
	maxPasteUnits    = 600 // UTF-16 code units, as the harness counts
)

// Typist types text into a harness the way a person pasting it in small
// pieces would, so that it reaches the model verbatim.
type Typist struct {
	// Type writes keys to the harness.
	Type func(p []byte) error
	// Gap is the pause between pieces, so two pastes are not read as one;
	// with none, the pieces go in one write, a burst (the harness still
	// reads each paste as its own).
	Gap time.Duration
	// Settle is the pause after the last piece before Enter.
	Settle time.Duration
	// Clock runs the pauses (the machine's when nil).
	Clock front.Clock
}

// Submit types text and presses Enter.
func (t Typist) Submit(ctx context.Context, text string) error {
	clock := t.Clock
	if clock == nil {
		clock = front.WallClock{}
	}
	var burst []byte
	for _, piece := range PasteChunks(text) {
		if t.Gap <= 0 {
			burst = append(append(append(burst, pasteStart...), piece...), pasteEnd...)
			continue
		}
		if err := t.Type([]byte(pasteStart + piece + pasteEnd)); err != nil {
			return err
		}
		if err := front.Sleep(ctx, clock, t.Gap); err != nil {
			return err
		}
	}
	if len(burst) > 0 {
		if err := t.Type(burst); err != nil {
			return err
		}
	}
	if err := front.Sleep(ctx, clock, t.Settle); err != nil {
		return err
	}
	return t.Type([]byte(keyEnter))
}

// PasteChunks splits text into pieces the harness inserts as typed: each
// has at most maxPasteNewlines newlines and maxPasteUnits UTF-16 units, and
// no piece splits a character. Line endings become "\n"; other control
// characters but tab are dropped, since one ESC could end the paste early.
// The pieces joined give the cleaned text back.
func PasteChunks(text string) []string {
	text = strings.ReplaceAll(text, "\r\n", "\n")
	text = strings.ReplaceAll(text, "\r", "\n")
	text = strings.Map(func(r rune) rune {
		if r == '\n' || r == '\t' {
			return r
		}
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || r == utf8.RuneError {
			return -1
		}
		return r
	}, text)
	var chunks []string
	var b strings.Builder
	newlines, units := 0, 0
	for _, r := range text {
		u := 1
		if r > 0xffff {
			u = 2 // a surrogate pair
		}
		nl := 0
		if r == '\n' {
			nl = 1
		}
		if b.Len() > 0 && (newlines+nl > maxPasteNewlines || units+u > maxPasteUnits) {
			chunks = append(chunks, b.String())
			b.Reset()
			newlines, units = 0, 0
		}
		b.WriteRune(r)
		newlines += nl
		units += u
	}
	if b.Len() > 0 {
		chunks = append(chunks, b.String())
	}
	return chunks
}
