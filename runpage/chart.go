package runpage

import (
	"fmt"
	"sort"
	"time"

	"github.com/flowerhq/flower/policy"
)

// The chart's geometry, in SVG user units.
const (
	chartW, chartH = 960.0, 320.0
	padL, padR     = 64.0, 16.0
	padT, padB     = 16.0, 40.0
)

// chart is one step's context chart, laid out for the template.
type chart struct {
	W, H       float64
	Points     []point
	Lines      []line // one polyline per generation
	HLines     []hline
	VLines     []vline
	Bands      []band
	XTicks     []tick
	YTicks     []tick
	PlotX0     float64
	PlotX1     float64
	PlotY0     float64
	PlotY1     float64
	Empty      bool
	Generation int // how many generations the chart spans
}

type point struct {
	X, Y  float64
	Gen   int
	Class string
	Title string
}

type line struct {
	Gen    int
	Points string
}

type hline struct {
	Y     float64
	Class string
	Label string
}

type vline struct {
	X      float64
	LabelY float64 // cut, handoff and retry labels sit at different heights, so close marks stay legible
	Class  string
	Label  string
	Title  string
}

type band struct {
	X, W  float64
	Class string
	Title string
}

type tick struct {
	Pos    float64
	Label  string
	Anchor string
}

// buildChart lays out s's responses and marks over time.
func buildChart(s *Step, lang Lang, now time.Time) chart {
	c := chart{W: chartW, H: chartH, PlotX0: padL, PlotX1: chartW - padR, PlotY0: padT, PlotY1: chartH - padB}
	st := s.Result
	// The time axis: from the step's start to its end (or now, or the
	// last thing seen).
	t0, t1 := st.StartedAt, st.StartedAt
	see := func(t time.Time) {
		if t.IsZero() {
			return
		}
		if t0.IsZero() || t.Before(t0) {
			t0 = t
		}
		if t.After(t1) {
			t1 = t
		}
	}
	for _, r := range s.Responses {
		see(r.Time)
	}
	for _, m := range append(append([]Mark{}, s.Cuts...), s.Retries...) {
		see(m.Time)
	}
	for _, w := range s.Waits {
		see(w.Time)
		see(w.Time.Add(w.Delay))
	}
	for _, g := range st.Generations {
		see(g.StartedAt)
		if g.EndedAt != nil {
			see(*g.EndedAt)
		}
	}
	if st.EndedAt != nil {
		see(*st.EndedAt)
	} else if s.Live && !now.IsZero() {
		see(now)
	}
	if !t1.After(t0) {
		t1 = t0.Add(time.Second)
	}
	// The context axis: up to the handoff threshold or the highest point,
	// whichever is higher, with room above.
	at, warnAt, window := 0, 0, st.Window
	for _, r := range s.Responses {
		if r.At > 0 {
			at, warnAt = r.At, r.WarnAt
		}
		if r.Window > 0 {
			window = r.Window
		}
	}
	if at == 0 {
		for _, g := range st.Generations {
			if g.Handoff != nil && g.Handoff.At > 0 {
				at = g.Handoff.At
			}
		}
	}
	top := at
	for _, r := range s.Responses {
		top = max(top, r.Context)
	}
	if top <= 0 {
		top = max(window, 1000)
	}
	top = top * 11 / 10
	if window > 0 && window <= top*12/10 {
		top = max(top, window)
	}
	top = 4 * niceStep((top+3)/4) // four even steps the axis can label roundly
	xOf := func(t time.Time) float64 {
		f := float64(t.Sub(t0)) / float64(t1.Sub(t0))
		return round1(c.PlotX0 + f*(c.PlotX1-c.PlotX0))
	}
	yOf := func(n int) float64 {
		f := float64(n) / float64(top)
		return round1(c.PlotY1 - f*(c.PlotY1-c.PlotY0))
	}
	// Points and one line per generation (its working rounds; the
	// writing turn's responses are points of their own class).
	byGen := map[int][]point{}
	for _, r := range s.Responses {
		cls := "pt"
		if r.Phase == "writing" {
			cls += " writing"
		}
		p := point{X: xOf(r.Time), Y: yOf(r.Context), Gen: r.Generation, Class: cls,
			Title: fmt.Sprintf("%s %d · %s · %s", lang.label("gen"), r.Generation, policy.FormatUsed(r.Context), r.Time.Format("15:04:05"))}
		if r.Phase == "writing" {
			p.Title += " · " + lang.label("writing")
		}
		c.Points = append(c.Points, p)
		if r.Phase != "writing" {
			byGen[r.Generation] = append(byGen[r.Generation], p)
		}
		c.Generation = max(c.Generation, r.Generation)
	}
	gens := make([]int, 0, len(byGen))
	for g := range byGen {
		gens = append(gens, g)
	}
	sort.Ints(gens)
	for _, g := range gens {
		pts := ""
		for i, p := range byGen[g] {
			if i > 0 {
				pts += " "
			}
			pts += fmt.Sprintf("%.1f,%.1f", p.X, p.Y)
		}
		c.Lines = append(c.Lines, line{Gen: g, Points: pts})
	}
	c.Empty = len(c.Points) == 0
	if warnAt > 0 && warnAt < top {
		c.HLines = append(c.HLines, hline{Y: yOf(warnAt), Class: "near", Label: lang.label("near") + " " + policy.FormatRound(warnAt)})
	}
	if at > 0 && at < top {
		c.HLines = append(c.HLines, hline{Y: yOf(at), Class: "at", Label: lang.label("at") + " " + policy.FormatRound(at)})
	}
	if window > 0 && window <= top {
		c.HLines = append(c.HLines, hline{Y: yOf(window), Class: "window", Label: lang.label("window") + " " + policy.FormatRound(window)})
	}
	// Cuts, the writing turns after them, handoffs, retries.
	for _, m := range s.Cuts {
		c.VLines = append(c.VLines, vline{X: xOf(m.Time), LabelY: c.PlotY0 + 26, Class: "cut", Label: lang.label("cut"),
			Title: fmt.Sprintf("%s · %s %d · %s · %s", lang.label("cut"), lang.label("gen"), m.Generation, policy.FormatUsed(m.Context), m.Text)})
	}
	for _, g := range st.Generations {
		if g.Handoff == nil || g.EndedAt == nil {
			continue
		}
		x := xOf(*g.EndedAt)
		cls, label := "handoff", lang.label("handoff")
		title := fmt.Sprintf("%s %d → %d · %s", lang.label("handoff"), g.N, g.N+1, policy.FormatUsed(g.Handoff.Context))
		if g.Handoff.Degraded {
			cls, label = "handoff degraded", lang.label("degraded")
			title += " · " + lang.label("degraded") + ": " + g.Handoff.Why
		}
		c.VLines = append(c.VLines, vline{X: x, LabelY: c.PlotY0 + 12, Class: cls, Label: label, Title: title})
		if g.Handoff.WritingSeconds > 0 {
			start := g.EndedAt.Add(-time.Duration(g.Handoff.WritingSeconds * float64(time.Second)))
			x0 := max(xOf(start), c.PlotX0)
			c.Bands = append(c.Bands, band{X: x0, W: round1(max(x-x0, 1)), Class: "writing-band",
				Title: fmt.Sprintf("%s · %s %d · %.1fs", lang.label("writing"), lang.label("gen"), g.N, g.Handoff.WritingSeconds)})
		}
	}
	for _, w := range s.Waits {
		cls, label := "wait", lang.label("apiRetry")
		if w.Limit() {
			cls, label = "wait limit", lang.label("limit")
		}
		x0 := xOf(w.Time)
		title := fmt.Sprintf("%s · %s %d · HTTP %d %s · %.1fs · #%d", label, lang.label("gen"), w.Generation, w.Status, w.Error, w.Delay.Seconds(), w.Attempt)
		c.Bands = append(c.Bands, band{X: x0, W: round1(max(xOf(w.Time.Add(w.Delay))-x0, 1)), Class: "wait-band", Title: title})
		c.VLines = append(c.VLines, vline{X: x0, LabelY: c.PlotY0 + 54, Class: cls, Label: label, Title: title})
	}
	for _, m := range s.Retries {
		c.VLines = append(c.VLines, vline{X: xOf(m.Time), LabelY: c.PlotY0 + 40, Class: "retry", Label: lang.label("retry"),
			Title: lang.label("retry") + " · " + m.Text})
	}
	layout := "15:04:05"
	if t1.Sub(t0) < 20*time.Second {
		layout = "15:04:05.0"
	}
	for i := 0; i <= 4; i++ {
		n := top * i / 4
		c.YTicks = append(c.YTicks, tick{Pos: yOf(n), Label: policy.FormatRound(n)})
		t := t0.Add(time.Duration(float64(t1.Sub(t0)) * float64(i) / 4))
		anchor := "middle"
		switch i {
		case 0:
			anchor = "start"
		case 4:
			anchor = "end"
		}
		c.XTicks = append(c.XTicks, tick{Pos: xOf(t), Label: t.Format(layout), Anchor: anchor})
	}
	return c
}

func round1(f float64) float64 { return float64(int64(f*10+0.5)) / 10 }

// niceStep is the smallest 1, 2, 2.5 or 5 × 10^k that is at least n.
func niceStep(n int) int {
	if n <= 1 {
		return 1
	}
	for p := 1; ; p *= 10 {
		for _, m := range []int{10, 20, 25, 50} {
			if v := m * p / 10; v >= n && v > 0 {
				return v
			}
		}
	}
}
