package console

import (
	"encoding/json"
	"io"
	"sync"

	"github.com/flowerhq/flower/event"

	"github.com/flowerhq/flower/handoffwriter"
)

// FlowerType is the "type" of flower's own lines in a stream, set apart from
// the harness's ("system", "assistant", "result", …).
const FlowerType = "flower"

// Stream renders a run for programs (--output stream-json): the harness's
// own stream-json lines as it wrote them, and flower's events as JSON
// objects of type "flower", one per line. Every line is one JSON object.
//
// Text and tool events are left out: the harness's assistant lines carry
// them already. The handoff-writing turn's lines never arrive: it is not
// streamed (DESIGN.md «Writing turn»); its result is the done event, whose
// "handoff" holds the parsed sections.
type Stream struct {
	mu sync.Mutex
	w  io.Writer
}

// NewStream writes the stream to w (stdout, usually).
func NewStream(w io.Writer) *Stream { return &Stream{w: w} }

// flowerLine is the wire form of an event. Its fields shadow the event's:
// Handoff gives the sections lower-case keys, Degraded is always there on a
// done handoff (DESIGN.md «Events»), false included.
type flowerLine struct {
	Type string `json:"type"`
	event.Event
	Handoff  map[string]string `json:"handoff,omitempty"`
	Degraded *bool             `json:"degraded,omitempty"`
}

// Handle writes the line or lines of one event.
func (s *Stream) Handle(ev event.Event) {
	switch ev.Kind {
	case event.KindText, event.KindTool:
		return
	case event.KindRaw:
		// The harness reader passes on only lines that are JSON objects.
		if len(ev.Raw) > 0 {
			s.write(ev.Raw)
		}
		return
	}
	line := flowerLine{Type: FlowerType, Event: ev}
	if ev.Kind == event.KindHandoff && ev.Phase == event.PhaseDone {
		line.Degraded = &ev.Degraded
	}
	if ev.Handoff != nil {
		line.Handoff = make(map[string]string, len(handoffwriter.Sections))
		for _, sec := range handoffwriter.Sections {
			line.Handoff[sec.Key] = ev.Handoff.Get(sec.Key)
		}
	}
	b, err := json.Marshal(line)
	if err != nil {
		// Every field marshals; nothing sensible to print otherwise.
		return
	}
	s.write(b)
}

func (s *Stream) write(b []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	// One write per line: a guarded writer redraws the gauge after it.
	s.w.Write(append(b[:len(b):len(b)], '\n'))
}
