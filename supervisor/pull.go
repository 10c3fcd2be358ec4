package supervisor

import (
	"context"

	"github.com/flowerhq/flower/front"
)

// puller is the engine's end of a session's facts (DESIGN.md «Fronts»).
// The engine waits for a fact beside its timers, the inbox and the probe,
// so the one Next it has asked for runs on a goroutine of its own; it asks
// for the next only once the fact before is handled, which is what tells
// the front that the engine has decided on it (front.Session.Next). At
// most one Next runs at a time.
type puller struct {
	s  front.Session
	ch chan pulled
	// cancel ends the Next under way; nil when none is.
	cancel context.CancelFunc
	eof    bool
	// kept is the fact of a Next called off for a sync, which ready
	// returns first.
	kept front.Fact
}

type pulled struct {
	f   front.Fact
	err error
}

func newPuller(s front.Session) *puller { return &puller{s: s, ch: make(chan pulled, 1)} }

// C asks for the next fact, unless that is under way, and is where it
// comes; nil (never ready) once the session has said all.
func (p *puller) C() <-chan pulled {
	if p.eof {
		return nil
	}
	if p.cancel == nil && p.kept != nil {
		// A fact a sync kept comes first.
		p.ch <- pulled{f: p.kept}
		p.kept, p.cancel = nil, func() {}
	}
	if p.cancel == nil {
		ctx, cancel := context.WithCancel(context.Background())
		p.cancel = cancel
		go func() {
			f, err := p.s.Next(ctx)
			p.ch <- pulled{f, err}
		}()
	}
	return p.ch
}

// got takes what C delivered: a fact, or false once the session has said
// all (its harness is gone; Exit says how).
func (p *puller) got(x pulled) (front.Fact, bool) {
	p.cancel()
	p.cancel = nil
	if x.err != nil {
		p.eof = true
		return nil, false
	}
	return x.f, true
}

// next waits for the next fact; false once the session has said all.
func (p *puller) next() (front.Fact, bool) {
	if p.eof {
		return nil, false
	}
	return p.got(<-p.C())
}

// ready returns the next fact the session has already, without waiting
// for one: the Next under way is called off (it loses nothing), and one
// is asked with a done context. false: none is there (or the session has
// said all; C then reports it).
func (p *puller) ready() (front.Fact, bool) {
	if p.stop(); p.kept != nil {
		f := p.kept
		p.kept = nil
		return f, true
	}
	if p.eof {
		return nil, false
	}
	done, cancel := context.WithCancel(context.Background())
	cancel()
	f, err := p.s.Next(done)
	switch {
	case err == nil:
		return f, true
	case err != context.Canceled:
		p.eof = true
	}
	return nil, false
}

// sync makes every record the harness wrote before now the session's own
// (front.Syncer), so that ready returns its facts; a front that reads in
// step with Next has nothing to do. The Next under way is called off
// first, and its fact kept for ready.
func (p *puller) sync(ctx context.Context) error {
	s, ok := p.s.(front.Syncer)
	if !ok {
		return nil
	}
	if p.stop(); p.eof {
		return nil
	}
	return s.Sync(ctx)
}

// stop calls off the Next under way, keeping its fact, or the end.
func (p *puller) stop() {
	if p.cancel == nil {
		return
	}
	p.cancel()
	x := <-p.ch
	p.cancel = nil
	switch {
	case x.err == nil:
		p.kept = x.f
	case x.err != context.Canceled:
		p.eof = true
	}
}
