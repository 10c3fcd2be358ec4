package front

import (
	"context"
	"errors"
	"io"
)

// Pull is the read loop of every front, generic over its source: Next
// returns the facts translated last, in order, and only when none is left
// has the source's next input read and translated. The engine asks for a
// fact only once it has decided on the one before, so what its commands
// did on the way (an interrupt sent, a prompt typed) is the translation's
// to know before the next input is read, whatever the timing (DESIGN.md
// «Fronts»). The zero Pull is ready; it is its Next's caller's alone.
type Pull struct {
	left []Fact
	eof  bool
}

// Add queues facts for Next, after those left.
func (p *Pull) Add(fs ...Fact) { p.left = append(p.left, fs...) }

// Next is the next fact left, or, with none, the first that step makes:
// step reads and translates what comes next into Add, or says the source
// ended with io.EOF (the facts it added on the way come first), or fails.
// step may add nothing; it is called again.
func (p *Pull) Next(ctx context.Context, step func(context.Context) error) (Fact, error) {
	for len(p.left) == 0 {
		if p.eof {
			return nil, io.EOF
		}
		if err := step(ctx); errors.Is(err, io.EOF) {
			p.eof = true
		} else if err != nil {
			return nil, err
		}
	}
	f := p.left[0]
	p.left[0] = nil
	p.left = p.left[1:]
	return f, nil
}
