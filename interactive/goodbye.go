package interactive

import (
	"io"
	"regexp"
	"strings"
	"sync"
)

// GoodbyeFilter (DESIGN.md «Closing line») passes a harness's output to the screen, except the text the
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
// session id. Everything the harness draws on its alternate screen passes
// untouched and unbuffered.
//
// The harness's default renderer uses no alternate screen at all: it draws
// on the person's screen and prints the goodbye there when a person types
// /exit. So off the alternate screen the filter also watches the start of
// every line: a line that could still become "Resume this session with:" is
// held, and when it does and the next line offers the resume command, both
// go and the rest is read as the goodbye. Any other line is passed on as
// soon as it shows a character the goodbye's first line does not have (an
// escape sequence alone at the end of a write is passed at once too), so
// the running screen is not held back.
type GoodbyeFilter struct {
	mu      sync.Mutex
	w       io.Writer
	p       escParser
	inAlt   bool // the harness is on its alternate screen
	leftAlt bool // it was, and left it: what follows is its goodbye
	armed   bool // flower is stopping the harness
	saidBye bool // the goodbye's first lines went by off the alternate screen
	watch   watchState
	header  int // in watchCommand: where the held command line starts in line
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

func (f *GoodbyeFilter) lineMode() bool { return !f.inAlt && (f.leftAlt || f.armed || f.saidBye) }

// watchState is how far the start of a line off the alternate screen has
// gone towards the goodbye.
type watchState int

const (
	watchStart   watchState = iota // at a line's start: held while it could be the goodbye's header
	watchFree                      // in a line that is not the goodbye: passed as it comes
	watchCommand                   // the header was seen: the next line is held to be judged
)

// byeHeader is the first line of the harness's goodbye.
const byeHeader = "Resume this session with:"

// Write filters p; it reports all of p written unless the screen fails.
func (f *GoodbyeFilter) Write(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.out = f.out[:0]
	for _, c := range p {
		if !f.lineMode() {
			f.watchByte(c)
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
	if !f.lineMode() && f.watch == watchStart && f.p.ground() && strings.TrimSpace(visibleText(f.line)) == "" {
		// Only escape sequences so far (a frame's last cursor moves):
		// the screen must not wait for the next write to get them.
		f.release(false)
	}
	if len(f.out) == 0 {
		return len(p), nil
	}
	if _, err := f.w.Write(f.out); err != nil {
		return 0, err
	}
	return len(p), nil
}

// watchByte takes one byte off line mode: passed on, unless the line it is
// in could be the goodbye (see GoodbyeFilter).
func (f *GoodbyeFilter) watchByte(c byte) {
	f.step(c)
	if f.inAlt && f.watch != watchFree {
		// What was held is drawn on the alternate screen now: no goodbye.
		f.out = append(f.out, f.line...)
		f.line, f.watch = f.line[:0], watchFree
	}
	if f.inAlt || f.watch == watchFree {
		f.out = append(f.out, c)
		if !f.inAlt && c == '\n' && f.p.ground() {
			f.watch = watchStart
		}
		return
	}
	f.line = append(f.line, c)
	eol := c == '\n' && f.p.ground()
	switch f.watch {
	case watchStart:
		text := strings.TrimLeft(visibleText(f.line), " ")
		switch {
		case eol && strings.TrimSpace(text) == byeHeader:
			f.watch, f.header = watchCommand, len(f.line)
		case eol:
			f.release(false) // a whole line, and not the header: the next starts
		case !strings.HasPrefix(byeHeader, text):
			f.release(false)
			f.watch = watchFree
		}
	case watchCommand:
		switch {
		case eol && goodbyeLine(visibleText(f.line[f.header:])):
			// The goodbye: both lines go, and what follows is read as
			// the rest of it.
			f.line, f.watch, f.saidBye = f.line[:0], watchFree, true
		case eol:
			f.release(false)
			f.watch = watchStart
		case len(f.line) > maxHeldLine:
			f.release(false)
			f.watch = watchFree
		}
	}
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
