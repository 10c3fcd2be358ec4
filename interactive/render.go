package interactive

import (
	"fmt"
	"strings"

	"github.com/flowerhq/flower/event"

	"github.com/flowerhq/flower/policy"
)

// Renderer turns events into what the person sees. While a harness owns the
// screen only the title may change; the lines are printed when flower has the
// screen (between generations and at the end).
type Renderer interface {
	// Lines is what to print for ev when the screen is free ("" for
	// nothing), each line ending in "\n".
	Lines(ev event.Event) string
	// Title is the window title to show for ev while a harness runs (""
	// leaves the title alone).
	Title(ev event.Event) string
}

// PlainRenderer is a Renderer in plain English, for callers without one.
type PlainRenderer struct{}

// Lines implements Renderer.
func (PlainRenderer) Lines(ev event.Event) string {
	switch ev.Kind {
	case event.KindNotice:
		return "flower: " + ev.Text + "\n"
	case event.KindHandoff:
	default:
		return ""
	}
	win := policy.FormatRound(ev.Window)
	switch ev.Phase {
	case event.PhaseNear:
		return fmt.Sprintf("# context %s/%s · about %s to handoff\n", policy.FormatUsed(ev.Context), win, policy.FormatRound(max(ev.At-ev.Context, 0)))
	case event.PhaseWriting:
		return fmt.Sprintf("# context %s/%s —— writing the handoff\n", policy.FormatUsed(ev.Context), win)
	case event.PhaseDone:
		var b strings.Builder
		if ev.Path != "" {
			fmt.Fprintf(&b, "<- handoff written to %s\n", ev.Path)
		} else {
			b.WriteString("<- no workbench: the handoff goes to the new session through its prompt only\n")
		}
		fmt.Fprintf(&b, "<- new session takes over; its context starts over (was %s)\n", policy.FormatUsed(ev.Context))
		return b.String()
	}
	return ""
}

// Title implements Renderer: "flower · " and the first status line.
func (p PlainRenderer) Title(ev event.Event) string {
	return TitleFromLines(p.Lines(ev))
}

// TitleFromLines makes a title of the first of some status lines: "flower · "
// and the line without its "# " or "<- " marker; "" for no lines.
func TitleFromLines(lines string) string {
	first, _, _ := strings.Cut(lines, "\n")
	first = strings.TrimSpace(first)
	for _, marker := range []string{"# ", "<- ", "flower: "} {
		first = strings.TrimPrefix(first, marker)
	}
	if first == "" {
		return ""
	}
	return "flower · " + first
}
