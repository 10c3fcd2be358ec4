// Package console owns what a person or a program watching a run sees: the
// status lines of a handoff (DESIGN.md «Status lines», with the original
// design's Chinese labels or English ones) and a gauge of the running step
// on stderr (Live), the assistant's text and tool calls (Output) or a JSON
// stream for programs (Stream) on stdout, and a closing summary. It renders
// supervisor events; it decides nothing.
package console

import (
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/flowerhq/flower/event"

	"github.com/flowerhq/flower/policy"
)

// Lang selects the labels of the status lines.
type Lang string

// The languages. Chinese is the original design's; a person's locale picks
// one (LocaleLang).
const (
	LangZh Lang = "zh"
	LangEn Lang = "en"
)

// LocaleLang is the language of the locale in env, as POSIX picks the
// messages' locale: LC_ALL, else LC_MESSAGES, else LANG, the first one set
// and not empty. A zh or zh_* locale (zh_CN.UTF-8, zh_TW) is LangZh; any
// other, or none, is LangEn.
func LocaleLang(env []string) Lang {
	for _, key := range []string{"LC_ALL", "LC_MESSAGES", "LANG"} {
		v := lookup(env, key)
		if v == "" {
			continue
		}
		if v == "zh" || strings.HasPrefix(v, "zh_") || strings.HasPrefix(v, "zh.") || strings.HasPrefix(v, "zh@") {
			return LangZh
		}
		return LangEn
	}
	return LangEn
}

// lookup is env's last value of key, as the process would see it.
func lookup(env []string, key string) string {
	for i := len(env) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(env[i], key+"="); ok {
			return v
		}
	}
	return ""
}

// meterNear is the context meter of DESIGN.md «Status lines», without the
// status line's "# ": the context used of the window and the way to the
// handoff at at ("上下文 130.0K/200K · 还有约 20K 到换代"); meterWriting, from
// at on, says that the handoff is being written ("上下文 152.0K/200K ——
// 写交接准备换代").
func (lab labels) meterNear(context, window, at int) string {
	return fmt.Sprintf(lab.near, policy.FormatUsed(context), policy.FormatRound(window), policy.FormatRound(max(at-context, 0)))
}

func (lab labels) meterWriting(context, window int) string {
	return fmt.Sprintf(lab.writing, policy.FormatUsed(context), policy.FormatRound(window))
}

// ParseLang accepts "zh" or "en".
func ParseLang(s string) (Lang, error) {
	switch Lang(s) {
	case LangZh, LangEn:
		return Lang(s), nil
	}
	return "", fmt.Errorf("unknown language %q (want zh or en)", s)
}

type labels struct {
	near     string // the meter (Meter): context, window, distance
	writing  string // the meter while the handoff is written: context, window
	written  string // path
	noFile   string
	takeover string // context
	sections map[string]string
	width    int

	// The gauge (gauge.go).
	gen      string // generation
	ctx      string // context used, window
	toGo     string // distance to the handoff
	starting string
	inWrite  string // the writing turn runs
	handing  string // the handoff is done, the successor not yet started
	waiting  string // a limit's wait: until when, how long to go
	retrying string // the harness asks the API again: how often so far
	refused  string // the API refused the credentials
	done     string // the latest turn ended on its own (the status line in the harness's screen only)

	// The harness's status line (screenline.go).
	about     string // distance to the handoff, in the near notice's words
	turnDone  string // the latest turn ended on its own, the person's to go on
	budget    string // the step's budget
	deadline  string // the step's deadline
	handedOff string // generation, the handoff file, what it was doing
	noState   string
}

var zh = labels{
	near:     "上下文 %s/%s · 还有约 %s 到换代",
	writing:  "上下文 %s/%s —— 写交接准备换代",
	written:  "<- 交接写在 %s",
	noFile:   "<- 没有工作台,交接只随提示词交给新会话",
	takeover: "<- 新会话接手,上下文从 %s 重新开始",
	sections: map[string]string{"doing": "现在在做", "decided": "已定的事", "deadends": "走不通的", "next": "下一步"},
	width:    8, // display columns: the design's example pads 下一步 to line up with the four-character labels

	gen:      "第 %d 代",
	ctx:      "上下文 %s/%s",
	toGo:     "距换代 %s",
	starting: "启动中",
	inWrite:  "写交接中",
	handing:  "换代中",
	waiting:  "限额,等到 %s(还有 %s)",
	retrying: "API 重试第 %d 次",
	refused:  "API 拒绝了凭据",

	about:     "还有约 %s 到换代",
	turnDone:  "本轮完成",
	budget:    "预算 $%.2f",
	deadline:  "截止 %s",
	handedOff: "<- 第 %d 代已交接,交接写在 %s · 在做:%s",
	noState:   "flower · 没有运行状态",
}

