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
	t0, t1 := timeSpan(s, now)
	ax := contextAxis(s)
	sc := scale{t0: t0, t1: t1, top: ax.top, c: &c}
	c.addPoints(s, lang, sc)
	c.addThresholds(ax, lang, sc)
	c.addCuts(s, lang, sc)
	c.addHandoffs(s, lang, sc)
	c.addWaits(s, lang, sc)
	c.addRetries(s, lang, sc)
	c.addTicks(sc)
	return c
}

// scale maps a time and a context size onto the plot.
type scale struct {
	t0, t1 time.Time
	top    int
	c      *chart
}

func (sc scale) x(t time.Time) float64 {
	f := float64(t.Sub(sc.t0)) / float64(sc.t1.Sub(sc.t0))
	return round1(sc.c.PlotX0 + f*(sc.c.PlotX1-sc.c.PlotX0))
}

func (sc scale) y(n int) float64 {
	f := float64(n) / float64(sc.top)
	return round1(sc.c.PlotY1 - f*(sc.c.PlotY1-sc.c.PlotY0))
}

// timeSpan is the time axis: from the step's start to its end (or now, or
// the last thing seen), at least a second long.
func timeSpan(s *Step, now time.Time) (t0, t1 time.Time) {
	st := s.Result
	t0, t1 = st.StartedAt, st.StartedAt
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
	return t0, t1
}

// axis is the context axis and the thresholds drawn on it.
type axis struct {
	at, warnAt, window int
	top                int // the axis's height
}

// contextAxis: up to the handoff threshold or the highest point, whichever
// is higher, with room above.
func contextAxis(s *Step) axis {
	st := s.Result
	ax := axis{window: st.Window}
	for _, r := range s.Responses {
		if r.At > 0 {
			ax.at, ax.warnAt = r.At, r.WarnAt
		}
		if r.Window > 0 {
			ax.window = r.Window
		}
	}
	if ax.at == 0 {
		for _, g := range st.Generations {
			if g.Handoff != nil && g.Handoff.At > 0 {
				ax.at = g.Handoff.At
			}
		}
	}
	top := ax.at
	for _, r := range s.Responses {
		top = max(top, r.Context)
	}
	if top <= 0 {
		top = max(ax.window, 1000)
	}
	top = top * 11 / 10
	if ax.window > 0 && ax.window <= top*12/10 {
		top = max(top, ax.window)
	}
	ax.top = 4 * niceStep((top+3)/4) // four even steps the axis can label roundly
	return ax
}

