package interactive

import (
	"io"
	"strings"
	"sync"
)

// Screen passes the harness's output to the person's screen untouched and
// lets flower set the terminal title without tearing it: a title sequence
// written into the middle of one of the harness's escape sequences, or
// between the bytes of one UTF-8 character, would garble the screen, so the
// title goes out only where the harness's output stands between sequences
// and characters.
type Screen struct {
	mu      sync.Mutex
	w       io.Writer
	vt      vtState
	pending string // a title waiting for a safe point
	has     bool
}

// NewScreen writes to w, the person's screen.
func NewScreen(w io.Writer) *Screen { return &Screen{w: w} }

// Write copies the harness's output to the screen; a pending title goes out
// at the first safe point in it.
func (s *Screen) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	written := 0
	if s.has {
		for i, c := range p {
			s.vt.step(c)
			if !s.vt.safe() {
				continue
			}
			n, err := s.w.Write(p[:i+1])
			if err != nil {
				return n, err
			}
			written = i + 1
			s.flushTitle()
			break
		}
		if written == 0 {
			// No safe point in p: the title waits for the next chunk.
			return s.w.Write(p)
		}
		p = p[written:]
	}
	n, err := s.w.Write(p)
	s.vt.feed(p[:n])
	return written + n, err
}

// SetTitle shows title in the terminal's title bar now, or as soon as the
// harness's output reaches a safe point.
func (s *Screen) SetTitle(title string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pending, s.has = title, true
	s.flushTitle()
}

// Reset forgets the escape state: a new harness starts from a clean slate.
func (s *Screen) Reset() {
	s.mu.Lock()
	s.vt = vtState{}
	s.mu.Unlock()
}

func (s *Screen) flushTitle() {
	if !s.has || !s.vt.safe() {
		return
	}
	s.has = false
	_, _ = io.WriteString(s.w, TitleSequence(s.pending))
}

// TitleSequence is the OSC 2 sequence that sets the window title to title,
// with control characters (which could end the sequence early) removed.
func TitleSequence(title string) string {
	clean := strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return -1
		}
		return r
	}, title)
	return "\x1b]2;" + clean + "\x07"
}

// vtState follows just enough of a terminal's parser to tell whether the
// byte stream stands between escape sequences and between characters.
type vtState struct {
	mode vtMode
	utf8 int // continuation bytes still due
}

type vtMode int

const (
	vtGround    vtMode = iota
	vtEscape           // after ESC
	vtCSI              // ESC [ … up to a final byte
	vtString           // OSC, DCS, APC, PM, SOS: up to BEL or ESC \
	vtStringEsc        // ESC inside a string: ST's backslash or a new sequence
)

func (v *vtState) safe() bool { return v.mode == vtGround && v.utf8 == 0 }

func (v *vtState) feed(p []byte) {
	for _, c := range p {
		v.step(c)
	}
}

func (v *vtState) step(c byte) {
	switch v.mode {
	case vtGround:
		switch {
		case c == 0x1b:
			v.mode, v.utf8 = vtEscape, 0
		case v.utf8 > 0 && c&0xc0 == 0x80:
			v.utf8--
		case c&0xe0 == 0xc0:
			v.utf8 = 1
		case c&0xf0 == 0xe0:
			v.utf8 = 2
		case c&0xf8 == 0xf0:
			v.utf8 = 3
		default:
			v.utf8 = 0
		}
	case vtEscape:
		switch {
		case c == '[':
			v.mode = vtCSI
		case c == ']' || c == 'P' || c == '_' || c == '^' || c == 'X':
			v.mode = vtString
		case c >= 0x20 && c <= 0x2f:
			// An intermediate byte (ESC ( B …): the sequence goes on.
		case c == 0x1b:
		default:
			v.mode = vtGround
		}
	case vtCSI:
		switch {
		case c == 0x1b:
			v.mode = vtEscape
		case c >= 0x40 && c <= 0x7e:
			v.mode = vtGround
		case c == 0x18 || c == 0x1a: // CAN, SUB abort a sequence
			v.mode = vtGround
		}
	case vtString:
		switch c {
		case 0x07:
			v.mode = vtGround
		case 0x1b:
			v.mode = vtStringEsc
		case 0x18, 0x1a:
			v.mode = vtGround
		}
	case vtStringEsc:
		if c == '\\' {
			v.mode = vtGround
		} else {
			// The string ended without ST; c starts whatever follows ESC.
			v.mode = vtEscape
			v.step(c)
		}
	}
}
