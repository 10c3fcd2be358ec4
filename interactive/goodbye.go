package interactive

import (
	"io"
	"regexp"
	"strings"
	"sync"
)

// GoodbyeFilter passes a harness's output to the screen, except the text the
// harness prints as it exits that names a session. Claude Code 2.1.328 ends
// by leaving its alternate screen and printing, on the person's own screen,
//
//	Resume this session with:
//	claude [the flags it was started with] --resume <session id>
//
// (each line dimmed). When flower ends a generation that session is retired,
// and resuming it is exactly what flower continue is built never to do; at
// the very end flower prints a line of its own instead (ContinueHint). So
// once the harness has left its alternate screen for good, or once flower is
// stopping it (Arm), its output is read a line at a time, and a line is
// dropped whose text starts the goodbye, offers "--resume", or names a
// session id. Everything else, and everything the harness draws on its
// alternate screen, passes untouched and unbuffered.
type GoodbyeFilter struct {
	mu      sync.Mutex
	w       io.Writer
	p       escParser
	inAlt   bool // the harness is on its alternate screen
	leftAlt bool // it was, and left it: what follows is its goodbye
	armed   bool // flower is stopping the harness
	line    []byte
	passing bool // the held line grew too long to be a goodbye; pass the rest of it
	out     []byte
}

// NewGoodbyeFilter writes what it lets through to w.
func NewGoodbyeFilter(w io.Writer) *GoodbyeFilter { return &GoodbyeFilter{w: w} }

// maxHeldLine bounds a line held for a decision: goodbye lines are short,
// and a longer line is passed on as it comes.
const maxHeldLine = 4 << 10

// Arm says flower is stopping the harness: what it prints from now on is
// read as its goodbye (once it is off its alternate screen).
func (f *GoodbyeFilter) Arm() {
	f.mu.Lock()
	f.armed = true
	f.mu.Unlock()
}

func (f *GoodbyeFilter) lineMode() bool { return !f.inAlt && (f.leftAlt || f.armed) }

// Write filters p; it reports all of p written unless the screen fails.
func (f *GoodbyeFilter) Write(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.out = f.out[:0]
	for _, c := range p {
		if !f.lineMode() {
			f.out = append(f.out, c)
			f.step(c)
			continue
		}
		if f.passing {
			f.out = append(f.out, c)
		} else {
			f.line = append(f.line, c)
		}
		f.step(c)
		switch {
		case !f.lineMode():
			// Back on the alternate screen: the held bytes are not a
			// goodbye.
			f.release(false)
		case c == '\n' && f.p.ground():
			f.release(true)
		case len(f.line) > maxHeldLine:
			f.out = append(f.out, f.line...)
			f.line, f.passing = f.line[:0], true
		}
	}
	if len(f.out) == 0 {
		return len(p), nil
	}
	if _, err := f.w.Write(f.out); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Flush decides on a last line the harness left unfinished; call it once
// the harness's output has ended.
func (f *GoodbyeFilter) Flush() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.out = f.out[:0]
	f.release(true)
	if len(f.out) == 0 {
		return nil
	}
	_, err := f.w.Write(f.out)
	return err
}

// release ends the held line: dropped if judge says it is a goodbye,
// queued for the screen otherwise.
func (f *GoodbyeFilter) release(judge bool) {
	if !(judge && goodbyeLine(visibleText(f.line))) {
		f.out = append(f.out, f.line...)
	}
	f.line, f.passing = f.line[:0], false
}

// sessionID is the shape of the harness's session ids.
var sessionID = regexp.MustCompile(`(?i)[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)

// goodbyeLine tells the lines of a harness's exit text that point at a
// session: flower's own closing line names the one to continue.
func goodbyeLine(text string) bool {
	t := strings.TrimSpace(text)
	return strings.HasPrefix(t, "Resume this session") || strings.Contains(t, "--resume") || sessionID.MatchString(t)
}

// visibleText is what a line shows: its bytes without escape sequences and
// control characters.
func visibleText(line []byte) string {
	var p escParser
	var b strings.Builder
	for _, c := range line {
		was := p.ground()
		p.step(c)
		if was && p.ground() && c >= 0x20 && c != 0x7f {
			b.WriteByte(c)
		}
	}
	return b.String()
}

// step follows the escape sequences, noting the harness entering and
// leaving its alternate screen.
func (f *GoodbyeFilter) step(c byte) {
	final, params, done := f.p.step(c)
	if !done || (final != 'h' && final != 'l') || !strings.HasPrefix(params, "?") {
		return
	}
	for _, mode := range strings.Split(params[1:], ";") {
		switch mode {
		case "1049", "1047", "47":
			if final == 'h' {
				f.inAlt = true
			} else if f.inAlt {
				f.inAlt, f.leftAlt = false, true
			}
		}
	}
}

// escParser follows a terminal's escape sequences far enough to tell text
// from sequences and to read a CSI sequence's parameters and final byte.
type escParser struct {
	mode   vtMode
	params []byte
}

func (p *escParser) ground() bool { return p.mode == vtGround }

// step takes one byte; done reports a CSI sequence that ended with it.
func (p *escParser) step(c byte) (final byte, params string, done bool) {
	switch p.mode {
	case vtGround:
		if c == 0x1b {
			p.mode = vtEscape
		}
	case vtEscape:
		switch {
		case c == '[':
			p.mode, p.params = vtCSI, p.params[:0]
		case c == ']' || c == 'P' || c == '_' || c == '^' || c == 'X':
			p.mode = vtString
		case c >= 0x20 && c <= 0x2f, c == 0x1b:
		default:
			p.mode = vtGround
		}
	case vtCSI:
		switch {
		case c == 0x1b:
			p.mode = vtEscape
		case c >= 0x40 && c <= 0x7e:
			p.mode = vtGround
			return c, string(p.params), true
		case c == 0x18 || c == 0x1a:
			p.mode = vtGround
		case len(p.params) < 64:
			p.params = append(p.params, c)
		}
	case vtString:
		switch c {
		case 0x07, 0x18, 0x1a:
			p.mode = vtGround
		case 0x1b:
			p.mode = vtStringEsc
		}
	case vtStringEsc:
		if c == '\\' {
			p.mode = vtGround
		} else {
			p.mode = vtEscape
			return p.step(c)
		}
	}
	return 0, "", false
}
