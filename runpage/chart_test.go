package runpage

import (
	"fmt"
	"testing"
	"time"

	"github.com/flowerhq/flower/manifest"
)

// The chart of a step with every kind of mark, its coordinates worked out
// by hand: 100 s over 880 units from x = 64 (8.8 a second), context up to
// 200k over 264 units from y = 280.
func TestChartLayout(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	g1End, end := at(50), at(100)
	s := &Step{
		Result: &manifest.StepResult{StartedAt: t0, EndedAt: &end, Window: 200000, Generations: []manifest.Generation{
			{N: 1, StartedAt: t0, EndedAt: &g1End, Handoff: &manifest.HandoffRecord{Context: 156000, Degraded: true, Why: "torn", WritingSeconds: 10}},
			{N: 2, StartedAt: g1End},
		}},
		Responses: []Response{
			{Time: at(10), Generation: 1, Phase: "working", Context: 100000, Window: 200000, At: 150000, WarnAt: 130000},
			{Time: at(30), Generation: 1, Phase: "working", Context: 155000},
			{Time: at(40), Generation: 1, Phase: "writing", Context: 156000},
			{Time: at(60), Generation: 2, Phase: "working", Context: 20000},
		},
		Cuts:    []Mark{{Time: at(35), Generation: 1, Context: 155000, Text: "threshold"}},
		Retries: []Mark{{Time: at(80), Generation: 2, Text: "again"}},
		Waits:   []Wait{{Time: at(70), Generation: 2, Delay: 5 * time.Second, Status: 429, Error: "rate_limit", Attempt: 1}},
	}
	c := buildChart(s, LangEn, time.Time{})
	check := func(what string, got, want any) {
		t.Helper()
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s:\n got %v\nwant %v", what, got, want)
		}
	}
	check("lines", c.Lines, []line{{1, "152.0,148.0 328.0,75.4"}, {2, "592.0,253.6"}})
	check("points", len(c.Points), 4)
	check("writing point", c.Points[2].Class, "pt writing")
	check("generations", c.Generation, 2)
	check("thresholds", c.HLines, []hline{{108.4, "near", "near notice 130K"}, {82, "at", "handoff 150K"}, {16, "window", "window 200K"}})
	var xs []string
	for _, v := range c.VLines {
		xs = append(xs, fmt.Sprintf("%s@%.1f/%.0f", v.Class, v.X, v.LabelY))
	}
	check("marks", xs, []string{"cut@372.0/42", "handoff degraded@504.0/28", "wait limit@680.0/70", "retry@768.0/56"})
	var bs []string
	for _, b := range c.Bands {
		bs = append(bs, fmt.Sprintf("%s@%.1f+%.1f", b.Class, b.X, b.W))
	}
	check("bands", bs, []string{"writing-band@416.0+88.0", "wait-band@680.0+44.0"})
	check("y ticks", c.YTicks[2], tick{148, "100K", ""})
	check("x ticks", []tick{c.XTicks[0], c.XTicks[2], c.XTicks[4]},
		[]tick{{64, "08:00:00", "start"}, {504, "08:00:50", "middle"}, {944, "08:01:40", "end"}})
	if c.Empty {
		t.Error("a chart with points is empty")
	}
}