// addPoints adds a point per response and one line per generation (its
// working rounds; the writing turn's responses are points of their own
// class).
func (c *chart) addPoints(s *Step, lang Lang, sc scale) {
	byGen := map[int][]point{}
	for _, r := range s.Responses {
		cls := "pt"
		if r.Phase == "writing" {
			cls += " writing"
		}
		p := point{X: sc.x(r.Time), Y: sc.y(r.Context), Gen: r.Generation, Class: cls,
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
}

// addThresholds draws the near notice, the handoff threshold and the
// window, where they fit under the axis's top.
func (c *chart) addThresholds(ax axis, lang Lang, sc scale) {
	if ax.warnAt > 0 && ax.warnAt < ax.top {
		c.HLines = append(c.HLines, hline{Y: sc.y(ax.warnAt), Class: "near", Label: lang.label("near") + " " + policy.FormatRound(ax.warnAt)})
	}
	if ax.at > 0 && ax.at < ax.top {
		c.HLines = append(c.HLines, hline{Y: sc.y(ax.at), Class: "at", Label: lang.label("at") + " " + policy.FormatRound(ax.at)})
	}
	if ax.window > 0 && ax.window <= ax.top {
		c.HLines = append(c.HLines, hline{Y: sc.y(ax.window), Class: "window", Label: lang.label("window") + " " + policy.FormatRound(ax.window)})
	}
}

func (c *chart) addCuts(s *Step, lang Lang, sc scale) {
	for _, m := range s.Cuts {
		c.VLines = append(c.VLines, vline{X: sc.x(m.Time), LabelY: c.PlotY0 + 26, Class: "cut", Label: lang.label("cut"),
			Title: fmt.Sprintf("%s · %s %d · %s · %s", lang.label("cut"), lang.label("gen"), m.Generation, policy.FormatUsed(m.Context), m.Text)})
	}
}

// addHandoffs marks each generation's handoff, and the writing turn before
// it as a band.
func (c *chart) addHandoffs(s *Step, lang Lang, sc scale) {
	for _, g := range s.Result.Generations {
		if g.Handoff == nil || g.EndedAt == nil {
			continue
		}
		x := sc.x(*g.EndedAt)
		cls, label := "handoff", lang.label("handoff")
		title := fmt.Sprintf("%s %d → %d · %s", lang.label("handoff"), g.N, g.N+1, policy.FormatUsed(g.Handoff.Context))
		if g.Handoff.Degraded {
			cls, label = "handoff degraded", lang.label("degraded")
			title += " · " + lang.label("degraded") + ": " + g.Handoff.Why
		}
		c.VLines = append(c.VLines, vline{X: x, LabelY: c.PlotY0 + 12, Class: cls, Label: label, Title: title})
		if g.Handoff.WritingSeconds > 0 {
			start := g.EndedAt.Add(-time.Duration(g.Handoff.WritingSeconds * float64(time.Second)))
			x0 := max(sc.x(start), c.PlotX0)
			c.Bands = append(c.Bands, band{X: x0, W: round1(max(x-x0, 1)), Class: "writing-band",
				Title: fmt.Sprintf("%s · %s %d · %.1fs", lang.label("writing"), lang.label("gen"), g.N, g.Handoff.WritingSeconds)})
		}
	}
}

// addWaits marks each wait for an API retry or a limit, with its band.
func (c *chart) addWaits(s *Step, lang Lang, sc scale) {
	for _, w := range s.Waits {
		cls, label := "wait", lang.label("apiRetry")
		if w.Limit() {
			cls, label = "wait limit", lang.label("limit")
		}
		x0 := sc.x(w.Time)
		title := fmt.Sprintf("%s · %s %d · HTTP %d %s · %.1fs · #%d", label, lang.label("gen"), w.Generation, w.Status, w.Error, w.Delay.Seconds(), w.Attempt)
		c.Bands = append(c.Bands, band{X: x0, W: round1(max(sc.x(w.Time.Add(w.Delay))-x0, 1)), Class: "wait-band", Title: title})
		c.VLines = append(c.VLines, vline{X: x0, LabelY: c.PlotY0 + 54, Class: cls, Label: label, Title: title})
	}
}

func (c *chart) addRetries(s *Step, lang Lang, sc scale) {
	for _, m := range s.Retries {
		c.VLines = append(c.VLines, vline{X: sc.x(m.Time), LabelY: c.PlotY0 + 40, Class: "retry", Label: lang.label("retry"),
			Title: lang.label("retry") + " · " + m.Text})
	}
}

// addTicks labels both axes in four even steps.
func (c *chart) addTicks(sc scale) {
	layout := "15:04:05"
	if sc.t1.Sub(sc.t0) < 20*time.Second {
		layout = "15:04:05.0"
	}
	for i := 0; i <= 4; i++ {
		n := sc.top * i / 4
		c.YTicks = append(c.YTicks, tick{Pos: sc.y(n), Label: policy.FormatRound(n)})
		t := sc.t0.Add(time.Duration(float64(sc.t1.Sub(sc.t0)) * float64(i) / 4))
		anchor := "middle"
		switch i {
		case 0:
			anchor = "start"
		case 4:
			anchor = "end"
		}
		c.XTicks = append(c.XTicks, tick{Pos: sc.x(t), Label: t.Format(layout), Anchor: anchor})
	}
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
