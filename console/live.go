package console

import (
	"io"
	"sync"
	"time"

	"github.com/flowerhq/flower/event"
)

// DefaultEvery is how often, at most, a plain gauge line is printed when the
// status stream is not a terminal.
const DefaultEvery = 30 * time.Second

// The terminal controls the gauge uses: back to the start of the line, and
// clear to its end.
const (
	carriageReturn = "\r"
	clearToEOL     = "\x1b[K"
)

// LiveOptions configures a Live.
type LiveOptions struct {
	Lang Lang
	// Terminal draws the gauge as one line redrawn in place. Without it no
	// control character is written and the gauge becomes plain lines.
	Terminal bool
	// Width reports the terminal's columns, so the gauge never wraps (a
	// wrapped line cannot be redrawn in place); nil or 0 means unknown.
	Width func() int
	// Every bounds how often a plain gauge line is printed (0: DefaultEvery).
	Every time.Duration
	// NoHandoff: handoff is off, so the gauge shows no distance to it.
	NoHandoff bool
	// Home makes handoff paths under it show as ~/….
	Home string
	// Now is the clock (nil: time.Now).
	Now func() time.Time
}

// Live is the status stream (stderr) of a run: the status lines (DESIGN.md
// «Status lines»), notices, and a gauge of the running step. On a terminal
// the gauge is one line redrawn in place and taken down before any other
// line is printed, so nothing is overwritten; otherwise it is a plain line
// printed at each generation's start and then at most every Every while the
// step moves.
type Live struct {
	mu     sync.Mutex
	w      io.Writer
	status *Status
	lab    labels
	o      LiveOptions
	g      gauge

	shown    string // terminal: the gauge on screen, "" when none
	midLine  bool   // a line written through Write is not finished yet
	closed   bool
	plain    string // the last plain gauge line
	plainAt  time.Time
	plainGen int
}

// NewLive renders to w (stderr, usually).
func NewLive(w io.Writer, o LiveOptions) *Live {
	if o.Every <= 0 {
		o.Every = DefaultEvery
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	st := NewStatus(w, o.Lang)
	st.ShortenHome(o.Home)
	return &Live{w: w, status: st, lab: labelsOf(o.Lang), o: o}
}

// Handle renders one event: its status lines if it has any, and the gauge.
func (l *Live) Handle(ev event.Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	lines := l.status.lines(ev)
	changed := l.g.update(ev)
	changed = l.g.countdown(l.o.Now()) || changed // unattended: a limit's wait counts down
	if lines != "" {
		l.takeDown()
		io.WriteString(l.w, lines)
	}
	if l.closed || !l.g.ready() {
		return
	}
	if l.o.Terminal {
		if changed || lines != "" {
			l.draw()
		}
		return
	}
	l.plainLine()
}

// Write prints other lines (a notice, the summary) on the status stream,
// taking the gauge down first and drawing it again once the line is done.
func (l *Live) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.through(l.w, p)
}

// Guard returns a writer for another stream that may share the terminal
// (stdout): each write takes the gauge down first, so the two never mix on
// one line.
func (l *Live) Guard(w io.Writer) io.Writer {
	if !l.o.Terminal {
		return w
	}
	return guarded{l: l, w: w}
}

type guarded struct {
	l *Live
	w io.Writer
}

func (g guarded) Write(p []byte) (int, error) {
	g.l.mu.Lock()
	defer g.l.mu.Unlock()
	return g.l.through(g.w, p)
}

// through writes p to w with the gauge down; it comes back up after a
// complete line.
func (l *Live) through(w io.Writer, p []byte) (int, error) {
	l.takeDown()
	n, err := w.Write(p)
	if len(p) > 0 {
		l.midLine = p[len(p)-1] != '\n'
	}
	if l.o.Terminal && !l.closed && l.g.ready() {
		l.draw()
	}
	return n, err
}

// Close takes the gauge down for good; later lines print as they are.
func (l *Live) Close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.takeDown()
	l.closed = true
}

// draw shows the gauge in place of the one on screen.
func (l *Live) draw() {
	if l.midLine {
		// Redrawing now would overwrite a half-written line.
		return
	}
	text := l.g.text(l.lab, !l.o.NoHandoff)
	if l.o.Width != nil {
		// One column short of the edge: a full line makes some terminals wrap.
		text = clip(text, l.o.Width()-1)
	}
	if text == l.shown {
		return
	}
	io.WriteString(l.w, carriageReturn+text+clearToEOL)
	l.shown = text
}

// takeDown clears the gauge's line, leaving the cursor at its start.
func (l *Live) takeDown() {
	if l.shown == "" {
		return
	}
	io.WriteString(l.w, carriageReturn+clearToEOL)
	l.shown = ""
}

// plainLine prints the gauge as a line of its own when a generation has its
// first measure, and otherwise at most every Every, and only if it changed.
func (l *Live) plainLine() {
	if l.g.phase != gaugeWorking || l.midLine {
		// Starting says nothing yet; the writing and the handoff have their
		// own status lines.
		return
	}
	text := l.g.text(l.lab, !l.o.NoHandoff)
	now := l.o.Now()
	if text == l.plain || (l.g.gen == l.plainGen && now.Sub(l.plainAt) < l.o.Every) {
		return
	}
	io.WriteString(l.w, text+"\n")
	l.plain, l.plainAt, l.plainGen = text, now, l.g.gen
}