var en = labels{
	near:     "context %s/%s · about %s to handoff",
	writing:  "context %s/%s —— writing the handoff",
	written:  "<- handoff written to %s",
	noFile:   "<- no workbench: the handoff goes to the new session through its prompt only",
	takeover: "<- new session takes over; its context starts over (was %s)",
	sections: map[string]string{"doing": "doing", "decided": "decided", "deadends": "dead ends", "next": "next"},
	width:    10,

	gen:      "gen %d",
	ctx:      "context %s/%s",
	toGo:     "%s to handoff",
	starting: "starting",
	inWrite:  "writing the handoff",
	handing:  "handing over",
	waiting:  "limit: waiting until %s (%s left)",
	retrying: "API retry %d",
	refused:  "the API refused the credentials",

	about:     "about %s to handoff",
	turnDone:  "done",
	budget:    "budget $%.2f",
	deadline:  "deadline %s",
	handedOff: "<- gen %d handed off, to %s · doing: %s",
	noState:   "flower · no live state",
}

// labelsOf picks the labels of a language; zh is the default.
func labelsOf(lang Lang) labels {
	if lang == LangEn {
		return en
	}
	return zh
}

// Status renders handoff events as the status lines of DESIGN.md
// «Status lines».
type Status struct {
	mu   sync.Mutex
	w    io.Writer
	lab  labels
	home string
}

// NewStatus writes status lines to w (stderr, usually).
func NewStatus(w io.Writer, lang Lang) *Status {
	return &Status{w: w, lab: labelsOf(lang)}
}

// ShortenHome makes paths under home show as ~/…, as the design's example
// does; "" turns it off.
func (s *Status) ShortenHome(home string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.home = strings.TrimRight(home, "/")
}

// Handle renders one event; events other than handoffs and notices are
// ignored.
func (s *Status) Handle(ev event.Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	io.WriteString(s.w, s.lines(ev))
}

// lines is what Handle writes for ev: whole lines, or "". What the event
// carries (a notice, a handoff's sections, a path) is escaped: a workspace
// and a model wrote it.
func (s *Status) lines(ev event.Event) string {
	var b strings.Builder
	switch ev.Kind {
	case event.KindNotice, event.KindAPI:
		fmt.Fprintf(&b, "flower: %s\n", ev.Text)
	case event.KindRetry:
		fmt.Fprintf(&b, "flower: attempt failed, retrying: %s\n", ev.Text)
	case event.KindHandoff:
		s.handoff(&b, ev)
	case event.KindLimitWait, event.KindBound:
		// unattended: a limit's wait begun or ended, a budget or deadline reached
		if ev.Phase != event.PhaseWaiting && ev.Text != "" {
			fmt.Fprintf(&b, "flower: %s\n", ev.Text)
		}
	}
	return Escape(b.String())
}

func (s *Status) handoff(w io.Writer, ev event.Event) {
	switch ev.Phase {
	case event.PhaseNear:
		fmt.Fprintf(w, "# %s\n", s.lab.meterNear(ev.Context, ev.Window, ev.At))
	case event.PhaseWriting:
		fmt.Fprintf(w, "# %s\n", s.lab.meterWriting(ev.Context, ev.Window))
	case event.PhaseDone:
		if ev.Reason == "overflow" {
			// No writing turn ran, so no writing line was shown.
			fmt.Fprintf(w, "# %s\n", s.lab.meterWriting(ev.Context, ev.Window))
		}
		if ev.Handoff != nil {
			for _, key := range []string{"doing", "decided", "deadends", "next"} {
				fmt.Fprintf(w, "  - %s%s\n", pad(s.lab.sections[key], s.lab.width), firstLine(ev.Handoff.Get(key)))
			}
		}
		if ev.Path != "" {
			fmt.Fprintf(w, s.lab.written+"\n", s.short(ev.Path))
		} else {
			fmt.Fprintln(w, s.lab.noFile)
		}
		fmt.Fprintf(w, s.lab.takeover+"\n", policy.FormatUsed(ev.Context))
	}
}

// short writes a path under the home directory as ~/….
func (s *Status) short(path string) string {
	if s.home != "" {
		if rest, ok := strings.CutPrefix(path, s.home+"/"); ok {
			return "~/" + rest
		}
	}
	return path
}

// pad pads a label to width display columns (CJK characters take two) and
// adds two spaces, as the design's example lines up its labels.
func pad(label string, width int) string {
	return label + strings.Repeat(" ", max(width-columns(label), 0)+2)
}

// firstLine is the section's first non-empty line without its list marker,
// or (空) when empty. Only a marker followed by a space is one: the example's
// "-D_ANSI_SOURCE …" keeps its dash.
func firstLine(s string) string {
	for _, l := range strings.Split(s, "\n") {
		l = strings.TrimSpace(l)
		for _, marker := range []string{"- ", "* ", "+ ", "• "} {
			if rest, ok := strings.CutPrefix(l, marker); ok {
				l = strings.TrimSpace(rest)
				break
			}
		}
		switch l {
		case "", "-", "*", "+", "•":
			continue
		}
		return l
	}
	return "(空)"
}
