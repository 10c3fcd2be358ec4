package interactive

import (
	"testing"
	"time"

	"github.com/flowerhq/flower/event"
)

func TestLimitTitle(t *testing.T) {
	reset := time.Date(2026, 12, 1, 12, 5, 0, 0, time.Local)
	for _, c := range []struct {
		ev   event.Event
		want string
	}{
		{event.Event{Kind: event.KindLimitWait, Phase: event.PhaseShown, Limit: "usage_limit", ResetAt: &reset}, "flower · usage limit · resets 12:05"},
		{event.Event{Kind: event.KindLimitWait, Phase: event.PhaseShown, Limit: "rate_limit"}, "flower · rate limit reached"},
		{event.Event{Kind: event.KindLimitWait, Phase: event.PhaseBegun, Limit: "rate_limit"}, ""},
		{event.Event{Kind: event.KindHandoff, Phase: event.PhaseNear}, ""},
	} {
		if got := limitTitle(c.ev); got != c.want {
			t.Errorf("limitTitle(%+v) = %q, want %q", c.ev, got, c.want)
		}
	}
}
