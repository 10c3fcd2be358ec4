// Package console owns what a person watching a run sees: the status lines
// of a handoff (SPEC R40, with the seed's Chinese labels or English ones),
// the assistant's text and tool calls, and a closing summary. It renders
// supervisor events; it decides nothing.
package console

import (
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/flowerhq/flower/policy"
	"github.com/flowerhq/flower/supervisor"
)

// Lang selects the labels of the status lines.
type Lang string

// The languages. Chinese is the seed's and the default.
const (
	LangZh Lang = "zh"
	LangEn Lang = "en"
)

// ParseLang accepts "zh" or "en".
func ParseLang(s string) (Lang, error) {
	switch Lang(s) {
	case LangZh, LangEn:
		return Lang(s), nil
	}
	return "", fmt.Errorf("unknown language %q (want zh or en)", s)
}

type labels struct {
	near     string // context, window, distance
	writing  string // context, window
	written  string // path
	noFile   string
	takeover string // context
	sections map[string]string
	width    int
}

var zh = labels{
	near:     "# 上下文 %s/%s · 还有约 %s 到换代",
	writing:  "# 上下文 %s/%s —— 写交接准备换代",
	written:  "<- 交接写在 %s",
	noFile:   "<- 没有工作台,交接只随提示词交给新会话",
	takeover: "<- 新会话接手,上下文从 %s 重新开始",
	sections: map[string]string{"doing": "现在在做", "decided": "已定的事", "deadends": "走不通的", "next": "下一步"},
	width:    8, // display columns: the seed pads 下一步 to line up with the four-character labels
}

var en = labels{
	near:     "# context %s/%s · about %s to handoff",
	writing:  "# context %s/%s —— writing the handoff",
	written:  "<- handoff written to %s",
	noFile:   "<- no workbench: the handoff goes to the new session through its prompt only",
	takeover: "<- new session takes over; context restarts from %s",
	sections: map[string]string{"doing": "doing", "decided": "decided", "deadends": "dead ends", "next": "next"},
	width:    10,
}

// Status renders handoff events as the R40 lines.
type Status struct {
	mu  sync.Mutex
	w   io.Writer
	lab labels
}

// NewStatus writes status lines to w (stderr, usually).
func NewStatus(w io.Writer, lang Lang) *Status {
	lab := zh
	if lang == LangEn {
		lab = en
	}
	return &Status{w: w, lab: lab}
}

// Handle renders one event; events other than handoffs and notices are
// ignored.
func (s *Status) Handle(ev supervisor.Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch ev.Kind {
	case supervisor.KindNotice:
		fmt.Fprintf(s.w, "flower: %s\n", ev.Text)
	case supervisor.KindRetry:
		fmt.Fprintf(s.w, "flower: attempt failed, retrying: %s\n", ev.Text)
	case supervisor.KindHandoff:
		s.handoff(ev)
	}
}

func (s *Status) handoff(ev supervisor.Event) {
	win := policy.FormatRound(ev.Window)
	switch ev.Phase {
	case supervisor.PhaseNear:
		fmt.Fprintf(s.w, s.lab.near+"\n", policy.FormatUsed(ev.Context), win, policy.FormatRound(max(ev.At-ev.Context, 0)))
	case supervisor.PhaseWriting:
		fmt.Fprintf(s.w, s.lab.writing+"\n", policy.FormatUsed(ev.Context), win)
	case supervisor.PhaseDone:
		if ev.Reason == "overflow" {
			// No writing turn ran, so no writing line was shown.
			fmt.Fprintf(s.w, s.lab.writing+"\n", policy.FormatUsed(ev.Context), win)
		}
		if ev.Handoff != nil {
			for _, key := range []string{"doing", "decided", "deadends", "next"} {
				fmt.Fprintf(s.w, "  - %s%s\n", pad(s.lab.sections[key], s.lab.width), firstLine(ev.Handoff.Get(key)))
			}
		}
		if ev.Path != "" {
			fmt.Fprintf(s.w, s.lab.written+"\n", ev.Path)
		} else {
			fmt.Fprintln(s.w, s.lab.noFile)
		}
		fmt.Fprintf(s.w, s.lab.takeover+"\n", policy.FormatUsed(ev.Context))
	}
}

// pad pads a label to width display columns (CJK characters take two) and
// adds two spaces, as the seed's example lines up its labels.
func pad(label string, width int) string {
	cols := 0
	for _, r := range label {
		if r >= 0x1100 {
			cols += 2
		} else {
			cols++
		}
	}
	return label + strings.Repeat(" ", max(width-cols, 0)+2)
}

// firstLine is the section's first non-empty line, or (空) when empty.
func firstLine(s string) string {
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(strings.TrimLeft(strings.TrimSpace(l), "-*•")); l != "" {
			return l
		}
	}
	return "(空)"
}
